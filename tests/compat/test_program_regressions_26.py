"""Regressions found by running public-style PyTorch programs (tests/compat/
test_research_repos_5.py) unchanged under ``python -m ember.compat.run``: each test is a
minimal program of our own that reproduces one failure, checked against torch where torch is
installed."""

import io

import numpy as np
import pytest

import ember

try:
    import torch
    HAS_TORCH = True
except ImportError:  # pragma: no cover
    torch = None
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


# -- pad_sequence's time-major batch is contiguous (bentrevett's seq2seq: trg[1:].view(-1)) --

@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("trailing", [(), (3,)])
def test_pad_sequence_is_contiguous(batch_first, trailing):
    seqs = [ember.ones((4,) + trailing), ember.ones((2,) + trailing)]
    out = ember.nn.utils.rnn.pad_sequence(seqs, batch_first=batch_first)
    assert out.is_contiguous()
    assert out[1:].view(-1).shape == (out[1:].numel(),)


@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_matches_torch_strides(batch_first, side):
    lens, vals = [3, 1, 2], np.arange(6 * 2, dtype=np.float32).reshape(6, 2)
    parts, start = [], 0
    for n in lens:
        parts.append(vals[start:start + n])
        start += n
    got = ember.nn.utils.rnn.pad_sequence([ember.tensor(p) for p in parts], batch_first,
                                          -1.0, side)
    want = torch.nn.utils.rnn.pad_sequence([torch.tensor(p) for p in parts], batch_first,
                                           -1.0, side)
    assert got.stride() == want.stride()
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# -- a traced module runs with the training flags it was traced with --------------------------

def _traced_runs(lib):
    """Trace in eval mode, then call after ``train()`` (and after a save/load round trip),
    and trace in train mode, then call after ``eval()``; what each call gives."""
    net = lib.nn.Sequential()
    net.add_module("bn", lib.nn.BatchNorm1d(3))
    net.add_module("drop", lib.nn.Dropout(0.5))
    lib.manual_seed(0)
    net.bn.running_mean.fill_(0.5)
    x = lib.randn(6, 3)
    traced = lib.jit.trace(net.eval(), x)
    traced.train()
    out = {"flag": traced.training, "eval_traced": traced(x).detach().numpy(),
           "running": net.bn.running_mean.clone().numpy()}
    buf = io.BytesIO()
    lib.jit.save(traced, buf)
    buf.seek(0)
    loaded = lib.jit.load(buf)
    loaded.train()
    out["loaded"] = loaded(x).detach().numpy()
    lib.manual_seed(1)
    traced_train = lib.jit.trace(net.train(), x, check_trace=False)
    traced_train.eval()
    lib.manual_seed(2)
    out["train_traced"] = traced_train(x).detach().numpy()
    out["after"] = (net.training, traced_train.training)
    return out


def test_traced_module_keeps_its_trace_time_training_flags():
    out = _traced_runs(ember)
    assert out["flag"] is True  # the module reports the flag it was set to
    np.testing.assert_allclose(out["running"], [0.5] * 3)  # eval-mode trace: no update
    np.testing.assert_array_equal(out["loaded"], out["eval_traced"])
    assert (out["train_traced"] == 0).any()  # traced in train mode: dropout still drops
    assert out["after"] == (True, False)


@needs_torch
def test_traced_module_training_flags_match_torch():
    got, want = _traced_runs(ember), _traced_runs(torch)
    for key in ("eval_traced", "running", "loaded", "train_traced"):
        np.testing.assert_allclose(got[key], want[key], rtol=1e-6, atol=1e-6, err_msg=key)
    assert got["after"] == want["after"] and got["flag"] == want["flag"]


def test_scripted_module_follows_its_training_flag():
    net = ember.nn.Sequential(ember.nn.Dropout(0.5))
    scripted = ember.jit.script(net.eval())
    scripted.train()
    ember.manual_seed(0)
    assert (scripted(ember.ones(64)) == 0).any()


# -- layer norm of a half input with float32 parameters (autocast's): torch's mixed kernel ----

def _mixed_layer_norm(lib, dtype):
    lib.manual_seed(0)
    x = lib.randn(64, 16).to(dtype).requires_grad_()
    g = (lib.randn(64, 16) * 1e-3).to(dtype)
    w = (lib.randn(16) * 0.1 + 1).requires_grad_()
    b = (lib.randn(16) * 0.1).requires_grad_()
    y, mean, rstd = lib.native_layer_norm(x, (16,), w, b, 1e-5)
    y.backward(g)
    out = {"y": y.detach().float().numpy(), "gx": x.grad.float().numpy(),
           "gw": w.grad.numpy(), "gb": b.grad.numpy(), "dtypes": (str(mean.dtype).split(".")[1],
                                            str(rstd.dtype).split(".")[1],
                                            str(b.grad.dtype).split(".")[1])}
    return out


def test_mixed_layer_norm_keeps_float32_statistics_and_gradients():
    out = _mixed_layer_norm(ember, ember.bfloat16)
    assert out["dtypes"] == ("float32", "float32", "float32")


@needs_torch
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_mixed_layer_norm_matches_torch_bit_for_bit(dtype):
    ember.set_num_threads(2)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # the parameters' gradients depend on the thread count
    try:
        got = _mixed_layer_norm(ember, getattr(ember, dtype))
        want = _mixed_layer_norm(torch, getattr(torch, dtype))
    finally:
        torch.set_num_threads(threads)
    assert got["dtypes"] == want["dtypes"]
    for key in want:
        if key != "dtypes":
            np.testing.assert_array_equal(got[key], want[key], err_msg=key)


