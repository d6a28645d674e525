"""DDP programs as public scripts write them (issue 21), and a group of one process without
mpi4py (NOTE [ A world of one ] in ember/distributed/_solo.py).

The one-process tests run in this process with the engine switched off (as in an
installation without mpi4py) and compare with PyTorch's gloo where it is installed; the
two-process test runs a no_sync/join program through ``python -m ember.compat.run -m
torch.distributed.run`` and compares each rank's lines with what torchrun printed.
"""

import logging
import os
import re
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember.distributed import _engine
from tests.distributed.conftest import free_port, needs_mpi


@pytest.fixture
def no_engine(monkeypatch):
    """ember.distributed as installed without mpi4py; no group is left behind."""
    monkeypatch.setattr(_engine, "available", lambda: False)
    yield
    if dist.is_initialized():
        dist.destroy_process_group()


@pytest.fixture
def torch_world():
    """PyTorch's gloo group of one process (skips without torch)."""
    torch = pytest.importorskip("torch")
    tdist = torch.distributed
    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                             world_size=1)
    yield torch
    tdist.destroy_process_group()


def _init_one():
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)


# -- without mpi4py ---------------------------------------------------------------------------

def test_one_process_is_available_and_runs_every_collective(no_engine):
    assert dist.is_available() and dist.is_gloo_available()
    assert not dist.is_mpi_available() and dist.is_backend_available("gloo")
    _init_one()
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "gloo")
    t = ember.arange(4.0)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    work = dist.all_reduce(t, async_op=True)
    assert work.wait() and work.is_completed()
    out = ember.zeros(4)
    dist.all_gather_single(out, t)
    gathered = [ember.zeros(4)]
    dist.all_gather(gathered, t)
    scattered = ember.zeros(4)
    dist.scatter(scattered, [t], src=0)
    a2a = ember.zeros(4)
    dist.all_to_all_single(a2a, t)
    rs = ember.zeros(4)
    dist.reduce_scatter_single(rs, t)
    for r in (t, out, gathered[0], scattered, a2a, rs):
        np.testing.assert_array_equal(r.numpy(), [0.0, 1.0, 2.0, 3.0])
    objs = [None]
    dist.all_gather_object(objs, {"a": 1})
    lst = ["x", 3]
    dist.broadcast_object_list(lst)
    assert objs == [{"a": 1}] and lst == ["x", 3]
    dist.barrier()
    dist.monitored_barrier()
    sub = dist.new_group([0])
    assert dist.get_world_size(sub) == 1
    with pytest.raises(ValueError, match="should not be the same as the rank"):
        dist.send(t, dst=0)


def test_one_process_ddp_trains_as_the_plain_module(no_engine):
    _init_one()
    plain = ember.nn.Linear(3, 2)
    wrapped = ember.nn.Linear(3, 2)
    wrapped.load_state_dict(plain.state_dict())
    ddp = ember.nn.parallel.DistributedDataParallel(wrapped)
    opts = [ember.optim.SGD(m.parameters(), lr=0.1) for m in (plain, ddp)]
    x = ember.arange(12.0).reshape(4, 3) / 10
    for _ in range(3):
        for m, opt in zip((plain, ddp), opts):
            m(x).pow(2).mean().backward()
            opt.step()
            opt.zero_grad()
    with ddp.no_sync():
        ddp(x).sum().backward()
    with ddp.join():
        ddp(x).sum().backward()
    np.testing.assert_allclose(wrapped.weight.detach().numpy(), plain.weight.detach().numpy(),
                               rtol=1e-6)
    assert list(ddp.state_dict()) == ["module.weight", "module.bias"]


def test_env_rendezvous_of_one_process_needs_no_master(no_engine, monkeypatch):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    monkeypatch.delenv("MASTER_PORT", raising=False)
    dist.init_process_group("gloo")
    assert dist.get_world_size() == 1


