"""Session 23 (issue 22): the per-op fast paths of small training steps, each against the
plain path it replaces, and against PyTorch where it is installed.

- NOTE [ Shared layout stand-ins ] (ember/autograd/_nodes.py): one read-only stand-in per
  (shape, dtype, strides) for a product's unsaved operand.
- ``record_unary`` holds the output-only recording (NOTE [ Output-only recording ]).
- ``_base.leaf_hooks_seen``: the engine skips looking for a leaf's own hooks until any
  tensor got one.
- ``_affine`` (ember/_ops/nn_ops.py): a small linear layer's product by ``ndarray.dot``
  (NOTE [ Small products by dot ] in ember/_ops/linalg.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._ops import _node_names  # noqa: F401  (node names: the graph torch draws)
from ember._ops import nn_ops
from ember.autograd import _base, _nodes


def _rand(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ------------------------------------------------------------------------------------------------
# shared layout stand-ins


def _held(node, i):
    """What ``node`` keeps in slot ``i``: the tensor itself (a process that has used saved-
    tensor hooks or anomaly mode wraps every saved value in a ``SavedTensor``)."""
    s = node._saved[i]
    return s.t if type(s) is _nodes.SavedTensor else s


def test_layout_stand_in_shared_between_products_of_one_layout():
    x = ember.tensor(_rand(2, 3))
    w = ember.tensor(_rand(3, 4, seed=1), requires_grad=True)
    n1, n2 = (x @ w).grad_fn, (x @ w).grad_fn
    assert n1 is not n2
    assert _held(n1, 1) is _held(n2, 1)  # one stand-in for w's layout
    assert _held(n1, 0) is x  # the data operand is kept for w's gradient
    assert n1._saved_mat2 is None and n1._raw_saved_mat2 is None  # torch leaves it unsaved


def test_layout_stand_in_differs_by_strides():
    x = ember.tensor(_rand(4, 4))
    w = ember.tensor(_rand(4, 4, seed=1), requires_grad=True)
    row = _held((x @ w).grad_fn, 1)
    col = _held((x @ w.t()).grad_fn, 1)
    assert row is not col
    assert row._layout_of_unsaved == w._data.strides
    assert col._layout_of_unsaved == w._data.T.strides


@pytest.mark.parametrize("transposed", [False, True])
def test_layout_stand_in_gradient_against_torch(transposed):
    torch = pytest.importorskip("torch")
    a, b = _rand(3, 5), _rand(5 if transposed else 5, 5, seed=1)
    out = {}
    for fw in (ember, torch):
        w = fw.tensor(b, requires_grad=True)
        x = fw.tensor(a)
        m = w.t() if transposed else w
        for _ in range(2):  # the second product reuses the first one's stand-in
            (x @ m).sum().backward()
        out[fw.__name__] = (w.grad.numpy().copy(), w.grad.stride())
    np.testing.assert_allclose(out["ember"][0], out["torch"][0], rtol=1e-6)
    assert out["ember"][1] == out["torch"][1]


def test_layout_stand_in_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(_nodes, "_LAYOUT_STAND_INS", {})
    monkeypatch.setattr(_nodes, "_LAYOUT_STAND_INS_MAX", 3)
    grads = []
    for k in range(2, 9):
        x = ember.tensor(_rand(2, k))
        w = ember.tensor(_rand(k, 3, seed=k), requires_grad=True)
        (x @ w).sum().backward()
        grads.append((w.grad.numpy(), x.numpy()))
        assert len(_nodes._LAYOUT_STAND_INS) <= 3
    for g, xv in grads:  # d(sum(x @ w))/dw = x^T 1
        np.testing.assert_allclose(g, xv.T @ np.ones((2, 3), np.float32), rtol=1e-6)


def test_layout_stand_in_is_read_only_and_versionless():
    x = ember.tensor(_rand(2, 3))
    w = ember.tensor(_rand(3, 4, seed=1), requires_grad=True)
    st = _held((x @ w).grad_fn, 1)
    assert st._vc is None and not st._rg and st._grad_fn is None
    assert not st._data.flags.writeable


# ------------------------------------------------------------------------------------------------
# record_unary: the simple and the output-only paths against ``record``


def _fields(node):
    return (type(node), node._params, node._meta_in, node._next, node._saved is None,
            node._vers)


@pytest.mark.parametrize("name", ["sum", "mean", "tanh", "exp"])
def test_record_unary_node_equals_records_node(name):
    x = ember.tensor([0.5, -1.0, 2.0], requires_grad=True)
    h = x * 2
    fast = getattr(h, name)()
    plain = h.detach().requires_grad_(False)  # an output to stamp, recorded by ``record``
    plain = getattr(plain, name)()
    _nodes.record(fast.grad_fn._op, (h,), fast.grad_fn._params, plain)
    fn, pn = fast.grad_fn, plain.grad_fn
    assert _fields(fn) == _fields(pn)
    assert (fn._sout is None) == (pn._sout is None)
    (gf,) = ember.autograd.grad(fast.sum(), x, retain_graph=True)
    (gp,) = ember.autograd.grad(plain.sum(), x)
    assert np.array_equal(gf.numpy(), gp.numpy())


def test_record_unary_output_only_under_anomaly_mode_keeps_trace():
    x = ember.tensor([0.5, -1.0], requires_grad=True)
    with ember.autograd.detect_anomaly(check_nan=False):
        y = x.tanh()
    assert getattr(y.grad_fn, "_trace", None) is not None
    assert y.grad_fn._sout is not None


def test_record_unary_output_only_version_error_as_torch():
    torch = pytest.importorskip("torch")
    msgs = {}
    for fw in (ember, torch):
        x = fw.tensor([0.5, -1.0], requires_grad=True)
        y = x.exp()
        with fw.no_grad():
            y.mul_(2)
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
        msgs[fw.__name__] = "modified by an inplace operation" in str(e.value)
    assert msgs["ember"] and msgs["torch"]


# ------------------------------------------------------------------------------------------------
# leaf hooks: the engine's flag


def test_leaf_hook_registered_after_flag_reset_runs(monkeypatch):
    monkeypatch.setattr(_base, "leaf_hooks_seen", False)
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    (w * 3).sum().backward()  # the flag's fast path
    assert w.grad.tolist() == [3.0, 3.0]
    w.grad = None
    seen = []
    w.register_hook(lambda g: g * 10)
    assert _base.leaf_hooks_seen
    w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
    (w * 3).sum().backward()
    assert w.grad.tolist() == [30.0, 30.0]
    assert seen == [[30.0, 30.0]]


def test_post_accumulate_hook_alone_sets_flag(monkeypatch):
    monkeypatch.setattr(_base, "leaf_hooks_seen", False)
    w = ember.tensor([1.0], requires_grad=True)
    seen = []
    w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.item()))
    (w * 4).sum().backward()
    assert seen == [4.0]


def test_backward_without_leaf_hooks_same_grads_as_flagged_path(monkeypatch):
    def run():
        ws = [ember.tensor(_rand(4, 4, seed=s), requires_grad=True) for s in range(3)]
        h = ember.tensor(_rand(1, 4))
        for w in ws:
            h = (h @ w).tanh()
        h.sum().backward()
        return [w.grad.numpy() for w in ws]

    monkeypatch.setattr(_base, "leaf_hooks_seen", False)
    fast = run()
    monkeypatch.setattr(_base, "leaf_hooks_seen", True)
    plain = run()
    for f, p in zip(fast, plain):
        assert np.array_equal(f, p)


# ------------------------------------------------------------------------------------------------
# a small linear layer's product by dot


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 32, 32), (4, 7, 9), (16, 64, 10), (3, 1, 5)])
@pytest.mark.parametrize("order", ["CC", "CF", "FC", "FF"])
def test_affine_dot_bits_equal_gemm(dtype, shape, order):
    m, k, n = shape
    x = _rand(m, k, dtype=dtype)
    w = _rand(n, k, seed=1, dtype=dtype)
    b = _rand(n, seed=2, dtype=dtype)
    if order[0] == "F":
        x = np.asfortranarray(x)
    if order[1] == "F":
        w = np.asfortranarray(w)
    got = nn_ops._affine(np, x, w, b)
    want = nn_ops.gemm(np, x, w.T)
    want += b
    assert got.dtype == want.dtype
    assert np.array_equal(got, want)


def test_affine_strided_input_keeps_gemm():
    x = _rand(4, 16)[:, ::2]  # neither C- nor F-contiguous
    w = _rand(5, 8, seed=1)
    got = nn_ops._affine(np, x, w, None)
    assert np.array_equal(got, nn_ops.gemm(np, x, w.T))


def test_linear_layer_step_against_torch():
    torch = pytest.importorskip("torch")
    xv, wv, bv = _rand(2, 6), _rand(3, 6, seed=1), _rand(3, seed=2)
    out = {}
    for fw in (ember, torch):
        lin = fw.nn.Linear(6, 3)
        with fw.no_grad():
            lin.weight.copy_(fw.tensor(wv))
            lin.bias.copy_(fw.tensor(bv))
        y = lin(fw.tensor(xv))
        y.tanh().sum().backward()
        out[fw.__name__] = (type(y.grad_fn).__name__, y.detach().numpy(),
                            lin.weight.grad.numpy(), lin.bias.grad.numpy())
    e, t = out["ember"], out["torch"]
    assert e[0] == t[0] == "AddmmBackward0"
    for a, b in zip(e[1:], t[1:]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
