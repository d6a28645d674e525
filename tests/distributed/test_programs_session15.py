"""Real public DDP programs on two processes (issue 21, session 15): the DDP tutorial series
of pytorch/examples started by ``mp.spawn``, by the launcher (``python -m
ember.distributed.run``, as torchrun) and as two "nodes" on this machine, and nanoGPT's
``train.py`` under the launcher with gloo, compared with PyTorch's torchrun where it is
installed. The programs and helpers are those of ``tests/test_programs_session15.py``.
"""

import pytest

import ember

from tests.conftest import HAS_TORCH
from tests.distributed.conftest import free_port, needs_mpi
from tests.test_programs_session15 import (
    NANOGPT_ARGS,
    assert_losses_close,
    assert_states_equal,
    command,
    nanogpt_losses,
    nanogpt_workdir,
    run,
    start,
    state_arrays,
    tutorial_messages,
    workdir,
)

pytestmark = needs_mpi

_STANDALONE = ["--standalone", "--nproc-per-node", "2"]


def _epoch_lines(epochs, batch, steps, saved, ranks=(0, 1)):
    return sorted([f"[GPU{r}] Epoch {e} | Batchsize: {batch} | Steps: {steps}"
                   for r in ranks for e in epochs]
                  + [f"Epoch {e} | Training {saved}.pt" for e in epochs])


def test_ddp_tutorial_mp_spawn(tmp_path):
    # multigpu.py: mp.spawn(main, nprocs=2), a gloo group on MASTER_ADDR/PORT it sets itself
    root = workdir(tmp_path, "ddp_tutorial")
    out = run(command("ember", "multigpu.py", "1", "1", "--batch_size", "512"), cwd=root)
    assert tutorial_messages(out) == _epoch_lines(
        [0], 512, 2, "checkpoint saved at checkpoint")
    state = state_arrays(root / "checkpoint.pt")
    assert state["weight"].shape == (1, 20) and state["bias"].shape == (1,)


def test_ddp_tutorial_launcher(tmp_path):
    # multigpu_torchrun.py under ember's launcher, as torchrun starts it
    root = workdir(tmp_path, "ddp_tutorial")
    args = ["seeded_run.py", "multigpu_torchrun.py", "1", "1", "--batch_size", "1024"]
    out = run(command("ember", *args, launcher=_STANDALONE), cwd=root)
    assert tutorial_messages(out) == _epoch_lines(
        [0], 1024, 1, "snapshot saved at snapshot")
    mine = state_arrays(root / "snapshot.pt")
    assert mine["weight"].shape == (1, 20)
    if HAS_TORCH:
        theirs_root = workdir(tmp_path, "ddp_tutorial", "torch")
        theirs = run(command("torch", *args, launcher=_STANDALONE), cwd=theirs_root)
        assert tutorial_messages(out) == tutorial_messages(theirs)
        assert_states_equal(mine, state_arrays(theirs_root / "snapshot.pt"))


def test_ddp_tutorial_resumes_from_snapshot(tmp_path):
    # a snapshot in the program's format says epoch 1 ran; both ranks load it, DDP keeps
    # rank 0's parameters, and (its loss has one class: zero gradients) they come back as saved
    root = workdir(tmp_path, "ddp_tutorial")
    ember.manual_seed(5)
    saved = ember.nn.Linear(20, 1).state_dict()
    ember.save({"MODEL_STATE": saved, "EPOCHS_RUN": 1}, root / "snapshot.pt")
    out = run(command("ember", "multigpu_torchrun.py", "2", "1", "--batch_size", "1024",
                      launcher=_STANDALONE), cwd=root)
    assert tutorial_messages(out) == sorted(
        ["Loading snapshot"] * 2 + ["Resuming training from snapshot at Epoch 1"] * 2
        + _epoch_lines([1], 1024, 1, "snapshot saved at snapshot"))
    assert_states_equal(state_arrays(root / "snapshot.pt"),
                        {k: v.numpy() for k, v in saved.items()})


def test_ddp_tutorial_two_nodes(tmp_path):
    # multinode.py as two one-process "nodes" on this machine (--nnodes 2 --node-rank N)
    root = workdir(tmp_path, "ddp_tutorial")
    port = str(free_port())
    nodes = [start(command("ember", "seeded_run.py", "multinode.py", "1", "1",
                           "--batch_size", "512",
                           launcher=["--nnodes", "2", "--node-rank", str(n),
                                     "--nproc-per-node", "1", "--master-addr", "127.0.0.1",
                                     "--master-port", port]), cwd=root) for n in (0, 1)]
    outs = []
    for node in nodes:
        out, err = node.communicate(timeout=240)
        assert node.returncode == 0, err[-3000:]
        outs.append(out)
    assert tutorial_messages(outs[0]) == _epoch_lines(
        [0], 512, 2, "snapshot saved at snapshot", ranks=(0,))
    assert tutorial_messages(outs[1]) == ["[GPU1] Epoch 0 | Batchsize: 512 | Steps: 2"]
    assert state_arrays(root / "snapshot.pt")["weight"].shape == (1, 20)


def test_nanogpt_ddp(tmp_path):
    # train.py with RANK set by the launcher: DDP over gloo, two micro-steps per rank (the
    # first skips the gradient all-reduce through require_backward_grad_sync)
    root, _ = nanogpt_workdir(tmp_path)
    args = ["train.py", *NANOGPT_ARGS, "--backend=gloo", "--gradient_accumulation_steps=4"]
    out = run(command("ember", *args, "--out_dir=out-ember", launcher=_STANDALONE), cwd=root)
    losses = nanogpt_losses(out)
    assert len(losses) == 9 and "saving checkpoint to out-ember" in out
    assert out.count("tokens per iteration will be: 512") == 2
    if not HAS_TORCH:
        pytest.skip("compared with torchrun only where PyTorch is installed")
    theirs = run(command("torch", *args, "--out_dir=out-torch", launcher=_STANDALONE),
                 cwd=root)
    assert_losses_close(losses, nanogpt_losses(theirs))
    assert_states_equal(state_arrays(root / "out-ember" / "ckpt.pt"),
                        state_arrays(root / "out-torch" / "ckpt.pt"), atol=1e-5)


def test_launcher_runs_a_torch_script_on_ember(tmp_path):
    # NOTE [ Workers of a PyTorch script ] (ember/distributed/run.py): started as
    # ``python -m ember.distributed.run``, a script's ``import torch`` is ember in every
    # worker, whether or not PyTorch is installed
    script = tmp_path / "which.py"
    script.write_text("import os, sys, torch, torch.distributed as dist\n"
                      "dist.init_process_group('gloo')\n"
                      "line = f\"{os.environ['RANK']} {torch.__name__} {'ember' in sys.modules}"
                      " {dist.get_world_size()}\"\n"
                      "open(f\"rank{os.environ['RANK']}.txt\", 'w').write(line)\n"
                      "dist.destroy_process_group()\n")
    # each worker writes its own file: two processes printing to one pipe can interleave
    run(command("ember", str(script), launcher=_STANDALONE), cwd=tmp_path)
    lines = [(tmp_path / f"rank{r}.txt").read_text() for r in (0, 1)]
    assert lines == ["0 ember True 2", "1 ember True 2"]