def test_more_processes_are_refused_before_any_rendezvous(no_engine, monkeypatch):
    port = free_port()
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(port))
    for kwargs in ({}, {"init_method": f"tcp://127.0.0.1:{port}", "rank": 0, "world_size": 2},
                   {"init_method": f"file://{os.devnull}x", "rank": 0, "world_size": 2},
                   {"store": dist.HashStore(), "rank": 0, "world_size": 2}):
        with pytest.raises(RuntimeError, match=r"group of 2 processes .*mpi4py.*"
                                               r"pip install 'ember\[distributed\]'"):
            dist.init_process_group("gloo", **kwargs)
        assert not dist.is_initialized()
    import socket

    with socket.socket() as s:  # no store server was left listening on the port
        s.bind(("127.0.0.1", port))


def test_mpiexec_world_without_mpi4py_is_refused(no_engine, monkeypatch):
    for k in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("PMI_RANK", "1")
    monkeypatch.setenv("PMI_SIZE", "2")
    with pytest.raises(RuntimeError, match="group of 2 processes"):
        dist.init_process_group("gloo")
    assert not dist.is_initialized()


def test_mpi_backend_name_needs_mpi4py(no_engine):
    with pytest.raises(RuntimeError, match="doesn't have MPI built in"):
        dist.init_process_group("mpi", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                                world_size=1)
    assert not dist.is_initialized()


# -- PyTorch 2.13's names and gloo's checks ---------------------------------------------------

def _messages(fn):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fn()
    return [(w.category, str(w.message)) for w in seen]


def test_tensor_collectives_warn_as_deprecated_like_torch(no_engine, torch_world):
    torch = torch_world
    _init_one()
    for old, new in (("all_gather_into_tensor", "all_gather_single"),
                     ("reduce_scatter_tensor", "reduce_scatter_single"),
                     ("_all_gather_base", "all_gather_single"),
                     ("_reduce_scatter_base", "reduce_scatter_single")):
        mine = _messages(lambda: getattr(dist, old)(ember.zeros(2), ember.ones(2)))
        theirs = _messages(lambda: getattr(torch.distributed, old)(torch.zeros(2),
                                                                   torch.ones(2)))
        assert mine == theirs and mine[0][0] is FutureWarning, old
        assert _messages(lambda: getattr(dist, new)(ember.zeros(2), ember.ones(2))) == []


@pytest.mark.parametrize("small,big", [((4,), (4,)), ((4,), (1, 4)), ((2, 2), (4,)),
                                       ((1, 4), (4,)), ((2, 3), (3, 2)), ((4,), (5,)),
                                       ((2, 2), (2, 2))])
def test_single_collectives_check_shapes_as_gloo(no_engine, torch_world, small, big):
    torch = torch_world
    _init_one()

    def outcome(mod, lib, name, out, inp):
        try:
            getattr(mod, name)(lib.zeros(out), lib.ones(inp))
            return "ok"
        except RuntimeError:
            return "RuntimeError"

    for name, out, inp in (("reduce_scatter_single", small, big),
                           ("all_gather_single", big, small)):
        assert outcome(dist, ember, name, out, inp) == \
            outcome(torch.distributed, torch, name, out, inp), (name, out, inp)


def test_gloo_size_message_prints_shapes_as_torch(no_engine, torch_world):
    torch = torch_world
    _init_one()
    msgs = []
    for mod, lib in ((dist, ember), (torch.distributed, torch)):
        with pytest.raises(RuntimeError) as info:
            mod.all_gather_single(lib.zeros(1, 4), lib.ones(4))
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


# -- the launcher -----------------------------------------------------------------------------

def test_launcher_warns_about_threads_as_torchrun(monkeypatch, caplog):
    from ember.distributed import run

    def threads_warnings(nproc):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="ember.distributed.run"):
            run.config_from_args(run.parse_args([f"--nproc-per-node={nproc}", "train.py"]))
        return [r for r in caplog.records if "OMP_NUM_THREADS" in r.getMessage()]

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert not threads_warnings(1)
    warned = threads_warnings(2)
    assert len(warned) == 1
    assert "Setting OMP_NUM_THREADS environment variable for each process to be 1" in \
        warned[0].getMessage()
    assert os.environ["OMP_NUM_THREADS"] == "1"   # (monkeypatch restores it)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert not threads_warnings(2)


