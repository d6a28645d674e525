"""Distributed programs as their public counterparts write them (issue 21, session 28), run
unchanged: the DDP tutorial (``mp.spawn``, a checkpoint on rank 0 behind ``dist.barrier()``,
``map_location``), its torchrun form under ``@record`` (and torchrun's failure report when a
worker raises), nanoGPT's DDP branch, the ImageNet example's distributed path, the FSDP
tutorial, the ZeroRedundancyOptimizer recipe, model parallelism over send/recv, the
distributed-checkpoint tutorial and the RPC tutorial's parameter server. The programs are
the files of ``tests/distributed/public_programs_28``; each runs as ``python program.py``
(through ``ember.compat.run``), under ``python -m ember.distributed.run`` or alone, and its
printed numbers are compared with PyTorch's run of the same file (gloo, ``torchrun``) where
PyTorch is installed, or with the same program's other starts.
"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import HAS_TORCH
from tests.distributed.conftest import free_port, needs_mpi
from tests.test_programs_session15 import command, run, start

PROGRAMS = Path(__file__).parent / "public_programs_28"
_STANDALONE = ["--standalone", "--nproc-per-node", "2"]
_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")


def _run(cmd, cwd, **env):
    """``run`` for ember; PyTorch's reference runs get a second try with a fresh port (its
    gloo now and then hangs or aborts a worker on its own: NOTE [ PyTorch's gloo as the
    oracle ] in _random_collective_workers.py)."""
    if any("ember" in part for part in cmd):
        return run(cmd, cwd=cwd, **env)
    for attempt in range(2):
        try:
            return run(cmd, cwd=cwd, timeout=120, **env)
        except (AssertionError, subprocess.TimeoutExpired) as e:
            if attempt == 1:
                # the oracle failed, not ember: nothing to compare against
                pytest.skip(f"PyTorch's reference run failed twice: {str(e)[-300:]}")
            if "PORT" in env:
                env["PORT"] = str(free_port())


def _folder(tmp_path, name):
    d = tmp_path / name
    d.mkdir()
    for f in PROGRAMS.glob("*.py"):
        shutil.copy(f, d)
    return d


#: what every rank prints: with unbuffered output (the launcher's workers), another rank's
#: write can land inside a line of rank 0's, before its newline (a separate write)
_EVERY_RANK = re.compile(r"((?:Start running|Running|Finished running) [^\n]*? on rank \d+\.)"
                         r"|(?=params sum is: )")


def _lines(out, *prefixes):
    """The printed lines starting with one of ``prefixes``, in order (rank 0 prints them),
    with the messages every rank prints split off."""
    lines = [part for line in out.splitlines() for part in _EVERY_RANK.split(line) if part]
    return [line for line in lines if line.startswith(prefixes)]


def _numbers(lines):
    return np.array([float(x) for line in lines for x in _NUMBER.findall(line)])


def _assert_same_report(mine, theirs, *prefixes, rtol=1e-5, atol=2e-6):
    a, b = _lines(mine, *prefixes), _lines(theirs, *prefixes)
    assert [_NUMBER.sub("#", s) for s in a] == [_NUMBER.sub("#", s) for s in b], (a, b)
    np.testing.assert_allclose(_numbers(a), _numbers(b), rtol=rtol, atol=atol)


# -- the DDP tutorial, started by mp.spawn ----------------------------------------------------

@needs_mpi
def test_ddp_tutorial_under_mp_spawn(tmp_path):
    outs = {}
    for fw in ("ember", "torch") if HAS_TORCH else ("ember",):
        root = _folder(tmp_path, fw)
        outs[fw] = _run(command(fw, "ddp_tutorial.py"), cwd=root, PORT=str(free_port()),
                       CKPT_DIR=str(root))
        # rank 0 removed its checkpoint after the step (the all-reduce synchronized)
        assert not (root / "model.checkpoint").exists()
    mine = outs["ember"]
    for demo in ("basic DDP", "DDP checkpoint"):
        assert sorted(_lines(mine, f"Finished running {demo}")) == [
            f"Finished running {demo} example on rank {r}." for r in (0, 1)]
    assert _lines(mine, "keys:") == [
        "keys: module.net1.weight module.net1.bias module.net2.weight module.net2.bias"]
    # the checkpoint's parameters are rank 0's, as DDP's broadcast made them: one step from
    # the same start and the same two batches gives the same parameters as the first demo
    assert _numbers(_lines(mine, "basic:")).tolist() == \
        _numbers(_lines(mine, "checkpoint:")).tolist()
    if HAS_TORCH:
        _assert_same_report(mine, outs["torch"], "basic:", "checkpoint:", "keys:")


# -- its torchrun form: @record, and the failure report ---------------------------------------

def _normalized_report(err):
    """The failure report's lines without times, pids, hosts, paths and traceback bodies."""
    start_at = err.index("ChildFailedError:")
    report = err[start_at:].splitlines()
    keep = []
    for line in report:
        if line.startswith(("  time", "  host", "    ", "  File")):
            continue
        line = re.sub(r"pid: \d+", "pid: #", line)
        line = re.sub(r"PID \d+", "PID #", line)
        keep.append(re.sub(r"error_file: /\S+", "error_file: <file>", line))
    return keep


