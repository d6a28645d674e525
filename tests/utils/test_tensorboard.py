"""ember.utils.tensorboard: event files read back with TensorBoard's own EventAccumulator,
and compared with what torch's SummaryWriter writes for the same calls."""

import glob
import importlib
import io
import os
import sys

import numpy as np
import pytest

import ember

try:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
    from tensorboard.compat.proto.event_pb2 import Event

    from ember.utils.tensorboard import SummaryWriter
    HAS_TENSORBOARD = True
except ImportError:  # the optional extra is not installed: only the import test runs
    HAS_TENSORBOARD = False


@pytest.fixture(autouse=True)
def _needs_tensorboard(request):
    if not HAS_TENSORBOARD and "without_tensorboard" not in request.node.name:
        pytest.skip("tensorboard is not installed (pip install 'ember[tensorboard]')")

try:
    import torch
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    HAS_TORCH = True
except ImportError:  # pragma: no cover
    HAS_TORCH = False
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch's SummaryWriter not available")


def _acc(path):
    acc = EventAccumulator(str(path), size_guidance={"images": 0, "tensors": 0})
    acc.Reload()
    return acc


def _events(path):
    files = sorted(glob.glob(os.path.join(str(path), "events.out.tfevents.*")))
    assert len(files) == 1, files
    return [Event.FromString(r) for r in RawEventFileLoader(files[0]).Load()]


def _png(img_event):
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(img_event.encoded_image_string)))


# --------------------------------------------------------------------------------------------
# the module and the files


def test_import_without_tensorboard_raises_module_not_found(monkeypatch):
    saved = {k: v for k, v in sys.modules.items() if k.startswith("ember.utils.tensorboard")}
    for k in saved:
        monkeypatch.delitem(sys.modules, k)
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    with pytest.raises(ModuleNotFoundError, match="pip install tensorboard"):
        importlib.import_module("ember.utils.tensorboard")
    monkeypatch.undo()
    sys.modules.update(saved)


def test_exports_match_torch_names():
    import ember.utils.tensorboard as tb

    assert set(tb.__all__) == {"FileWriter", "RecordWriter", "SummaryWriter"}


def test_writer_methods_cover_torch():
    if not HAS_TORCH:
        pytest.skip("torch not installed")
    public = {n for n in dir(TorchWriter) if not n.startswith("_")}
    assert public <= set(dir(SummaryWriter))


def test_default_log_dir_is_runs_date_host(tmp_path, monkeypatch):
    import socket

    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_exp")
    w.close()
    (run,) = os.listdir(tmp_path / "runs")
    assert run.endswith("_" + socket.gethostname() + "_exp")
    assert w.get_logdir() == os.path.join("runs", run)


def test_filename_suffix_ends_event_file_name(tmp_path):
    with SummaryWriter(tmp_path, filename_suffix=".mine") as w:
        w.add_scalar("x", 1.0, 0)
    (f,) = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    assert f.endswith(".mine")


def test_purge_step_writes_session_start_at_step(tmp_path):
    with SummaryWriter(tmp_path, purge_step=7) as w:
        w.add_scalar("x", 1.0, 7)
    evs = _events(tmp_path)
    starts = [e for e in evs if e.HasField("session_log")]
    assert len(starts) == 1 and starts[0].step == 7
    assert starts[0].session_log.status == starts[0].session_log.START


def test_flush_makes_events_readable_before_close(tmp_path):
    w = SummaryWriter(tmp_path)
    w.add_scalar("x", 2.0, 3)
    w.flush()
    assert [(e.step, e.value) for e in _acc(tmp_path).Scalars("x")] == [(3, 2.0)]
    w.close()


def test_close_twice_is_harmless_and_writer_reopens(tmp_path):
    w = SummaryWriter(tmp_path)
    w.add_scalar("x", 1.0, 0)
    w.close()
    w.close()
    w.add_scalar("x", 2.0, 1)  # a new event file
    w.close()
    assert len(glob.glob(str(tmp_path / "events.out.tfevents.*"))) == 2


# --------------------------------------------------------------------------------------------
# scalars


