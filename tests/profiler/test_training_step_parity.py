"""Whole training steps profiled side by side with PyTorch: the rows of ``key_averages()``
(names, call counts, input shapes) for the ops both run, the backward nodes of Linear and
cross entropy (NOTE [ Linear under the profiler ], NOTE [ Cross entropy under the
profiler ] in ember/_ops/nn_ops.py) and the trace's flow arrows."""

import collections
import contextlib
import json

import pytest

import ember

torch = pytest.importorskip("torch")

#: PyTorch's allocation and bookkeeping ops, which ember's kernels do not run as ops
_INTERNAL = {"aten::empty", "aten::empty_strided", "aten::empty_like", "aten::as_strided",
             "aten::as_strided_", "aten::resolve_conj", "aten::copy_", "aten::detach",
             "detach", "aten::resize_", "aten::fill_", "aten::zero_", "aten::to",
             "aten::_to_copy", "aten::item", "aten::_local_scalar_dense", "aten::clone",
             "aten::ones_like", "aten::zeros_like", "aten::expand", "aten::transpose",
             "aten::view", "aten::reshape", "aten::_reshape_alias", "aten::_unsafe_view"}


def _mlp(lib):
    lib.manual_seed(0)
    m = lib.nn.Sequential(lib.nn.Linear(8, 16), lib.nn.ReLU(), lib.nn.Linear(16, 4))
    # (per parameter, as PyTorch's loop: by default ember updates them as one flat buffer)
    opt = lib.optim.SGD(m.parameters(), lr=0.1, foreach=False)
    x, y = lib.randn(5, 8), lib.tensor([0, 1, 2, 3, 0])

    def step():
        opt.zero_grad()
        lib.nn.functional.cross_entropy(m(x), y).backward()
        opt.step()
    return step


def _cnn(lib):
    lib.manual_seed(0)
    nn = lib.nn
    m = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 10))
    opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    x, y = lib.randn(2, 3, 8, 8), lib.tensor([1, 2])

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(m(x), y).backward()
        opt.step()
    return step