# -- a subgraph pattern's input matches a constant argument (FX's replace_pattern) ----------

def _rewritten(lib):
    fx = lib.fx

    def f(x, y):
        return lib.sigmoid(x) + 1, lib.sigmoid(y) + x, lib.relu(x) * 2.0, lib.relu(y) * x

    gm = fx.symbolic_trace(f)
    first = fx.subgraph_rewriter.replace_pattern(
        gm, lambda a, b: lib.sigmoid(a) + b, lambda a, b: lib.tanh(a) - b)
    second = fx.subgraph_rewriter.replace_pattern(
        gm, lambda a, b: lib.relu(a) * b, lambda a, b: lib.relu(a) * b * b)
    bound = sorted(str(v) for k, v in second[0].nodes_map.items() if k.name == "b")
    x, y = lib.tensor([0.5, -1.0]), lib.tensor([2.0, 0.25])
    return len(first), len(second), bound, [t.numpy() for t in gm(x, y)]


def test_replace_pattern_input_matches_a_constant():
    n_first, n_second, bound, outs = _rewritten(ember)
    assert (n_first, n_second) == (2, 2) and "2.0" in bound
    np.testing.assert_allclose(outs[0], np.tanh([0.5, -1.0]) - 1, rtol=1e-6)
    np.testing.assert_allclose(outs[2], [2.0, 0.0], rtol=1e-6)


@needs_torch
def test_replace_pattern_with_constants_matches_torch():
    got, want = _rewritten(ember), _rewritten(torch)
    assert got[:3] == want[:3]
    for a, b in zip(got[3], want[3]):
        np.testing.assert_allclose(a, b, rtol=1e-6)


# -- results that torch lays out contiguously, which programs ``view`` -------------------------

def _layouts(lib):
    lib.manual_seed(0)
    x = lib.randn(4, 3, 5)
    i = lib.tensor([0, 2])
    t = x.transpose(0, 1)
    seqs = [lib.randn(3, 2), lib.randn(1, 2)]
    return {
        "index_mid": x[:, i],
        "index_last": x[..., i],
        "index_2d_col": x[0][:, i],
        "masked_fill_t": t.masked_fill(t > 0, 0),
        "masked_fill_cl": lib.randn(2, 3, 4, 5).to(memory_format=lib.channels_last)
                             .masked_fill(lib.tensor(True), 1.0),
        "one_hot_t": lib.nn.functional.one_hot(lib.tensor([[0, 1], [2, 0]]).t(), 3),
        "unpad": lib.nn.utils.rnn.unpad_sequence(lib.nn.utils.rnn.pad_sequence(seqs),
                                                 lib.tensor([3, 1]))[0],
        "unpack": lib.nn.utils.rnn.unpack_sequence(lib.nn.utils.rnn.pack_sequence(seqs))[0],
    }


@pytest.mark.parametrize("key", sorted(_layouts(ember)))
def test_result_is_contiguous_and_views(key):
    r = _layouts(ember)[key]
    assert r.is_contiguous(), (key, r.stride())
    assert r.view(-1).numel() == r.numel()


@needs_torch
def test_result_layouts_match_torch():
    got, want = _layouts(ember), _layouts(torch)
    for key in want:
        assert got[key].stride() == want[key].stride(), key
        np.testing.assert_array_equal(got[key].numpy(), want[key].numpy(), err_msg=key)


def test_unpacked_sequences_are_copies():
    seqs = [ember.ones(3, 2), ember.ones(1, 2)]
    padded = ember.nn.utils.rnn.pad_sequence(seqs)
    first = ember.nn.utils.rnn.unpad_sequence(padded, ember.tensor([3, 1]))[0]
    first.zero_()
    assert padded.sum().item() == 8.0


# -- reductions give row-major results whatever the input's layout, as torch's do ------------

_REDUCTIONS = {
    "std": lambda lib, x: x.std(-1), "var": lambda lib, x: x.var(1, keepdim=True),
    "logsumexp": lambda lib, x: x.logsumexp(-1), "norm": lambda lib, x: x.norm(dim=-1),
    "vector_norm": lambda lib, x: lib.linalg.vector_norm(x, 1, dim=1, keepdim=True),
    "all": lambda lib, x: (x > 0).all(-1), "any": lambda lib, x: (x > 0).any(1),
    "count_nonzero": lambda lib, x: lib.count_nonzero(x, -1)}


def _reduced(lib, name, layout):
    lib.manual_seed(0)
    x = lib.randn(2, 3, 4, 5)
    x = x.transpose(0, 2) if layout == "transposed" else \
        x.to(memory_format=lib.channels_last)
    return _REDUCTIONS[name](lib, x)


@pytest.mark.parametrize("layout", ["transposed", "channels_last"])
@pytest.mark.parametrize("name", sorted(_REDUCTIONS))
def test_reduction_result_is_row_major(name, layout):
    r = _reduced(ember, name, layout)
    assert r.is_contiguous(), r.stride()


@needs_torch
@pytest.mark.parametrize("layout", ["transposed", "channels_last"])
@pytest.mark.parametrize("name", sorted(_REDUCTIONS))
def test_reduction_result_strides_match_torch(name, layout):
    got, want = _reduced(ember, name, layout), _reduced(torch, name, layout)
    assert got.stride() == want.stride()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
