"""Smoke tests: each example runs a few steps and learns something."""

import importlib.util
import os
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def _plotted(path):
    """The example drew its curve when matplotlib is there, and wrote nothing otherwise."""
    if HAS_MATPLOTLIB:
        return path.stat().st_size > 1000 and path.read_bytes()[:4] == b"\x89PNG"
    return not path.exists()


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_demo_learns_spirals():
    acc = _load("demo").main(["--epochs", "40"])
    assert acc > 0.8


def test_hogwild_learns_with_shared_parameters(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    acc = _load("hogwild").main(["--processes", "2", "--epochs", "2", "--plot",
                                 str(tmp_path / "h.png")])
    assert acc > 0.9
    assert _plotted(tmp_path / "h.png")
    assert os.path.exists(tmp_path / "runs" / "hogwild" / "hogwild.pt")  # the run directory


def test_char_gpt_trains_briefly_and_saves(tmp_path):
    mod = _load("char_gpt")
    ck = tmp_path / "gpt.pt"
    train_loss, val_loss = mod.main(["--steps", "12", "--layers", "1", "--d-model", "32",
                                     "--context", "16", "--chars", "20000",
                                     "--sample-chars", "20", "--checkpoint", str(ck),
                                     "--plot", str(tmp_path / "g.png")])
    assert train_loss < 4.5 and val_loss < 4.5
    assert _plotted(tmp_path / "g.png")
    import ember

    state = ember.load(ck)
    assert "model" in state and len(state["chars"]) > 30


def test_lstm_lm_runs_and_beats_uniform(tmp_path):
    ppl = _load("lstm_lm").main(["--epochs", "1", "--chars", "30000", "--hidden", "64",
                                 "--seq", "32", "--checkpoint", str(tmp_path / "l.pt"),
                                 "--plot", str(tmp_path / "l.png")])
    assert _plotted(tmp_path / "l.png")
    assert ppl < 40  # a uniform guess over ~90 characters has perplexity ~90


def test_digits_cnn_learns(tmp_path):
    acc = _load("digits_cnn").main(["--epochs", "2", "--train-size", "2000",
                                    "--test-size", "300", "--checkpoint",
                                    str(tmp_path / "d.pt"), "--plot", str(tmp_path / "d.png")])
    assert acc > 0.6
    assert _plotted(tmp_path / "d.png")


def test_reinforce_cartpole_improves(tmp_path):
    import pytest

    pytest.importorskip("gymnasium")
    avg = _load("reinforce_cartpole").main(["--episodes", "80", "--target", "1e9",
                                            "--checkpoint", str(tmp_path / "rl.pt"),
                                            "--plot", str(tmp_path / "rl.png")])
    assert _plotted(tmp_path / "rl.png")
    assert avg > 25  # random play averages about 22 (a collapsed policy about 10)


def test_speech_keywords_learns(tmp_path):
    acc = _load("speech_keywords").main(["--epochs", "2", "--train-size", "600",
                                         "--test-size", "200", "--checkpoint",
                                         str(tmp_path / "s.pt"), "--plot", str(tmp_path / "s.png")])
    assert _plotted(tmp_path / "s.png")
    assert acc > 0.5  # five classes: chance is 0.2


def test_resnet_shapes_learns(tmp_path):
    acc = _load("resnet_shapes").main(["--epochs", "3", "--train-size", "1500",
                                       "--test-size", "200", "--checkpoint",
                                       str(tmp_path / "r.pt"), "--plot", str(tmp_path / "r.png")])
    assert _plotted(tmp_path / "r.png")
    assert acc > 0.6  # five classes: chance is 0.2
