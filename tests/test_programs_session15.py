"""Real public training programs run unchanged (issues 17 and 21, session 15): the DDP
tutorial series of pytorch/examples (``distributed/ddp-tutorial-series``) and karpathy's
nanoGPT (``train.py config/train_shakespeare_char.py``, its ``prepare.py`` data and
``sample.py``), from copies in ``tests/compat/programs/`` whose first line names the
repository, path and commit. Where a program names a CUDA device or NCCL (PyTorch fails there
too on a CPU-only machine) the copy's lines are edited for the CPU; nothing else is.

This file runs the single-process programs; ``tests/distributed/test_programs_session15.py``
runs the multi-process ones with the same helpers. Each program runs in a copy of its folder
under ``tmp_path`` (the programs write checkpoints and data beside themselves), under
``python -m ember.compat.run`` and, where PyTorch is installed, under ``python``; their
printed lines and saved tensors are compared.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH

PROGRAMS = Path(__file__).parent / "compat" / "programs"

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


# -- helpers (also used by tests/distributed/test_programs_session15.py) ---------------------


def workdir(tmp_path, program, name="run"):
    """A fresh copy of ``tests/compat/programs/<program>`` (with the seeding wrapper)."""
    dest = tmp_path / name / program
    shutil.copytree(PROGRAMS / program, dest)
    shutil.copy(PROGRAMS / "seeded_run.py", dest)
    return dest


def command(fw, *args, launcher=None):
    """``python [-m ember.compat.run] args``, or the framework's launcher given its options."""
    if launcher is not None:
        return [sys.executable, "-m", f"{fw}.distributed.run", *launcher, *args]
    runner = ["-m", "ember.compat.run"] if fw == "ember" else []
    return [sys.executable, *runner, *args]