@needs_mpi
def test_elastic_ddp_with_record_under_the_launcher(tmp_path):
    root = _folder(tmp_path, "ok")
    mine = _run(command("ember", "elastic_ddp.py", launcher=_STANDALONE), cwd=root)
    assert sorted(_lines(mine, "Finished")) == [
        f"Finished running basic DDP example on rank {r}." for r in (0, 1)]
    if HAS_TORCH:
        theirs = _run(command("torch", "elastic_ddp.py", launcher=_STANDALONE), cwd=root)
        _assert_same_report(mine, theirs, "elastic:")


def _failing(fw, root):
    proc = start(command(fw, "elastic_ddp.py", launcher=_STANDALONE), cwd=root, FAIL_RANK="1")
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 1, err[-3000:]
    return err


@needs_mpi
def test_a_failing_worker_gives_torchruns_report(tmp_path):
    root = _folder(tmp_path, "fail")
    err = _failing("ember", root)
    # the worker's own traceback, its lines led by its rank (NOTE [ Rank-prefixed tracebacks ])
    assert "[rank1]: RuntimeError: rank 1 gave up at step 1" in err.splitlines()
    # the launcher ends by raising ChildFailedError: the boxed report names the root cause
    assert "ember.distributed.elastic.multiprocessing.errors.ChildFailedError: " in err
    report = err[err.index("ChildFailedError:"):]
    assert "elastic_ddp.py FAILED" in report.splitlines()
    root_cause = report[report.index("Root Cause (first observed failure):"):]
    assert "  rank      : 1 (local_rank: 1)" in root_cause.splitlines()
    assert "  exitcode  : 1 (pid: " in root_cause
    assert "  RuntimeError: rank 1 gave up at step 1" in root_cause.splitlines()
    # the error file @record wrote is kept for the report, in PyTorch's layout
    path = re.search(r"error_file: (\S+)", root_cause).group(1)
    with open(path) as f:
        recorded = json.load(f)["message"]
    assert recorded["message"] == "RuntimeError: rank 1 gave up at step 1"
    assert "gave up at step" in recorded["extraInfo"]["py_callstack"]
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    # numbered as torchrun numbers them: the first failure seen is [0] (the root cause),
    # the worker the launcher stopped after it follows (the text of ChildFailedError is
    # compared with PyTorch's in test_child_failed_error_reads_as_torchs)
    lines = _normalized_report(err)
    assert lines[:5] == ["ChildFailedError: ", "=" * 60, "elastic_ddp.py FAILED", "-" * 60,
                         "Failures:"]
    assert lines[5:7] == ["[1]:", "  rank      : 0 (local_rank: 0)"]
    cause = lines.index("Root Cause (first observed failure):")
    assert lines[cause + 1:cause + 5] == [
        "[0]:", "  rank      : 1 (local_rank: 1)", "  exitcode  : 1 (pid: #) ",
        "  error_file: <file>"]


