"""Event files from ember's ``SummaryWriter`` hold the same events as PyTorch's for the same
calls: every event read back (wall times zeroed, encoded blobs compared by length) and every
projector file, run by run."""

import os
import re

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytest.importorskip("tensorboard")

from google.protobuf import text_format  # noqa: E402
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader  # noqa: E402

_BLOB = re.compile(r'(encoded_image_string|string_val): "(?:[^"\\]|\\.)*"')


def _write(lib, log_dir, calls):
    from importlib import import_module

    w = import_module(lib.__name__ + ".utils.tensorboard").SummaryWriter(str(log_dir))
    calls(lib, w, np.random.RandomState(0))
    w.close()


def _dump(log_dir):
    """Each file under ``log_dir`` (timestamped folder names masked): its events as text."""
    out = {}
    for root, _, files in os.walk(log_dir):
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), log_dir)
            rel = "/".join("<ts>" if p[:2].isdigit() else p for p in rel.split(os.sep))
            path = os.path.join(root, f)
            if "tfevents" not in f:
                with open(path, "rb") as fh:
                    out[rel] = fh.read()
                continue
            events = []
            for ev in EventFileLoader(path).Load():
                ev.wall_time = 0
                text = text_format.MessageToString(ev, as_one_line=True)
                events.append(_BLOB.sub(lambda m: f"{m.group(1)}: <{len(m.group(0))}>", text))
            out[rel.rsplit("/", 1)[0] + "/events" if "/" in rel else "events"] = events
    return out


def _same_as_torch(tmp_path, calls):
    _write(ember, tmp_path / "ember", calls)
    _write(torch, tmp_path / "torch", calls)
    mine, theirs = _dump(tmp_path / "ember"), _dump(tmp_path / "torch")
    assert theirs and sorted(mine) == sorted(theirs)
    for k in theirs:
        assert mine[k] == theirs[k], k


def test_scalar_histogram_and_text_events_equal_torch(tmp_path):
    def calls(lib, w, rng):
        w.add_scalar("loss", 0.5, 1)
        w.add_scalar("loss_t", lib.tensor(0.25), 2)
        w.add_scalar("new", 0.5, 1, new_style=True)
        w.add_scalars("run", {"a": 1.0, "b": 2.0}, 3)
        vals = rng.randn(500).astype("float32")
        w.add_histogram("h", lib.from_numpy(vals), 1)
        w.add_histogram("h_auto", vals, 2, bins="auto")
        w.add_histogram("h10", vals, 2, bins=10)
        w.add_histogram_raw("hr", 0, 10, 5, 20, 100, [1, 5, 10], [1, 2, 2], 1)
        w.add_text("txt", "hello **world**", 1)
    _same_as_torch(tmp_path, calls)


def test_image_events_equal_torch(tmp_path):
    def calls(lib, w, rng):
        img = rng.rand(3, 8, 10).astype("float32")
        w.add_image("chw", lib.from_numpy(img), 1)
        w.add_image("hwc", (img.transpose(1, 2, 0) * 255).astype("uint8"), 1,
                    dataformats="HWC")
        w.add_image("hw", img[0], 1, dataformats="HW")
        w.add_images("nchw", lib.from_numpy(rng.rand(4, 3, 8, 8).astype("float32")), 1)
        w.add_images("nhwc", rng.rand(2, 8, 8, 1).astype("float32"), 1, dataformats="NHWC")
        w.add_image_with_boxes("boxes", img, np.array([[1, 1, 5, 5]]), 1, labels=["x"])
    _same_as_torch(tmp_path, calls)


def test_pr_curve_mesh_audio_and_layout_events_equal_torch(tmp_path):
    def calls(lib, w, rng):
        w.add_pr_curve("pr", rng.randint(0, 2, 100), rng.rand(100), 1)
        w.add_pr_curve("pr10", rng.randint(0, 2, 100), rng.rand(100), 1, num_thresholds=10)
        w.add_mesh("mesh", lib.from_numpy(rng.rand(1, 4, 3).astype("float32")),
                   colors=lib.from_numpy(rng.randint(0, 255, (1, 4, 3)).astype("uint8")),
                   faces=lib.tensor([[[0, 1, 2], [1, 2, 3]]], dtype=lib.int32),
                   global_step=1)
        w.add_audio("aud", lib.from_numpy(rng.rand(1, 100).astype("float32") * 2 - 1), 1)
        w.add_custom_scalars({"cat": {"loss": ["Multiline", ["loss", "loss_t"]],
                                      "m": ["Margin", ["a", "b", "c"]]}})
    _same_as_torch(tmp_path, calls)


def test_embedding_projector_files_equal_torch(tmp_path):
    def calls(lib, w, rng):
        w.add_embedding(lib.from_numpy(rng.rand(10, 5).astype("float32")),
                        metadata=[str(i) for i in range(10)],
                        label_img=lib.from_numpy(rng.rand(10, 3, 4, 4).astype("float32")),
                        global_step=1, tag="emb")
        w.add_embedding(lib.from_numpy(rng.rand(6, 3).astype("float32")),
                        metadata=[["a", "b"]] * 6, metadata_header=["h1", "h2"],
                        global_step=2)
    _same_as_torch(tmp_path, calls)


def test_hparams_run_events_equal_torch(tmp_path):
    # one hyper-parameter: the map's order in the message is the serializer's own
    def calls(lib, w, rng):
        w.add_hparams({"lr": 0.1}, {"hparam/acc": 0.9}, run_name="hp")
    _same_as_torch(tmp_path, calls)


def test_purge_step_and_flush_events_equal_torch(tmp_path):
    def calls(lib, w, rng):
        for step in range(4):
            w.add_scalar("loss", 1.0 / (step + 1), step)
        w.flush()

    def resumed(lib, w, rng):
        w.add_scalar("loss", 9.0, 2)
    for lib in (ember, torch):
        _write(lib, tmp_path / lib.__name__, calls)
        from importlib import import_module
        writer = import_module(lib.__name__ + ".utils.tensorboard").SummaryWriter
        w = writer(str(tmp_path / lib.__name__), purge_step=2)
        resumed(lib, w, None)
        w.close()
    def files(lib):
        d = tmp_path / lib.__name__
        out = []
        for name in sorted(os.listdir(d), key=lambda f: (f.split(".")[3], f)):
            sub = tmp_path / "one" / lib.__name__ / name
            sub.mkdir(parents=True)
            os.link(d / name, sub / name)
            out.append(_dump(sub)["events"])
        return out
    # the resumed run's file starts with a SessionLog that tells readers to drop the
    # purged steps
    assert files(ember) == files(torch)


def test_figure_and_video_events_equal_torch(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def calls(lib, w, rng):
        fig = plt.figure(figsize=(2, 2), dpi=50)
        plt.plot([0, 1], [1, 0])
        w.add_figure("fig", fig, 1)
        figs = [plt.figure(figsize=(2, 2), dpi=50) for _ in range(2)]
        w.add_figure("figs", figs, 2)
    _same_as_torch(tmp_path, calls)