def test_launcher_under_compat_runs_workers_under_compat(monkeypatch):
    from ember import compat
    from ember.distributed import run

    from ember.distributed._run_agent import _worker_command

    def command(argv):
        _, cmd, cmd_args = run.config_from_args(run.parse_args(argv))
        return _worker_command(cmd, cmd_args)[1]

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    # whichever way the launcher started (NOTE [ Workers of a PyTorch script ])
    monkeypatch.setattr(compat, "is_installed", lambda: False)
    argv = ["--nproc-per-node", "2", "train.py", "--lr", "1"]
    assert command(argv) == ["-u", "-m", "ember.compat.run", "train.py", "--lr", "1"]
    monkeypatch.setattr(compat, "is_installed", lambda: True)
    assert command(argv) == ["-u", "-m", "ember.compat.run", "train.py", "--lr", "1"]
    assert command(["--nproc-per-node", "2", "-m", "pkg.train"]) == \
        ["-u", "-m", "ember.compat.run", "-m", "pkg.train"]


def test_compat_runs_torchrun_module():
    proc = subprocess.run([sys.executable, "-m", "ember.compat.run", "-m",
                           "torch.distributed.run", "--no-python", "true"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


# -- a public-style program on two processes --------------------------------------------------

NO_SYNC_JOIN = '''
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
model = nn.Sequential(nn.Linear(6, 4), nn.Tanh(), nn.Linear(4, 1))
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) + 0.1 * i)
ddp = DDP(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
inputs = [torch.full((3, 6), 0.1 * (b + 1) + rank) for b in range(7 if rank == 0 else 4)]
with ddp.join():
    for b, x in enumerate(inputs):
        if (b + 1) % 2:
            with ddp.no_sync():
                ddp(x).pow(2).mean().backward()
            print(f"rank {rank} batch {b} no_sync grad {model[2].bias.grad}")
        else:
            ddp(x).pow(2).mean().backward()
            print(f"rank {rank} batch {b} synced grad {model[2].bias.grad}")
            opt.step()
            opt.zero_grad()
print(f"rank {rank} final {model[2].weight.data} {model[0].bias.data[:2]}")
print(f"rank {rank} keys {list(ddp.state_dict())[:2]}")
dist.destroy_process_group()
'''

# what ``torchrun --standalone --nproc_per_node=2`` printed with PyTorch 2.13 (gloo)
NO_SYNC_JOIN_TORCH = {
    "0": ["batch 0 no_sync grad tensor([1.1268])", "batch 1 synced grad tensor([3.4127])",
          "batch 2 no_sync grad tensor([-0.4397])", "batch 3 synced grad tensor([-0.8585])",
          "batch 4 no_sync grad tensor([0.1687])", "batch 5 synced grad tensor([0.1805])",
          "batch 6 no_sync grad tensor([0.0820])"],
    "1": ["batch 0 no_sync grad tensor([2.1376])", "batch 1 synced grad tensor([3.4127])",
          "batch 2 no_sync grad tensor([-0.4297])", "batch 3 synced grad tensor([-0.8585])"],
}
NO_SYNC_JOIN_FINAL = ("final tensor([[-0.0669,  0.1753,  0.1828,  0.4553]]) "
                      "tensor([-0.3770, -0.0651])")


@needs_mpi
def test_no_sync_join_program_prints_what_torchrun_printed(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(NO_SYNC_JOIN))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "ember.compat.run", "-m",
                           "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                           str(script)], capture_output=True, text=True, timeout=240,
                          cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = {"0": [], "1": []}
    # the two workers share one pipe, so a line's text and its newline may be split by the
    # other rank's output: take each "rank R ..." up to the next one
    for rank, rest in re.findall(r"rank ([01]) (.*?)(?=rank [01] |\n|$)", proc.stdout):
        lines[rank].append(rest.strip())
    for rank in ("0", "1"):
        assert lines[rank][:-2] == NO_SYNC_JOIN_TORCH[rank]
        assert lines[rank][-2] == NO_SYNC_JOIN_FINAL
        assert lines[rank][-1] == "keys ['module.0.weight', 'module.0.bias']"
