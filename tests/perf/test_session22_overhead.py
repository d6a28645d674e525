"""Issue 22, session 22 (helper h22b): per-op Python overhead of small training steps.

Two fast paths, each checked against the path it replaces:

* small real float matrix products run as ``ndarray.dot`` instead of ``np.matmul`` (forward
  and the matmul node's gradients), NOTE [ Small products by dot ] in ember/_ops/linalg.py:
  the premise (same bits as ``np.matmul`` for C/F-contiguous operands) on the NumPy
  installed, ember's results against ``np.matmul`` and against the same product with a
  dispatch mode active (the door's plain path), and the strided and complex cases that keep
  ``np.matmul``;
* recording an op whose formula reads only its output (``tanh``, ``sigmoid``, ``exp``)
  without ``record``'s branches, NOTE [ Output-only recording ] in ember/autograd/_nodes.py:
  the node against the one ``record`` makes, saved-tensor hooks, version checks, anomaly
  mode and the dispatch modes that must still see every op.
"""

import itertools

import numpy as np
import pytest

import ember
from ember.autograd import _nodes
from ember.utils._python_dispatch import TorchDispatchMode


class _Seen(TorchDispatchMode):
    """A mode that runs every op unchanged and lists the ops' names."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(str(func))
        return func(*args, **(kwargs or {}))


def _layouts(a):
    return (a, np.asfortranarray(a))


# ------------------------------------------------------------------------------------------------
# small products by dot


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dot_gives_matmul_bits_on_this_numpy(dtype):
    rng = np.random.default_rng(0)
    sizes = (1, 2, 3, 7, 16, 17, 33, 64)
    for m, k, n in itertools.product(sizes, repeat=3):
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        for x, y in itertools.product(_layouts(a), _layouts(b)):
            want = np.matmul(x, y)
            got = x.dot(y)
            assert got.strides == want.strides
            assert np.array_equal(got, want), (m, k, n)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 32, 32), (4, 7, 3), (3, 1, 5), (0, 3, 2), (2, 0, 3)])
def test_matmul_forward_and_grads_match_np_matmul(dtype, shape):
    m, k, n = shape
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    g = rng.standard_normal((m, n)).astype(dtype)
    for x, y in itertools.product(_layouts(a), _layouts(b)):
        ta = ember.from_numpy(x.copy(order="A")).requires_grad_(True)
        tb = ember.from_numpy(y.copy(order="A")).requires_grad_(True)
        out = ta @ tb
        assert np.array_equal(out.detach().numpy(), np.matmul(x, y))
        out.backward(ember.from_numpy(g))
        assert np.array_equal(ta.grad.numpy(), np.matmul(g, y.T))
        assert np.array_equal(tb.grad.numpy(), np.matmul(x.T, g))


def _step(mode):
    """A 3-layer tanh chain at batch 1, forward and backward; (loss, grads)."""
    rng = np.random.default_rng(2)
    ws = [ember.from_numpy(rng.standard_normal((8, 8)).astype(np.float32)).requires_grad_(True)
          for _ in range(3)]
    h = ember.from_numpy(rng.standard_normal((1, 8)).astype(np.float32))
    if mode is None:
        for w in ws:
            h = (h @ w).tanh()
        loss = (h * h).sum()
        loss.backward()
    else:
        with mode:
            for w in ws:
                h = (h @ w).tanh()
            loss = (h * h).sum()
            loss.backward()
    return loss.detach().numpy(), [w.grad.numpy() for w in ws]


def test_fast_paths_match_the_plain_path_under_a_mode():
    plain_loss, plain_grads = _step(None)
    mode = _Seen()
    loss, grads = _step(mode)
    assert np.array_equal(loss, plain_loss)
    for g, p in zip(grads, plain_grads):
        assert np.array_equal(g, p)
    # the mode saw every product and every tanh, forward and backward
    assert sum("mm" in n for n in mode.names) >= 3 + 5
    assert sum("tanh" in n and "backward" not in n for n in mode.names) == 3
    assert sum("tanh_backward" in n for n in mode.names) == 3


def test_strided_gradient_keeps_np_matmul():
    # ``sum``'s gradient is a broadcast (zero strides): the matmul node must not hand it to
    # ``dot`` (which would copy it first), and the values are np.matmul's
    rng = np.random.default_rng(3)
    a = rng.standard_normal((5, 6)).astype(np.float32)
    b = rng.standard_normal((6, 4)).astype(np.float32)
    ta = ember.from_numpy(a).requires_grad_(True)
    tb = ember.from_numpy(b).requires_grad_(True)
    (ta @ tb).sum().backward()
    g = np.broadcast_to(np.float32(1), (5, 4))
    assert np.array_equal(ta.grad.numpy(), np.matmul(g, b.T))
    assert np.array_equal(tb.grad.numpy(), np.matmul(a.T, g))


def test_strided_operand_keeps_np_matmul():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((6, 10)).astype(np.float32)[:, ::2]
    b = rng.standard_normal((5, 3)).astype(np.float32)
    out = ember.from_numpy(a) @ ember.from_numpy(b)
    assert np.array_equal(out.numpy(), np.matmul(a, b))


def test_complex_products_keep_np_matmul():
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((1, 3)) + 1j * rng.standard_normal((1, 3))).astype(np.complex64)
    b = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(np.complex64)
    for x, y in itertools.product(_layouts(a), _layouts(b)):
        out = ember.from_numpy(x.copy(order="A")) @ ember.from_numpy(y.copy(order="A"))
        assert np.array_equal(out.numpy(), np.matmul(x, y))


def test_small_products_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    a = rng.standard_normal((1, 32)).astype(np.float32)
    ws = [rng.standard_normal((32, 32)).astype(np.float32) / 6 for _ in range(4)]

    def run(fw):
        w = [fw.tensor(x, requires_grad=True) for x in ws]
        h = fw.tensor(a)
        for x in w:
            h = (h @ x).tanh()
        h.sum().backward()
        return h.detach().numpy(), [x.grad.numpy() for x in w]

    (eh, eg), (th, tg) = run(ember), run(torch)
    np.testing.assert_allclose(eh, th, rtol=1e-5, atol=1e-6)
    for x, y in zip(eg, tg):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------------------
# output-only recording


@pytest.mark.parametrize("name", ["tanh", "sigmoid", "exp"])
def test_output_only_node_is_records_node(name, monkeypatch):
    x = ember.tensor([0.1, -0.4, 2.0], requires_grad=True)
    fast = getattr(x * 1, name)()
    assert getattr(ember, name)(x * 1).grad_fn._op in _nodes._out_only
    with monkeypatch.context() as m:
        m.setattr(_nodes, "_out_only", set())  # every op through ``record``
        plain = getattr(x * 1, name)()
    fn, pn = fast.grad_fn, plain.grad_fn
    assert type(fn) is type(pn)
    assert fn._saved is None and pn._saved is None
    assert fn._meta_in == pn._meta_in
    assert np.array_equal(fn._saved_result.detach().numpy(), fast.detach().numpy())
    assert np.array_equal(pn._saved_result.detach().numpy(), plain.detach().numpy())
    (gf,) = ember.autograd.grad(fast.sum(), x)
    (gp,) = ember.autograd.grad(plain.sum(), x)
    assert np.array_equal(gf.numpy(), gp.numpy())


def test_output_only_on_a_leaf_and_against_torch():
    torch = pytest.importorskip("torch")
    vals = [0.3, -1.2, 0.05, 2.5]
    out = {}
    for fw in (ember, torch):
        x = fw.tensor(vals, requires_grad=True)
        y = x.tanh()
        (y.sigmoid() * y.exp()).sum().backward()
        out[fw.__name__] = (type(y.grad_fn).__name__, x.grad.numpy())
    assert out["ember"][0] == out["torch"][0] == "TanhBackward0"
    np.testing.assert_allclose(out["ember"][1], out["torch"][1], rtol=1e-6)


def test_output_only_saved_tensor_hooks_and_version_check():
    x = ember.tensor([0.5, 1.5], requires_grad=True)
    packed = []

    def pack(t):
        packed.append(t)
        return t

    with ember.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = (x * 1).tanh()
    # (``x * 1`` saves nothing, as torch's MulBackward0 with a number): tanh's output only
    assert len(packed) == 1
    assert np.array_equal(packed[0].detach().numpy(), y.detach().numpy())
    y.sum().backward()
    assert x.grad is not None

    z = (x * 2).tanh()
    with ember.no_grad():
        z.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_output_only_under_anomaly_mode_keeps_the_trace():
    x = ember.tensor([0.5, 1.5], requires_grad=True)
    with pytest.warns(UserWarning), ember.autograd.detect_anomaly(check_nan=False):
        y = (x * 1).tanh()
    assert getattr(y.grad_fn, "_trace", None) is not None
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 - np.tanh([0.5, 1.5]) ** 2, rtol=1e-6)


def test_output_only_integer_input_records_nothing():
    y = ember.tensor([1, 2]).exp()  # (an integer input: no grad, no node)
    assert y.grad_fn is None and not y.requires_grad