def test_add_scalar_reads_back_values_and_steps(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(3):
            w.add_scalar("loss", ember.tensor(1.0 / (step + 1)), step)
    got = [(e.step, round(e.value, 6)) for e in _acc(tmp_path).Scalars("loss")]
    assert got == [(0, 1.0), (1, 0.5), (2, 0.333333)]


def test_add_scalar_accepts_loss_that_requires_grad(tmp_path):
    x = ember.ones(3, requires_grad=True)
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("loss", (x * 2).sum(), 0)
        w.add_scalar("bf16", ember.tensor(1.5, dtype=ember.bfloat16), 0)
    acc = _acc(tmp_path)
    assert acc.Scalars("loss")[0].value == 6.0 and acc.Scalars("bf16")[0].value == 1.5


def test_add_scalar_new_style_is_scalars_plugin_tensor(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("acc", 0.25, 1, new_style=True, double_precision=True)
    (ev,) = [e for e in _events(tmp_path) if e.HasField("summary")]
    v = ev.summary.value[0]
    assert v.metadata.plugin_data.plugin_name == "scalars"
    assert list(v.tensor.double_val) == [0.25]


def test_add_scalar_rejects_many_elements(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(ValueError, match="one element"):
            w.add_scalar("x", ember.ones(3), 0)


def test_add_scalars_writes_one_run_per_key(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_scalars("loss", {"train": 1.0, "val": 2.0}, 5)
    assert {"loss_train", "loss_val"} <= set(os.listdir(tmp_path))
    val = _acc(tmp_path / "loss_val").Scalars("loss")
    assert [(e.step, e.value) for e in val] == [(5, 2.0)]


def test_add_tensor_reads_back_tensor(tmp_path):
    from tensorboard.util import tensor_util

    with SummaryWriter(tmp_path) as w:
        w.add_tensor("t", ember.tensor([[1, 2], [3, 4]]), 0)
    (ev,) = _acc(tmp_path).Tensors("t")
    np.testing.assert_array_equal(tensor_util.make_ndarray(ev.tensor_proto), [[1, 2], [3, 4]])


# --------------------------------------------------------------------------------------------
# histograms


def test_add_histogram_statistics_read_back(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("h", ember.arange(10.0), 1)
    (ev,) = _acc(tmp_path).Histograms("h")
    h = ev.histogram_value
    assert (h.min, h.max, h.num, h.sum, h.sum_squares) == (0, 9, 10, 45, 285)
    assert sum(h.bucket) == 10


@needs_torch
@pytest.mark.parametrize("bins,max_bins", [("tensorflow", None), ("auto", None), (16, 4)])
def test_add_histogram_buckets_match_torch(tmp_path, bins, max_bins):
    x = np.random.default_rng(0).standard_normal(200).astype(np.float32)
    with SummaryWriter(tmp_path / "e") as w:
        w.add_histogram("h", ember.tensor(x), 0, bins=bins, max_bins=max_bins)
    with TorchWriter(tmp_path / "t") as w:
        w.add_histogram("h", torch.tensor(x), 0, bins=bins, max_bins=max_bins)
    (a,), (b,) = _acc(tmp_path / "e").Histograms("h"), _acc(tmp_path / "t").Histograms("h")
    assert a.histogram_value == b.histogram_value


def test_add_histogram_raw_checks_lengths(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(ValueError, match="bucket"):
            w.add_histogram_raw("h", 0, 1, 1, 1, 1, [1.0, 2.0], [1], 0)


# --------------------------------------------------------------------------------------------
# images, figures, video, audio


def test_add_image_chw_float_scales_to_255(tmp_path):
    img = ember.zeros(3, 2, 4)
    img[0] = 1.0
    with SummaryWriter(tmp_path) as w:
        w.add_image("img", img, 0)
    (ev,) = _acc(tmp_path).Images("img")
    px = _png(ev)
    assert (ev.height, ev.width) == (2, 4) and px.shape == (2, 4, 3)
    assert (px[..., 0] == 255).all() and (px[..., 1:] == 0).all()


def test_add_image_hwc_uint8_kept(tmp_path):
    img = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    with SummaryWriter(tmp_path) as w:
        w.add_image("img", ember.tensor(img), 0, dataformats="HWC")
    np.testing.assert_array_equal(_png(_acc(tmp_path).Images("img")[0]), img)


def test_add_image_hw_gray_is_three_channels(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_image("img", ember.full((2, 2), 0.5), 0, dataformats="HW")
    px = _png(_acc(tmp_path).Images("img")[0])
    assert px.shape == (2, 2, 3) and (px == 127).all()


def test_add_image_wrong_rank_raises(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(ValueError, match="input format"):
            w.add_image("img", ember.zeros(2, 2), 0)


def test_add_images_tiles_batch_into_grid(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_images("batch", ember.rand(10, 1, 4, 5), 0)
    ev = _acc(tmp_path).Images("batch")[0]
    assert (ev.height, ev.width) == (8, 40)  # 8 per row, 2 rows


@needs_torch
def test_add_image_png_pixels_match_torch(tmp_path):
    x = np.random.default_rng(1).random((3, 5, 6)).astype(np.float32)
    with SummaryWriter(tmp_path / "e") as w:
        w.add_image("i", ember.tensor(x), 0)
    with TorchWriter(tmp_path / "t") as w:
        w.add_image("i", torch.tensor(x), 0)
    a, b = _acc(tmp_path / "e").Images("i")[0], _acc(tmp_path / "t").Images("i")[0]
    np.testing.assert_array_equal(_png(a), _png(b))


def test_add_image_with_boxes_draws_on_image(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_image_with_boxes("b", ember.zeros(3, 10, 10), ember.tensor([[1, 1, 8, 8]]), 0,
                               labels=["cat"])
    px = _png(_acc(tmp_path).Images("b")[0])
    assert px[1, 4, 0] == 255  # the box's top edge is red


def test_add_figure_renders_matplotlib(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(2, 1), dpi=20)
    plt.plot([0, 1], [1, 0])
    with SummaryWriter(tmp_path) as w:
        w.add_figure("fig", fig, 0)
    ev = _acc(tmp_path).Images("fig")[0]
    assert (ev.height, ev.width) == (20, 40)
    assert not plt.fignum_exists(fig.number)


def test_add_video_writes_animated_gif(tmp_path):
    from PIL import Image

    with SummaryWriter(tmp_path) as w:
        w.add_video("v", ember.rand(2, 3, 3, 4, 4), 0, fps=5)
    ev = _acc(tmp_path).Images("v")[0]
    gif = Image.open(io.BytesIO(ev.encoded_image_string))
    assert gif.format == "GIF" and gif.n_frames == 3 and gif.size == (8, 4)


def test_add_audio_reads_back_wav(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_audio("a", ember.zeros(100), 0, sample_rate=8000)
    (ev,) = _acc(tmp_path).Audio("a")
    assert ev.sample_rate == 8000 and ev.length_frames == 100
    assert ev.encoded_audio_string[:4] == b"RIFF"


# --------------------------------------------------------------------------------------------
# text, hparams, PR curves, custom scalars, mesh


def test_add_text_reads_back(tmp_path):
    from tensorboard.util import tensor_util

    with SummaryWriter(tmp_path) as w:
        w.add_text("notes", "**bold** text", 2)
    acc = _acc(tmp_path)
    assert "notes/text_summary" in acc.PluginTagToContent("text")
    (ev,) = acc.Tensors("notes/text_summary")
    assert tensor_util.make_ndarray(ev.tensor_proto)[0] == b"**bold** text"


def test_add_hparams_writes_experiment_and_metric(tmp_path):
    from tensorboard.plugins.hparams import plugin_data_pb2

    with SummaryWriter(tmp_path) as w:
        w.add_hparams({"lr": 0.1, "opt": "adam", "skip": None}, {"hparam/loss": 0.5},
                      run_name="trial")
    acc = _acc(tmp_path / "trial")
    content = acc.PluginTagToContent("hparams")
    exp = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"])
    assert sorted(h.name for h in exp.experiment.hparam_infos) == ["lr", "opt"]
    assert [m.name.tag for m in exp.experiment.metric_infos] == ["hparam/loss"]
    ssi = plugin_data_pb2.HParamsPluginData.FromString(
        content["_hparams_/session_start_info"]).session_start_info
    assert ssi.hparams["lr"].number_value == 0.1 and ssi.hparams["opt"].string_value == "adam"
    assert [e.value for e in acc.Scalars("hparam/loss")] == [0.5]


def test_add_hparams_rejects_non_dict(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(TypeError, match="dictionary"):
            w.add_hparams([("lr", 0.1)], {})


@needs_torch
def test_add_hparams_plugin_data_matches_torch(tmp_path):
    from tensorboard.plugins.hparams import plugin_data_pb2

    hp, domain = {"lr": 0.1, "bs": 3, "opt": "sgd", "flag": True}, {"opt": ["sgd", "adam"]}
    with SummaryWriter(tmp_path / "e") as w:
        w.add_hparams(hp, {"m": 1.0}, domain, run_name="r")
    with TorchWriter(tmp_path / "t") as w:
        w.add_hparams(hp, {"m": 1.0}, domain, run_name="r")
    for tag in ("_hparams_/experiment", "_hparams_/session_start_info",
                "_hparams_/session_end_info"):
        a, b = (plugin_data_pb2.HParamsPluginData.FromString(
            _acc(tmp_path / d / "r").PluginTagToContent("hparams")[tag]) for d in "et")
        assert a == b


@needs_torch
def test_add_pr_curve_matches_torch(tmp_path):
    from tensorboard.util import tensor_util

    rng = np.random.default_rng(2)
    labels, preds = rng.integers(0, 2, 50), rng.random(50).astype(np.float32)
    with SummaryWriter(tmp_path / "e") as w:
        w.add_pr_curve("pr", ember.tensor(labels), ember.tensor(preds), 0, num_thresholds=11)
    with TorchWriter(tmp_path / "t") as w:
        w.add_pr_curve("pr", torch.tensor(labels), torch.tensor(preds), 0, num_thresholds=11)
    a, b = (tensor_util.make_ndarray(_acc(tmp_path / d).Tensors("pr")[0].tensor_proto)
            for d in "et")
    assert a.shape == (6, 11)
    np.testing.assert_allclose(a, b)


def test_add_pr_curve_raw_reads_back(tmp_path):
    z = np.arange(3.0)
    with SummaryWriter(tmp_path) as w:
        w.add_pr_curve_raw("pr", z, z, z, z, z, z, 0, num_thresholds=3)
    acc = _acc(tmp_path)
    assert "pr" in acc.PluginTagToContent("pr_curves")


def test_add_custom_scalars_layout_reads_back(tmp_path):
    from tensorboard.plugins.custom_scalar import layout_pb2
    from tensorboard.util import tensor_util

    with SummaryWriter(tmp_path) as w:
        w.add_custom_scalars_multilinechart(["loss/train", "loss/val"], "c", "both")
        with pytest.raises(ValueError):
            w.add_custom_scalars_marginchart(["a", "b"])
    (ev,) = _acc(tmp_path).Tensors("custom_scalars__config__")
    layout = layout_pb2.Layout.FromString(tensor_util.make_ndarray(ev.tensor_proto).item())
    assert list(layout.category[0].chart[0].multiline.tag) == ["loss/train", "loss/val"]


def test_add_mesh_writes_vertices(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_mesh("m", ember.rand(1, 5, 3), faces=ember.tensor([[[0, 1, 2]]]))
    tags = _acc(tmp_path).PluginTagToContent("mesh")
    assert set(tags) == {"m_VERTEX", "m_FACE"}


# --------------------------------------------------------------------------------------------
# embeddings


def test_add_embedding_writes_projector_files(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_embedding(ember.tensor([[1.0, 2.0], [3.0, 4.0]]), metadata=["a", "b"],
                        label_img=ember.rand(2, 3, 4, 4), global_step=3, tag="emb/x")
    d = tmp_path / "00003" / "emb%2fx"
    assert (d / "tensors.tsv").read_text() == "1.0\t2.0\n3.0\t4.0\n"
    assert (d / "metadata.tsv").read_text() == "a\nb\n"
    assert (d / "sprite.png").exists()
    cfg = (tmp_path / "projector_config.pbtxt").read_text()
    assert 'tensor_name: "emb/x:00003"' in cfg and "single_image_dim: 4" in cfg


def test_add_embedding_checks_counts(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(ValueError, match="labels"):
            w.add_embedding(ember.zeros(3, 2), metadata=["a"])


@needs_torch
def test_add_embedding_files_match_torch(tmp_path):
    mat = np.random.default_rng(3).random((4, 3)).astype(np.float32)
    meta = [["a", 1], ["b", 2], ["c", 3], ["d", 4]]
    with SummaryWriter(tmp_path / "e") as w:
        w.add_embedding(ember.tensor(mat), metadata=meta, metadata_header=["n", "k"], tag="t")
    with TorchWriter(tmp_path / "t") as w:
        w.add_embedding(torch.tensor(mat), metadata=meta, metadata_header=["n", "k"], tag="t")
    for f in ("00000/t/tensors.tsv", "00000/t/metadata.tsv", "projector_config.pbtxt"):
        assert (tmp_path / "e" / f).read_text() == (tmp_path / "t" / f).read_text()


# --------------------------------------------------------------------------------------------
# the graph


class _Net(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = ember.nn.Linear(3, 4)
        self.fc2 = ember.nn.Linear(4, 2)

    def forward(self, x):
        return self.fc2(ember.relu(self.fc1(x)))


def _graph_nodes(path):
    return {n.name: n for n in _acc(path).Graph().node}


def test_add_graph_has_scoped_ops_params_and_io(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_graph(_Net(), ember.rand(2, 3))
    nodes = _graph_nodes(tmp_path)
    ops = sorted(n.op for n in nodes.values())
    assert ops.count("IO Node") == 2 and ops.count("prim::GetAttr") == 4
    assert "Net" not in nodes  # no stray root
    linear1 = [n for name, n in nodes.items() if name.startswith("_Net/Linear[fc1]/")
               and n.op.startswith("aten::")]
    assert len(linear1) == 1
    assert list(linear1[0].input) == ["input/input.0", "_Net/Linear[fc1]/weight",
                                      "_Net/Linear[fc1]/bias"]
    out = nodes["output/output.0"]
    shape = [d.size for d in out.attr["_output_shapes"].list.shape[0].dim]
    assert shape == [2, 2] and nodes[out.input[0]].op.startswith("aten::")


def test_add_graph_writes_run_metadata(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_graph(_Net(), (ember.rand(1, 3),))
    assert _acc(tmp_path).Tags()["run_metadata"] == ["step1"]


@needs_torch
def test_add_graph_node_kinds_match_torch(tmp_path):
    class TNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(3, 4)
            self.fc2 = torch.nn.Linear(4, 2)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))

    with SummaryWriter(tmp_path / "e") as w:
        w.add_graph(_Net(), ember.rand(2, 3))
    with TorchWriter(tmp_path / "t") as w:
        w.add_graph(TNet(), torch.rand(2, 3))
    e, t = _graph_nodes(tmp_path / "e"), _graph_nodes(tmp_path / "t")
    assert sorted(n.op for n in e.values()) == sorted(n.op for n in t.values())
    scopes = lambda g: {name.rsplit("/", 1)[0].replace("TNet", "Net").replace("_Net", "Net")
                        for name in g if "[" in name}
    assert {s.split("/weight")[0].split("/bias")[0] for s in scopes(t)} == scopes(e)


def test_add_graph_without_inputs_and_constants(tmp_path):
    class Const(ember.nn.Module):
        def forward(self):
            return ember.ones(2) * 3

    with SummaryWriter(tmp_path) as w:
        w.add_graph(Const())
    ops = {n.op for n in _acc(tmp_path).Graph().node}
    assert "IO Node" in ops and any(op.startswith("aten::") for op in ops)


# --------------------------------------------------------------------------------------------
# docstring examples


@pytest.mark.parametrize("name", ["ember.utils.tensorboard", "ember.utils.tensorboard.writer",
                                  "ember.utils.tensorboard.summary",
                                  "ember.utils.tensorboard._convert",
                                  "ember.utils.tensorboard._graph"])
def test_docstring_examples_run(name):
    import doctest

    module = importlib.import_module(name)
    globs = {"ember": ember, "np": np, **vars(module)}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in doctest.DocTestFinder(exclude_empty=True).find(module, name, globs=globs):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


# --------------------------------------------------------------------------------------------
# the examples' --tensorboard option


def _example(name):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_example_tensorboard_option_logs_loss_and_graph(tmp_path):
    _example("digits_cnn").main(["--epochs", "1", "--train-size", "64", "--test-size", "16",
                                 "--out", str(tmp_path / "out"), "--plot", "",
                                 "--tensorboard", str(tmp_path / "tb")])
    acc = _acc(tmp_path / "tb")
    assert len(acc.Scalars("loss/train")) == 1 and len(acc.Scalars("accuracy/test")) == 1
    assert acc.Tags()["graph"]


def test_example_without_tensorboard_option_writes_nothing():
    writer = _example("_tensorboard").open_writer(None)
    writer.add_scalar("loss", 1.0, 0)  # a no-op stand-in
    writer.close()
