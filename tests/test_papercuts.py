"""First-contact papercuts (issue 23): file modes, warnings, loss target dtypes, where the
examples write, progress output off a terminal, and ``python -m ember.utils.collect_env``."""

import importlib.util
import io
import os
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import ember
import ember.nn.functional as F

HAS_TORCH = importlib.util.find_spec("torch") is not None
ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


# -- saved files: umask-respecting modes, atomic replace ---------------------------------

def _save_with_umask(obj, path, mask):
    old = os.umask(mask)
    try:
        ember.save(obj, path)
    finally:
        os.umask(old)


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_save_new_file_mode_follows_umask(tmp_path):
    _save_with_umask(ember.ones(2), tmp_path / "a.pt", 0o027)
    assert stat.S_IMODE((tmp_path / "a.pt").stat().st_mode) == 0o640


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_save_over_existing_file_keeps_its_mode(tmp_path):
    path = tmp_path / "b.pt"
    path.write_bytes(b"old")
    os.chmod(path, 0o604)
    _save_with_umask(ember.ones(2), path, 0o077)
    assert stat.S_IMODE(path.stat().st_mode) == 0o604
    assert ember.load(path).tolist() == [1.0, 1.0]


def test_save_failure_leaves_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "c.pt"
    ember.save(ember.zeros(3), path)
    with pytest.raises(Exception):
        ember.save({"f": lambda: 0}, path)  # a lambda cannot be pickled
    assert ember.load(path).tolist() == [0.0, 0.0, 0.0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.pt"]


# -- no spurious warnings in ordinary use -------------------------------------------------

@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_forward_backward_warns_nothing(mode):
    x = ember.randn(2, 3, 5, 5, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = F.pad(x, (1, 2, 2, 1), mode=mode)
        y.square().sum().backward()
    assert x.grad.shape == x.shape


def test_ordinary_training_loop_warns_nothing(tmp_path):
    from ember import nn

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, padding_mode="reflect"),
                              nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Dropout(0.1), nn.Linear(4 * 4 * 4, 3))
        opt = ember.optim.AdamW(model.parameters(), lr=1e-3)
        sched = ember.optim.lr_scheduler.StepLR(opt, 1)
        data = ember.utils.data.TensorDataset(ember.randn(16, 1, 8, 8),
                                             ember.randint(0, 3, (16,)))
        for x, y in ember.utils.data.DataLoader(data, batch_size=8, shuffle=True):
            loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
        model.eval()
        with ember.no_grad():
            model(ember.randn(2, 1, 8, 8)).softmax(-1)
        ember.save({"model": model.state_dict(), "opt": opt.state_dict()}, tmp_path / "m.pt")
        state = ember.load(tmp_path / "m.pt")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])


# -- loss targets: torch's dtype rules ------------------------------------------------------

def _error(mod, fn, target_dtype, shape=(2,)):
    inp = mod.zeros(2, 3)
    tgt = mod.zeros(shape, dtype=getattr(mod, target_dtype))
    try:
        getattr(mod.nn.functional, fn)(inp, tgt)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss"])
def test_loss_int32_target_rejected(fn):
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Int"):
        getattr(F, fn)(ember.zeros(2, 3), ember.zeros(2, dtype=ember.int32))


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("dt", ["int64", "uint8", "int32", "int16", "int8", "float32", "bool"])
def test_loss_target_dtype_check_matches_torch(fn, dt):
    import torch

    assert _error(ember, fn, dt) == _error(torch, fn, dt)


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
@pytest.mark.parametrize("dt", ["int64", "int32", "bool", "float64"])
def test_cross_entropy_probability_target_dtype_matches_torch(dt):
    import torch

    assert _error(ember, "cross_entropy", dt, (2, 3)) == _error(torch, "cross_entropy", dt,
                                                                  (2, 3))


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
@pytest.mark.parametrize("fn, shape", [("multi_margin_loss", (2,)),
                                       ("multilabel_margin_loss", (2, 3))])
@pytest.mark.parametrize("dt", ["int64", "int32", "uint8", "float32", "bool"])
def test_margin_loss_target_dtype_check_matches_torch(fn, shape, dt):
    import torch

    assert _error(ember, fn, dt, shape) == _error(torch, fn, dt, shape)


def test_onnx_export_without_onnx_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "onnx", None)  # as if the onnx extra were not installed
    with pytest.raises(ModuleNotFoundError, match="pip install onnx"):
        ember.onnx.export(ember.nn.Linear(2, 1), (ember.ones(1, 2),), str(tmp_path / "m.onnx"))


# -- examples: outputs in a run directory, progress lines off a terminal --------------------

def _load_example(name):
    sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(f"_ex_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_example_writes_into_run_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _load_example("char_gpt").main(["--steps", "2", "--layers", "1", "--d-model", "16",
                                    "--context", "8", "--chars", "5000",
                                    "--sample-chars", "5", "--plot", ""])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]
    assert (tmp_path / "runs" / "char_gpt" / "char_gpt.pt").exists()


def test_example_out_flag_chooses_directory(tmp_path):
    run = _load_example("_run")
    import argparse

    p = argparse.ArgumentParser()
    run.add_output_args(p, "demo")
    args = run.resolve_outputs(p.parse_args(["--out", str(tmp_path / "x")]), "demo")
    assert args.checkpoint == str(tmp_path / "x" / "demo.pt")
    assert args.plot == str(tmp_path / "x" / "demo_loss.png")
    assert (tmp_path / "x").is_dir()


def test_progress_off_terminal_prints_periodic_lines(monkeypatch):
    run = _load_example("_run")
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal
    out = io.StringIO()
    bar = run.progress(range(5), "training", unit="step", every=0.0, file=out)
    for _ in bar:
        bar.set_postfix(loss="1.000")
    lines = out.getvalue().splitlines()
    assert len(lines) == 5  # one a step (every=0); the last one is the final count
    assert lines[-1].startswith("training: 5/5 steps 100%, ")
    assert lines[-1].endswith("loss 1.000")
    assert "\r" not in out.getvalue()


def test_progress_line_plural_of_batch(monkeypatch):
    run = _load_example("_run")
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    out = io.StringIO()
    for _ in run.progress(range(2), "epoch 1", unit="batch", file=out):
        pass
    assert out.getvalue().startswith("epoch 1: 2/2 batches 100%")


def test_progress_default_interval_keeps_logs_short(monkeypatch, capsys):
    run = _load_example("_run")
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    for _ in run.progress(range(1000), "training", unit="step"):
        pass
    assert len(capsys.readouterr().out.splitlines()) == 1


# -- collect_env ------------------------------------------------------------------------------

def test_collect_env_runs_as_module():
    out = subprocess.run([sys.executable, "-m", "ember.utils.collect_env"], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    for head in ("ember version: ", "Python version: ", "NumPy version: ",
                 "BLAS (threadpoolctl):", "ember.get_num_threads(): ", "Is CUDA available: ",
                 "Versions of relevant libraries:"):
        assert head in out.stdout
    assert "Traceback" not in out.stderr


def test_collect_env_reports_thread_count():
    from ember.utils.collect_env import get_env_info

    info = get_env_info()
    assert info.num_threads == ember.get_num_threads()
    assert info.numpy_version == __import__("numpy").__version__