# -- nanoGPT's DDP branch ----------------------------------------------------------------------

@pytest.mark.parametrize("start_mode", [pytest.param("launcher", marks=needs_mpi), "alone"])
def test_nanogpt_ddp_branch(tmp_path, start_mode):
    launcher = _STANDALONE if start_mode == "launcher" else None
    outs = {}
    for fw in ("ember", "torch") if HAS_TORCH else ("ember",):
        root = _folder(tmp_path, fw)
        outs[fw] = _run(command(fw, "nanogpt_ddp.py", launcher=launcher), cwd=root)
        assert (root / "out" / "ckpt.pt").exists()
    mine = outs["ember"]
    assert _lines(mine, "tokens per iteration") == ["tokens per iteration will be: 128"]
    assert len(_lines(mine, "iter ")) == 5
    if HAS_TORCH:
        _assert_same_report(mine, outs["torch"], "iter ", rtol=1e-5, atol=1e-5)
        import ember

        a = ember.load(tmp_path / "ember" / "out" / "ckpt.pt", weights_only=False)
        b = ember.load(tmp_path / "torch" / "out" / "ckpt.pt", weights_only=False)
        # raw_model = model.module: no "module." prefix in the saved state
        assert list(a["model"]) == list(b["model"]) and "wte.weight" in a["model"]
        for k in a["model"]:
            np.testing.assert_allclose(a["model"][k].numpy(), b["model"][k].numpy(),
                                       rtol=1e-4, atol=1e-5, err_msg=k)


# -- the ImageNet example's distributed path ---------------------------------------------------

_IMAGENET = ["imagenet_ddp.py", "--dist-backend", "gloo"]


@needs_mpi
def test_imagenet_example_under_the_launcher_and_as_two_spawning_nodes(tmp_path):
    root = _folder(tmp_path, "launcher")
    mine = _run(command("ember", *_IMAGENET, "--dist-url", "env://", launcher=_STANDALONE),
               cwd=root)
    report = _lines(mine, "Epoch:", "val ")
    assert len(report) == 4, mine
    # the example's CPU path: one process per node, each started by mp.spawn; two nodes
    # rendezvous over tcp:// (the same group, so the same numbers)
    nodes_root = _folder(tmp_path, "nodes")
    url = f"tcp://127.0.0.1:{free_port()}"
    nodes = [start(command("ember", *_IMAGENET, "--dist-url", url, "--world-size", "2",
                           "--rank", str(r), "--multiprocessing-distributed"), cwd=nodes_root)
             for r in (0, 1)]
    outs = []
    for node in nodes:
        out, err = node.communicate(timeout=240)
        assert node.returncode == 0, err[-3000:]
        outs.append(out)
    assert _lines(outs[0], "Epoch:", "val ") == report and not _lines(outs[1], "Epoch:")
    import ember

    saved = ember.load(nodes_root / "checkpoint.pth.tar", weights_only=False)
    assert saved["epoch"] == 2 and list(saved["state_dict"])[0] == "module.0.weight"
    assert (nodes_root / "model_best.pth.tar").exists()
    if HAS_TORCH:
        theirs = _run(command("torch", *_IMAGENET, "--dist-url", "env://",
                             launcher=_STANDALONE), cwd=_folder(tmp_path, "torch"))
        _assert_same_report(mine, theirs, "Epoch:", "val ")


def test_sync_batchnorm_under_cpu_ddp_raises_as_torch(tmp_path):
    # convert_sync_batchnorm works anywhere; DDP refuses SyncBatchNorm on CPU modules
    import ember
    import ember.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)
    try:
        model = ember.nn.Sequential(ember.nn.Conv2d(3, 4, 3), ember.nn.BatchNorm2d(4))
        model = ember.nn.SyncBatchNorm.convert_sync_batchnorm(model)
        assert type(model[1]).__name__ == "SyncBatchNorm"
        with pytest.raises(ValueError, match="^SyncBatchNorm layers only work with GPU "
                                             "modules$"):
            ember.nn.parallel.DistributedDataParallel(model)
    finally:
        dist.destroy_process_group()