def run(cmd, cwd, timeout=240, **env):
    """Run ``cmd`` in ``cwd`` with one OpenMP thread; its stdout (the test fails on an error)."""
    full_env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", **env)
    done = subprocess.run(cmd, cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def start(cmd, cwd, **env):
    """``run`` without waiting (for the "nodes" of a multi-node job)."""
    full_env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", **env)
    return subprocess.Popen(cmd, cwd=cwd, env=full_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


#: what the DDP tutorial's programs print (workers' lines may interleave mid-line)
_TUTORIAL_MESSAGE = re.compile(
    r"\[GPU\w+\] Epoch \d+ \| Batchsize: \d+ \| Steps: \d+"
    r"|Epoch \d+ \| Training (?:checkpoint|snapshot) saved at \S+?\.pt"
    r"|Loading snapshot|Resuming training from snapshot at Epoch \d+")


def tutorial_messages(out):
    """The DDP tutorial's messages in ``out``, sorted (the ranks print in any order)."""
    return sorted(_TUTORIAL_MESSAGE.findall(out))


def state_arrays(path):
    """The tensors of the state dict saved at ``path`` (or under its ``MODEL_STATE``), as
    NumPy arrays read by ember (whichever framework wrote the file)."""
    obj = ember.load(path, weights_only=False)
    obj = obj.get("MODEL_STATE", obj.get("model", obj))
    return {k: v.numpy() for k, v in obj.items()}


def assert_states_equal(a, b, atol=0.0):
    assert a.keys() == b.keys()
    for k in a:
        if atol:
            np.testing.assert_allclose(a[k], b[k], rtol=0, atol=atol, err_msg=k)
        else:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)


#: nanoGPT's shakespeare_char configuration made tiny through its own command-line overrides
NANOGPT_ARGS = [
    "config/train_shakespeare_char.py", "--device=cpu", "--compile=False", "--eval_iters=2",
    "--log_interval=1", "--block_size=32", "--batch_size=4", "--n_layer=2", "--n_head=2",
    "--n_embd=32", "--max_iters=4", "--lr_decay_iters=4", "--eval_interval=4",
    "--warmup_iters=2"]

_LOSS = re.compile(r"(step \d+: train loss|val loss|iter \d+: loss) (\d+\.\d+)")


def nanogpt_losses(out):
    """nanoGPT's printed losses: ``[(label, value), ...]`` in order (timings left out)."""
    return [(label, float(value)) for label, value in _LOSS.findall(out)]


def assert_losses_close(mine, theirs):
    # printed with 4 decimals; ember's GEMMs round as NumPy's BLAS does, not as torch's
    assert [m[0] for m in mine] == [t[0] for t in theirs] and mine
    np.testing.assert_allclose([m[1] for m in mine], [t[1] for t in theirs], atol=2e-4)


def nanogpt_workdir(tmp_path, name="run"):
    """nanoGPT's folder with shakespeare_char prepared from a synthetic ``input.txt`` (its
    ``prepare.py`` downloads one only when the file is missing)."""
    import random

    root = workdir(tmp_path, "nanogpt", name)
    rng = random.Random(0)
    words = ("the king queen lord my thou art hath doth speak love death night day sword "
             "crown and of to a in is that not with be his her what shall come go say").split()
    speakers = ["ROMEO", "JULIET", "KING HENRY", "First Citizen", "MENENIUS"]
    text = "\n".join(
        f"{rng.choice(speakers)}:\n"
        f"{' '.join(rng.choice(words) for _ in range(rng.randint(4, 12))).capitalize()}"
        f"{rng.choice('.,!?;:')}\n" for _ in range(600))
    data = root / "data" / "shakespeare_char"
    (data / "input.txt").write_text(text)
    out = run([sys.executable, "prepare.py"], cwd=data)
    assert "vocab size: 54" in out
    # sample.py imports tiktoken at its top and uses it only without a meta.pkl
    shim = tmp_path / name / "shim"
    shim.mkdir()
    (shim / "tiktoken.py").write_text('"""Stand-in: sample.py imports tiktoken; unused."""\n')
    return root, str(shim)


# -- DDP tutorial series: single_gpu.py -------------------------------------------------------


def test_ddp_tutorial_single_process(tmp_path):
    root = workdir(tmp_path, "ddp_tutorial")
    out = run(command("ember", "seeded_run.py", "single_gpu.py", "1", "1",
                      "--batch_size", "1024"), cwd=root)
    assert tutorial_messages(out) == sorted(
        [f"[GPUcpu] Epoch {e} | Batchsize: 1024 | Steps: 2" for e in (0,)]
        + [f"Epoch {e} | Training checkpoint saved at checkpoint.pt" for e in (0,)])
    mine = state_arrays(root / "checkpoint.pt")
    assert mine["weight"].shape == (1, 20) and mine["bias"].shape == (1,)
    if HAS_TORCH:
        theirs_root = workdir(tmp_path, "ddp_tutorial", "torch")
        theirs = run(command("torch", "seeded_run.py", "single_gpu.py", "1", "1",
                             "--batch_size", "1024"), cwd=theirs_root)
        assert tutorial_messages(out) == tutorial_messages(theirs)
        assert_states_equal(mine, state_arrays(theirs_root / "checkpoint.pt"))


# -- nanoGPT: prepare.py, train.py, sample.py -------------------------------------------------


@pytest.fixture(scope="module")
def nanogpt(tmp_path_factory):
    """nanoGPT's folder after ``train.py`` ran under ember (and under torch where installed):
    ``(folder, tiktoken shim, {framework: stdout})``; checkpoints in ``out-<framework>``."""
    root, shim = nanogpt_workdir(tmp_path_factory.mktemp("nanogpt"))
    outs = {fw: run(command(fw, "train.py", *NANOGPT_ARGS, f"--out_dir=out-{fw}"), cwd=root)
            for fw in (("ember", "torch") if HAS_TORCH else ("ember",))}
    return root, shim, outs


def test_nanogpt_trains(nanogpt):
    _, _, outs = nanogpt
    losses = nanogpt_losses(outs["ember"])
    assert [label for label, _ in losses] == [
        "step 0: train loss", "val loss", *(f"iter {i}: loss" for i in range(4)),
        "step 4: train loss", "val loss", "iter 4: loss"]
    assert losses[0][1] == pytest.approx(np.log(54), abs=0.1)  # untrained: uniform over 54
    assert losses[-2][1] < losses[1][1]  # the validation loss went down
    assert "saving checkpoint to out-ember" in outs["ember"]


@needs_torch
def test_nanogpt_trains_as_torch(nanogpt):
    root, _, outs = nanogpt
    mine, theirs = nanogpt_losses(outs["ember"]), nanogpt_losses(outs["torch"])
    assert_losses_close(mine, theirs)
    # the first iteration's loss is torch's to the bit here (the forward's GEMMs round
    # alike); printed with 4 decimals it is the same text
    assert mine[2] == theirs[2]
    assert_states_equal(state_arrays(root / "out-ember" / "ckpt.pt"),
                        state_arrays(root / "out-torch" / "ckpt.pt"), atol=1e-5)


_SAMPLE = ["sample.py", "--device=cpu", "--compile=False", "--num_samples=2",
           "--max_new_tokens=30", "--start=ROMEO:"]


def test_nanogpt_samples(nanogpt):
    root, shim, _ = nanogpt
    # from torch's checkpoint where there is one: both frameworks must draw the same text
    source = "torch" if HAS_TORCH else "ember"
    mine = run(command("ember", *_SAMPLE, f"--out_dir=out-{source}"), cwd=root,
               PYTHONPATH=shim)
    assert mine.count("\nROMEO:") == 2 and mine.count("---------------") == 2
    if HAS_TORCH:
        theirs = run(command("torch", *_SAMPLE, f"--out_dir=out-{source}"), cwd=root,
                     PYTHONPATH=shim)
        assert mine == theirs


# -- pytorch/examples' MNIST, VAE and DCGAN programs (with the torchvision stand-in) ----------

#: program folder under pytorch_examples/ -> its arguments (small sizes through its own flags)
EXAMPLES = {
    "mnist_forward_forward": ["--epochs", "3", "--train_size", "200", "--test_size", "100",
                              "--log-interval", "1"],
    "mnist_rnn": ["--epochs", "1", "--batch-size", "64", "--test-batch-size", "128",
                  "--log-interval", "1"],
    "vae": ["--epochs", "1", "--batch-size", "64", "--log-interval", "1"],
    # DataLoader worker processes load FakeData; one training step
    "dcgan": ["--dataset", "fake", "--workers", "2", "--batchSize", "8", "--imageSize", "64",
              "--ngf", "8", "--ndf", "8", "--nz", "16", "--manualSeed", "3", "--outf", "out",
              "--dry-run"],
}

_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")


def example_run(tmp_path, program, fw, args):
    """Run pytorch/examples' ``program`` (main.py in a fresh copy of its folder, seeded by
    the wrapper, torchvision from the stand-in where it is not installed); its stdout and
    the folder."""
    root = workdir(tmp_path, f"pytorch_examples/{program}", fw)
    (root / "results").mkdir()  # vae's folder of images (kept in the repository)
    (root / "out").mkdir()
    out = run(command(fw, "seeded_run.py", "main.py", *args), cwd=root,
              PYTHONPATH=str(PROGRAMS / "torchvision_standin"))
    return out, root


def assert_same_text_and_close_numbers(mine, theirs, rtol=1e-4):
    """The same text once numbers are masked; the numbers equal within ``rtol`` (ember's
    GEMMs and reductions round as NumPy's, torch's as its own kernels)."""
    assert _NUMBER.sub("#", mine) == _NUMBER.sub("#", theirs)
    np.testing.assert_allclose([float(x) for x in _NUMBER.findall(mine)],
                               [float(x) for x in _NUMBER.findall(theirs)], rtol=rtol)


@pytest.mark.parametrize("program", sorted(EXAMPLES))
def test_pytorch_examples(tmp_path, program):
    out, root = example_run(tmp_path, program, "ember", EXAMPLES[program])
    assert out.strip()
    if HAS_TORCH:
        theirs, theirs_root = example_run(tmp_path, program, "torch", EXAMPLES[program])
        assert_same_text_and_close_numbers(out, theirs)
        for folder in ("results", "out"):  # vae's and dcgan's images and checkpoints
            mine_files = sorted(p.name for p in (root / folder).iterdir())
            assert mine_files == sorted(p.name for p in (theirs_root / folder).iterdir())
            for name in mine_files:
                if name.endswith(".png"):  # the stand-in's shape-and-sum text
                    assert_same_text_and_close_numbers((root / folder / name).read_text(),
                                                       (theirs_root / folder / name).read_text())


def test_mnist_hogwild(tmp_path):
    # mnist_hogwild: model.share_memory(), then two spawn-started processes train it at once
    # (their losses depend on how their steps interleave: the lines' form is compared)
    out, _ = example_run(tmp_path, "mnist_hogwild", "ember",
                         ["--epochs", "1", "--num-processes", "2", "--log-interval", "1",
                          "--test-batch-size", "128"])
    progress = sorted(re.findall(r"Train Epoch: 1 \[(\d+)/256 \(\d+%\)\]\tLoss: \d+\.\d{6}",
                                 out))
    assert progress == sorted(["0", "64", "128", "192"] * 2)
    assert re.search(r"Test set: Average loss: \d\.\d{4}, Accuracy: \d+/128 \(\d+%\)", out)