def _gpt_block(lib):
    lib.manual_seed(0)
    nn, F = lib.nn, lib.nn.functional
    ln, qkv, proj = nn.LayerNorm(16), nn.Linear(16, 48), nn.Linear(16, 16)
    params = [*ln.parameters(), *qkv.parameters(), *proj.parameters()]
    opt = lib.optim.AdamW(params, lr=1e-3, foreach=False)
    x = lib.randn(2, 5, 16)

    def step():
        opt.zero_grad()
        q, k, v = (t.reshape(2, 5, 2, 8).transpose(1, 2)
                   for t in qkv(ln(x)).split(16, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out = x + proj(F.gelu(y.transpose(1, 2).reshape(2, 5, 16)))
        out.pow(2).mean().backward()
        opt.step()
    return step


def _rows(lib, program, shapes=False):
    step = program(lib)
    step()
    with lib.profiler.profile(record_shapes=shapes) as prof:
        step()
    return collections.Counter({
        (e.key, str(e.input_shapes) if shapes else ""): e.count
        for e in prof.key_averages(group_by_input_shape=shapes) if e.key not in _INTERNAL})


_MLP_ROWS = ["aten::linear", "aten::addmm", "aten::t", "aten::mm", "aten::sum", "aten::relu",
             "aten::clamp_min",
             "aten::cross_entropy_loss", "aten::log_softmax", "aten::_log_softmax",
             "aten::nll_loss_nd", "aten::nll_loss", "aten::nll_loss_forward",
             "NllLossBackward0", "aten::nll_loss_backward", "LogSoftmaxBackward0",
             "aten::_log_softmax_backward_data", "AddmmBackward0", "TBackward0",
             "autograd::engine::evaluate_function: TBackward0", "ReluBackward0",
             "aten::threshold_backward", "torch::autograd::AccumulateGrad",
             "Optimizer.step#SGD.step", "aten::add_"]


@pytest.mark.parametrize("x_shape", [(5, 8), (2, 5, 8), (8,)])
def test_linear_forward_rows_as_torch(x_shape):
    def rows(lib):
        lib.manual_seed(0)
        m, x = lib.nn.Linear(8, 4), lib.randn(*x_shape)
        with lib.profiler.profile(record_shapes=True) as prof:
            m(x)
        return sorted((e.key, str(e.input_shapes), e.count)
                      for e in prof.key_averages(group_by_input_shape=True)
                      if e.key not in _INTERNAL and e.key != "aten::randn")
    assert rows(ember) == rows(torch)


@pytest.mark.parametrize("shapes", [False, True])
def test_mlp_step_rows_as_torch(shapes):
    mine, theirs = _rows(ember, _mlp, shapes), _rows(torch, _mlp, shapes)
    for (key, sh), n in theirs.items():
        if key in _MLP_ROWS:
            assert mine.get((key, sh)) == n, (key, sh)


def test_cnn_step_rows_as_torch():
    mine, theirs = _rows(ember, _cnn), _rows(torch, _cnn)
    for key in ("aten::conv2d", "aten::convolution", "aten::batch_norm",
                "aten::native_batch_norm", "aten::relu", "aten::clamp_min",
                "aten::max_pool2d", "aten::max_pool2d_with_indices", "aten::flatten",
                "aten::linear", "aten::addmm", "aten::cross_entropy_loss",
                "aten::log_softmax", "aten::nll_loss_nd", "NllLossBackward0",
                "LogSoftmaxBackward0", "AddmmBackward0", "TBackward0",
                "ConvolutionBackward0", "NativeBatchNormBackward0",
                "MaxPool2DWithIndicesBackward0", "Optimizer.step#SGD.step"):
        assert mine[(key, "")] == theirs[(key, "")] > 0, key


def test_gpt_block_rows_and_shapes_as_torch():
    mine, theirs = _rows(ember, _gpt_block, True), _rows(torch, _gpt_block, True)
    # (SDPA's outer event lists ember's causal mask; backward nodes list the gradients)
    for key in ("aten::layer_norm", "aten::native_layer_norm", "aten::linear", "aten::addmm",
                "aten::gelu", "aten::_scaled_dot_product_flash_attention_for_cpu",
                "AddmmBackward0", "TBackward0", "Optimizer.step#AdamW.step"):
        want = {k: n for k, n in theirs.items() if k[0] == key}
        assert want and {k: n for k, n in mine.items() if k[0] == key} == want, key


@pytest.mark.parametrize("shape", [(3, 5), (2, 5, 3), (2, 5, 3, 3)])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_nll_node_names_as_torch(shape, reduction):
    def names(lib):
        x = lib.zeros(shape, requires_grad=True)
        t = lib.zeros((shape[0],) + shape[2:], dtype=lib.int64)
        F = lib.nn.functional
        return (type(F.nll_loss(x, t, reduction=reduction).grad_fn).__name__,
                type(F.cross_entropy(x, t, reduction=reduction).grad_fn).__name__)
    assert names(ember) == names(torch)


def test_profiled_steps_compute_what_unprofiled_ones_do():
    import numpy as np

    def weights(profiled):
        ember.manual_seed(0)
        m = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.ReLU(),
                                ember.nn.Linear(16, 4))
        opt = ember.optim.Adam(m.parameters(), lr=0.1)
        x, y = ember.randn(5, 8), ember.tensor([0, 1, 2, 3, 0])
        for _ in range(3):
            with ember.profiler.profile() if profiled else contextlib.nullcontext():
                opt.zero_grad()
                ember.nn.functional.cross_entropy(m(x), y).backward()
                opt.step()
        return [p.detach().numpy() for p in m.parameters()]
    for a, b in zip(weights(False), weights(True)):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def _trace(lib, path):
    lib.manual_seed(0)
    m = lib.nn.Linear(4, 3)
    x = lib.randn(2, 4)
    with lib.profiler.profile(record_shapes=True) as prof:
        m(x).sum().backward()
    prof.export_chrome_trace(str(path))
    return json.loads(path.read_text())["traceEvents"]


def test_trace_flows_and_window_end_as_torch(tmp_path):
    mine, theirs = _trace(ember, tmp_path / "e.json"), _trace(torch, tmp_path / "t.json")

    def flows(events):
        starts = {e["id"]: e["ts"] for e in events if e["ph"] == "s" and e["cat"] == "fwdbwd"}
        ops = [e for e in events if e["ph"] == "X" and e.get("cat") == "cpu_op"]
        return sorted(o["name"] for ts in starts.values() for o in ops if o["ts"] == ts)
    # the forward ops with an arrow to their backward node: t (TBackward0), addmm, sum
    assert flows(mine) == flows(theirs) == ["aten::addmm", "aten::sum", "aten::t"]
    for events in (mine, theirs):
        assert [e["name"] for e in events if e["ph"] == "i" and e.get("s") == "g"] == \
            ["Iteration Start: PyTorch Profiler", "Record Window End"]