# -- the FSDP tutorial -------------------------------------------------------------------------

def _as_ddp(root):
    """The FSDP tutorial with DistributedDataParallel in FSDP's place, for PyTorch (whose
    FSDP needs an accelerator): FSDP trains as DDP does."""
    path = root / "fsdp_mnist.py"
    text = path.read_text()
    for old, new in [
            ("model = FSDP(model, auto_wrap_policy=my_auto_wrap_policy)",
             "model = torch.nn.parallel.DistributedDataParallel(model)"),
            ("with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, save_policy):",
             "if True:"),
            ("states = model.state_dict()",
             "states = {k[len('module.'):]: v for k, v in model.state_dict().items()}")]:
        assert old in text
        text = text.replace(old, new)
    path.write_text(text)


@needs_mpi
def test_fsdp_tutorial_with_auto_wrap_and_full_state_dict(tmp_path):
    root = _folder(tmp_path, "ember")
    mine = _run(command("ember", "fsdp_mnist.py", "--save-model"), cwd=root,
               PORT=str(free_port()))
    # size_based_auto_wrap_policy(min_num_params=100): conv2, fc1 and fc2 get their own unit
    assert mine.count("(_fsdp_wrapped_module): ") == 4
    assert "(conv1): Conv2d(1, 4, kernel_size=(3, 3), stride=(1, 1))" in mine
    assert len(_lines(mine, "Train Epoch:", "Test set:")) == 4
    import ember

    state = ember.load(root / "mnist_cnn.pt")
    assert list(state) == ["conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                           "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert tuple(state["fc1.weight"].shape) == (16, 128)
    if HAS_TORCH:
        theirs_root = _folder(tmp_path, "torch")
        _as_ddp(theirs_root)
        theirs = _run(command("torch", "fsdp_mnist.py", "--save-model"), cwd=theirs_root,
                     PORT=str(free_port()))
        _assert_same_report(mine, theirs, "Train Epoch:", "Test set:", "saved:", rtol=1e-4,
                            atol=1e-5)


# -- the ZeroRedundancyOptimizer recipe --------------------------------------------------------

@needs_mpi
def test_zero_redundancy_optimizer_recipe(tmp_path):
    root = _folder(tmp_path, "ember")
    mine = _run(command("ember", "zero_example.py"), cwd=root, PORT=str(free_port()))
    sums = _lines(mine, "params sum is:")
    # four ranks' lines (two runs), all equal: ZeRO's step is Adam's
    assert len(sums) == 4 and len(set(sums)) == 1
    assert _lines(mine, "zero state:")[0].startswith("zero state: 8 1 ")
    if HAS_TORCH:
        theirs = _run(command("torch", "zero_example.py"), cwd=_folder(tmp_path, "torch"),
                     PORT=str(free_port()))
        _assert_same_report(mine, theirs, "params sum is:", "zero state:")


# -- model parallelism over send/recv ----------------------------------------------------------

@needs_mpi
def test_model_split_over_two_processes_trains_as_one(tmp_path):
    root = _folder(tmp_path, "ember")
    split = _run(command("ember", "pipeline_sendrecv.py", launcher=_STANDALONE), cwd=root)
    whole = _run(command("ember", "pipeline_sendrecv.py"), cwd=root)
    assert len(_lines(split, "step ")) == 3
    _assert_same_report(split, whole, "step ", "params:")
    if HAS_TORCH:  # the one-process program as PyTorch runs it
        theirs = _run(command("torch", "pipeline_sendrecv.py"), cwd=root)
        _assert_same_report(whole, theirs, "step ", "params:")


# -- distributed checkpoint --------------------------------------------------------------------

@needs_mpi
def test_distributed_checkpoint_tutorial(tmp_path):
    outs = {}
    for fw in ("ember", "torch") if HAS_TORCH else ("ember",):
        root = _folder(tmp_path, fw)
        outs[fw] = _run(command(fw, "dcp_example.py"), cwd=root, PORT=str(free_port()))
        # the checkpoint folder: metadata plus one data file per rank
        names = sorted(os.listdir(root / "checkpoint"))
        assert ".metadata" in names and sum(n.endswith(".distcp") for n in names) == 2
    mine = outs["ember"]
    assert _lines(mine, "torch_save:") == ["torch_save: ['model', 'optim'] 4"]
    # the one-process load gives the saved (first-run) parameters back; the resumed run
    # moved on from them
    assert len(_lines(mine, "plain:")) == len(_lines(mine, "resumed:")) == 1
    if HAS_TORCH:
        _assert_same_report(mine, outs["torch"], "resumed:", "plain:", "torch_save:")


# -- RPC: the parameter server of the distributed RNN tutorial ---------------------------------

@needs_mpi
def test_rpc_tutorial_parameter_server(tmp_path):
    root = _folder(tmp_path, "ember")
    mine = _run(command("ember", "rpc_rnn.py"), cwd=root, PORT=str(free_port()))
    assert len(_lines(mine, "Training epoch")) == 3
    if HAS_TORCH:
        theirs = _run(command("torch", "rpc_rnn.py"), cwd=root, PORT=str(free_port()))
        _assert_same_report(mine, theirs, "Training epoch")


def test_programs_import_nothing_ember_lacks():
    # every name the programs import from torch.* exists in ember (the import lines alone,
    # checked without running the programs)
    import importlib

    for path in sorted(PROGRAMS.glob("*.py")):
        for line in path.read_text().splitlines():
            m = re.match(r"from (torch[\w.]*) import (.+)", line)
            if m:
                module = importlib.import_module("ember" + m.group(1)[len("torch"):])
                for name in m.group(2).split(","):
                    name = name.split(" as ")[0].strip()
                    assert hasattr(module, name), (path.name, m.group(1), name)
            m = re.match(r"import (torch[\w.]*)", line)
            if m:
                importlib.import_module("ember" + m.group(1)[len("torch"):])


# -- the failure report and pipeline stage names, in this process -------------------------------

def _failure_pair(fw, tmp_path):
    """ChildFailedError of ``fw`` for a recorded failure of rank 1 and a signalled rank 0."""
    errors = __import__(f"{fw}.distributed.elastic.multiprocessing.errors", fromlist=["x"])
    path = tmp_path / f"{fw}_error.json"
    path.write_text(json.dumps({"message": {
        "message": "ValueError: boom",
        "extraInfo": {"py_callstack": "Traceback (most recent call last):\n  File \"t.py\","
                                      " line 3, in main\nValueError: boom\n",
                      "timestamp": "1700000000"}}}))
    recorded = errors.ProcessFailure(local_rank=1, pid=11, exitcode=1, error_file=str(path))
    stopped = errors.ProcessFailure(local_rank=0, pid=10, exitcode=-15, error_file="")
    stopped.timestamp = 1700000005
    plain = errors.ProcessFailure(local_rank=0, pid=12, exitcode=2, error_file="")
    plain.timestamp = 1700000009
    return (errors.ChildFailedError("train.py", {0: stopped, 1: recorded}),
            errors.ChildFailedError("train.py", {3: plain}))


def test_child_failed_error_reads_as_torchs(tmp_path):
    torch = pytest.importorskip("torch")  # noqa: F841
    mine, theirs = _failure_pair("ember", tmp_path), _failure_pair("torch", tmp_path)
    for a, b in zip(mine, theirs):
        assert str(a).replace("ember_error", "torch_error") == str(b)
        assert a.get_first_failure()[0] == b.get_first_failure()[0]
    assert mine[0].failures[0].message == "Signal 15 (SIGTERM) received by PID 10"
    assert mine[0].failures[1].message["message"] == "ValueError: boom"
    assert mine[0].failures[0].error_file == "<N/A>"


class _Gpt:
    """A GPT-shaped model (a ModuleDict, a bare parameter, persistent and non-persistent
    buffers) under ember or PyTorch."""

    @staticmethod
    def make(fw):
        nn = fw.nn

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.ln = nn.LayerNorm(8)
                self.attn = nn.ModuleDict({"q": nn.Linear(8, 8), "o": nn.Linear(8, 8, bias=False)})
                self.scale = nn.Parameter(fw.ones(8))
                self.register_buffer("mask", fw.ones(8))

            def forward(self, x):
                h = self.attn["o"](fw.relu(self.attn["q"](self.ln(x))))
                return x + h * self.scale * self.mask

        class GPT(nn.Module):
            def __init__(self):
                super().__init__()
                self.wte = nn.Embedding(11, 8)
                self.wpe = nn.Parameter(fw.zeros(4, 8))
                self.h = nn.ModuleList([Block() for _ in range(4)])
                self.ln_f = nn.LayerNorm(8)
                self.lm_head = nn.Linear(8, 11, bias=False)
                self.register_buffer("pos", fw.arange(4), persistent=False)

            def forward(self, idx):
                x = self.wte(idx) + self.wpe[self.pos]
                for b in self.h:
                    x = b(x)
                return self.lm_head(self.ln_f(x))

        fw.manual_seed(0)
        return GPT()


@pytest.mark.parametrize("cuts", [("h.2",), ("h.1", "h.3")])
def test_pipeline_stage_names_of_a_gpt_match_torch(cuts):
    torch = pytest.importorskip("torch")
    import ember

    seen = {}
    for fw in (ember, torch):
        pp = __import__(fw.__name__ + ".distributed.pipelining", fromlist=["x"])
        spec = {c: pp.SplitPoint.BEGINNING for c in cuts}
        pipe = pp.pipeline(_Gpt.make(fw), mb_args=(fw.randint(0, 11, (2, 4)),),
                           split_spec=spec)
        seen[fw.__name__] = [
            ([n for n, _ in s.named_parameters()], [n for n, _ in s.named_buffers()],
             list(s.state_dict()))
            for s in (pipe.get_stage_module(i) for i in range(pipe.num_stages))]
    assert seen["ember"] == seen["torch"]
    assert seen["ember"][-1][0][-1] == "lm_head.weight"


def test_default_backend_for_the_current_accelerator_as_torch():
    # the DDP tutorial's torchrun form asks torch.accelerator for its device, None on a
    # CPU-only machine, and the backend for it
    torch = pytest.importorskip("torch")
    import ember

    for device in ("cpu", "cuda", "cuda:1", "mps", "meta", "bogus", None, 0,
                   "__device_cpu__"):
        outcome = []
        for fw in (ember, torch):
            arg = fw.device("cpu") if device == "__device_cpu__" else device
            try:
                outcome.append(fw.distributed.get_default_backend_for_device(arg))
            except Exception as e:  # noqa: BLE001 - the type and message are compared
                outcome.append((type(e).__name__, str(e).split("\n")[0][:60]))
        if device is None:  # the type only: the wording is each device()'s own
            assert outcome[0][0] == outcome[1][0] == "TypeError"
        else:
            assert outcome[0] == outcome[1], device


def test_checkpoint_without_a_group_warns_as_torch(tmp_path):
    # the DCP tutorial's one-process load: PyTorch says it assumes a single process
    torch = pytest.importorskip("torch")
    import warnings

    import ember

    said = {}
    for fw in (ember, torch):
        dcp = __import__(fw.__name__ + ".distributed.checkpoint", fromlist=["x"])
        folder = tmp_path / fw.__name__
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dcp.save({"w": fw.ones(2)}, checkpoint_id=folder)
            dcp.load({"w": fw.zeros(2)}, checkpoint_id=folder)
            dcp.load({"w": fw.zeros(2)}, checkpoint_id=folder, no_dist=True)
        said[fw.__name__] = [str(w.message) for w in caught if "single process" in str(w.message)]
    assert said["ember"] == said["torch"] and len(said["ember"]) == 3
