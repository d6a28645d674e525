"""Regressions for bug classes of the differential runs against torch: ``x + alpha * y``
(``add``/``sub`` with ``alpha``), ``addcmul``, ``lerp`` and the optimizers' updates rounded
once as torch's fused multiply-add kernels round them (NOTE [ Fused multiply-add as PyTorch's
kernels ]), ``addcdiv``'s order, float64 -> float16 through float32 (NOTE [ Doubles to half
through float ]), comparisons with Python ints outside an integer dtype, embedding_bag's
index dtypes and max ties, rms_norm's op-math and result dtype, layer norm's dtype checks
and F.batch_norm's size check. Each value comparison with torch is bit for bit where the
two compute the same operations; the compiled (numba) and NumPy kernel backends both run
(the numba one skips without numba)."""

from fractions import Fraction

import numpy as np
import pytest

import ember
from ember._ops import _fma


@pytest.fixture(params=["numba", "numpy"])
def backend(request):
    """Each kernel backend in turn, restored afterwards."""
    if request.param == "numba":
        pytest.importorskip("numba")
    from ember import _kernels

    old = _kernels.set_backend(request.param)
    yield request.param
    _kernels.set_backend(old)


def _exact_fma(a, b, c, dtype):
    """``a * b + c`` correctly rounded to ``dtype`` (float32 or float64), from fractions."""
    out = []
    for x, y, z in np.broadcast(a, b, c):
        v = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
        near = dtype(float(v))  # at most one float32 step from the correct rounding
        cands = [np.nextafter(near, dtype(-np.inf)), near, np.nextafter(near, dtype(np.inf))]
        best = min(cands, key=lambda q: (abs(Fraction(float(q)) - v),
                                         int(np.asarray(q).view(np.uint32 if dtype is
                                                                np.float32 else np.uint64)) & 1))
        out.append(best)
    return np.array(out, dtype)


# ------------------------------------------------------------------------------------------------
# the fused multiply-add itself


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fma_is_correctly_rounded(backend, dtype):
    rng = np.random.default_rng(3)
    a, b, c = (rng.standard_normal(400).astype(dtype) for _ in range(3))
    c[:100] *= dtype(2.0 ** 30)  # magnitudes far apart: the sum's low bits matter
    a[100:200] *= dtype(2.0 ** -40)
    np.testing.assert_array_equal(_fma.fma(a, b, c, dtype), _exact_fma(a, b, c, dtype))


def test_fma_float32_double_rounding_corner(backend):
    # a*b + c lies just beside a float32 halfway point that float64 rounds onto: rounding
    # the float64 sum again would go to even, the fused result goes the other way
    x = np.float32(2 ** -12 * (1 + 2 ** -23))
    y = np.float32(2 ** -12 * (1 - 2 ** -23))
    c = np.float32(1 + 2 ** -23)
    a = np.array([x, x, -x], np.float32)
    b = np.array([y, y, y], np.float32)
    cc = np.array([c, -c, -c], np.float32)
    np.testing.assert_array_equal(_fma.fma(a, b, cc, np.float32),
                                  _exact_fma(a, b, cc, np.float32))
    naive = (a.astype(np.float64) * b + cc).astype(np.float32)
    assert (naive != _fma.fma(a, b, cc, np.float32)).any()  # the corner is a real one


def test_fma_zero_dim_and_out(backend):
    out = np.empty(3, np.float32)
    r = _fma.fma(0.5, np.ones(3, np.float32), np.float32(1), np.float32, out=out)
    assert r is out and out.tolist() == [1.5, 1.5, 1.5]
    assert float(_fma.fma(2.0, 3.0, 1.0, np.float64)) == 7.0


# ------------------------------------------------------------------------------------------------
# ops against torch


def _pair(arrays):
    import torch

    return [ember.from_numpy(a.copy()) for a in arrays], [torch.from_numpy(a.copy())
                                                          for a in arrays]


def _same(e, t):
    e, t = e.detach().numpy(), t.detach().numpy()
    assert e.dtype == t.dtype and e.shape == t.shape
    np.testing.assert_array_equal(e, t)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [7, 33, 1000])
def test_add_sub_alpha_bits(backend, dtype, n):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(n)
    a, b = (rng.standard_normal(n).astype(dtype) for _ in range(2))
    (ea, eb), (ta, tb) = _pair([a, b])
    for alpha in (0.3, -1.7, 3, 1e-3):
        _same(ember.add(ea, eb, alpha=alpha), ta.add(tb, alpha=alpha))
        _same(ember.sub(ea, eb, alpha=alpha), ta.sub(tb, alpha=alpha))
        _same(ea.clone().add_(eb, alpha=alpha), ta.clone().add_(tb, alpha=alpha))
        _same(ea.clone().sub_(eb, alpha=alpha), ta.clone().sub_(tb, alpha=alpha))
        out_e = ember.empty(n, dtype=getattr(ember, dtype))
        out_t = torch.empty(n, dtype=getattr(torch, dtype))
        _same(ember.add(ea, eb, alpha=alpha, out=out_e), torch.add(ta, tb, alpha=alpha, out=out_t))


def test_add_alpha_graph_and_gradient():
    torch = pytest.importorskip("torch")
    for T in (ember, torch):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        y = T.tensor([3.0, 4.0], requires_grad=True)
        z = T.sub(x, y, alpha=0.3)
        assert type(z.grad_fn).__name__ == "SubBackward0"
        z.sum().backward()
        assert x.grad.tolist() == [1.0, 1.0]
        assert y.grad.tolist() == pytest.approx([-0.3, -0.3])


def test_add_alpha_other_dtypes_unchanged():
    torch = pytest.importorskip("torch")
    cases = [([1, 2, 3], [4, 5, 6], "int64", 3), ([1.5, 2.25], [4.1, -5.0], "float16", 0.3),
             ([True, False], [True, True], "bool", True)]
    for a, b, dt, alpha in cases:
        e = ember.add(ember.tensor(a, dtype=getattr(ember, dt)),
                      ember.tensor(b, dtype=getattr(ember, dt)), alpha=alpha)
        t = torch.add(torch.tensor(a, dtype=getattr(torch, dt)),
                      torch.tensor(b, dtype=getattr(torch, dt)), alpha=alpha)
        _same(e, t)
    # complex operands and a Python number on the left still take their own kernels
    e = ember.rsub(ember.tensor([1.0, 2.0]), 3, alpha=0.5)
    assert e.tolist() == torch.rsub(torch.tensor([1.0, 2.0]), 3, alpha=0.5).tolist()
    x = ember.tensor([0.3 + 0.2j], dtype=ember.complex128, requires_grad=True)
    ember.acos(x).abs().sum().backward()  # its backward subtracts from a number
    assert x.grad is not None


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_addcmul_addcdiv_lerp_bits(backend, dtype):
    pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    a, b, c = (rng.standard_normal(300).astype(dtype) for _ in range(3))
    (ea, eb, ec), (ta, tb, tc) = _pair([a, b, c])
    for v in (1, 0.7, -0.01):
        _same(ember.addcmul(ea, eb, ec, value=v), ta.addcmul(tb, tc, value=v))
        _same(ember.addcdiv(ea, eb, ec, value=v), ta.addcdiv(tb, tc, value=v))
        _same(ea.clone().addcmul_(eb, ec, value=v), ta.clone().addcmul_(tb, tc, value=v))
        _same(ea.clone().addcdiv_(eb, ec, value=v), ta.clone().addcdiv_(tb, tc, value=v))
    for w in (0.1, 0.9, -0.7, 0.5):
        _same(ember.lerp(ea, eb, w), ta.lerp(tb, w))
        _same(ea.clone().lerp_(eb, w), ta.clone().lerp_(tb, w))
    _same(ember.lerp(ea, eb, ec.abs() / 3), ta.lerp(tb, tc.abs() / 3))
    # the general (broadcasting, graph-recording) path computes the same
    x = ea.clone().requires_grad_()
    _same(ember.addcmul(x, eb, ec[:1], value=0.7), ta.addcmul(tb, tc[:1], value=0.7))
    _same(ember.lerp(x, eb, 0.9), ta.lerp(tb, 0.9))


_OPTIMS = [
    ("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=1e-3)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, maximize=True)),
]


def _steps(lib, cls, kw, p0, grads):
    p = lib.nn.Parameter(lib.from_numpy(p0.copy()))
    opt = getattr(lib.optim, cls)([p], **kw)
    for g in grads:
        p.grad = lib.from_numpy(g.copy())
        opt.step()
    return p.detach().numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cls,kw", _OPTIMS)
def test_sgd_bits(backend, dtype, cls, kw):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    p0 = rng.standard_normal(300).astype(dtype)
    grads = [rng.standard_normal(300).astype(dtype) for _ in range(4)]
    np.testing.assert_array_equal(_steps(ember, cls, kw, p0, grads),
                                  _steps(torch, cls, kw, p0, grads))


def test_sgd_threaded_pieces_bits(monkeypatch):
    """A parameter large enough to be cut over threads (NumPy pieces of ``_sgd_update``)
    gives torch's bits too."""
    torch = pytest.importorskip("torch")
    from ember import _kernels, _parallel

    monkeypatch.setattr(_parallel, "contended", lambda: False)
    old, threads = _kernels.set_backend("numpy"), ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        rng = np.random.default_rng(2)
        n = _kernels.OPTIM_SPLIT + 17
        p0 = rng.standard_normal(n).astype(np.float32)
        grads = [rng.standard_normal(n).astype(np.float32) for _ in range(2)]
        kw = dict(lr=0.1, momentum=0.9, weight_decay=1e-3)
        np.testing.assert_array_equal(_steps(ember, "SGD", kw, p0, grads),
                                      _steps(torch, "SGD", kw, p0, grads))
    finally:
        _kernels.set_backend(old)
        ember.set_num_threads(threads)


@pytest.mark.parametrize("cls,kw", [("Adam", dict(lr=1e-2, weight_decay=0.1)),
                                    ("AdamW", dict(lr=1e-2, weight_decay=0.1)),
                                    ("Adam", dict(lr=1e-2, betas=(0.3, 0.9))),
                                    ("Adadelta", dict(lr=1.0, weight_decay=0.1))])
def test_compiled_steps_equal_op_by_op(cls, kw):
    """The compiled Adam/AdamW/Adadelta steps fuse exactly the multiply-adds the ops fuse,
    so the numba step equals the op-by-op (NumPy backend) step bit for bit."""
    pytest.importorskip("numba")
    from ember import _kernels

    rng = np.random.default_rng(4)
    p0 = rng.standard_normal(500).astype(np.float32)
    grads = [rng.standard_normal(500).astype(np.float32) for _ in range(4)]
    runs = []
    for be in ("numba", "numpy"):
        old = _kernels.set_backend(be)
        try:
            runs.append(_steps(ember, cls, kw, p0, grads))
        finally:
            _kernels.set_backend(old)
    np.testing.assert_array_equal(*runs)


def test_adam_close_to_torch(backend):
    # torch's float32 sqrt is MKL's vector sqrt (not correctly rounded: 1 ulp in about one
    # element in six here), so Adam agrees to a few ulps rather than bit for bit
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    p0 = rng.standard_normal(300).astype(np.float32)
    grads = [rng.standard_normal(300).astype(np.float32) for _ in range(4)]
    kw = dict(lr=1e-2, weight_decay=0.1)
    np.testing.assert_allclose(_steps(ember, "Adam", kw, p0, grads),
                               _steps(torch, "Adam", kw, p0, grads), rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------------------------------------------
# conversions, comparisons, embedding_bag, norms


def test_float64_to_float16_through_float32():
    torch = pytest.importorskip("torch")
    vals = [1 + 2 ** -11 + 2 ** -40, -(1 + 2 ** -11 + 2 ** -40), 0.50024414062500011,
            65519.99999999, 65520.0, 2.9802322387695312e-08 * 1.0000001, 1e-3, float("nan")]
    e64, t64 = ember.tensor(vals, dtype=ember.float64), torch.tensor(vals, dtype=torch.float64)
    ref = t64.to(torch.float16).numpy()
    np.testing.assert_array_equal(e64.to(ember.float16).numpy(), ref)
    np.testing.assert_array_equal(e64.half().numpy(), ref)
    np.testing.assert_array_equal(ember.tensor(vals, dtype=ember.float16).numpy(),
                                  torch.tensor(vals, dtype=torch.float16).numpy())
    np.testing.assert_array_equal(ember.zeros(len(vals), dtype=ember.float16).copy_(e64).numpy(),
                                  ref)
    v = vals[0]
    assert ember.full((2,), v, dtype=ember.float16).tolist() == \
        torch.full((2,), v, dtype=torch.float16).tolist()
    assert ember.tensor(v, dtype=ember.float16).item() == \
        torch.tensor(v, dtype=torch.float16).item()


def test_int_comparisons_wrap_out_of_range_numbers():
    torch = pytest.importorskip("torch")
    for T in (ember, torch):
        u = T.tensor([255, 1, 0], dtype=T.uint8)
        i = T.tensor([127, -128, 44], dtype=T.int8)
        got = [(u == -1).tolist(), (u > -1).tolist(), u.eq(-1).tolist(), (u != 256).tolist(),
               (i == 383).tolist(), (i < 300).tolist(), (i >= -129).tolist()]
        if T is ember:
            mine = got
        else:
            assert mine == got


def test_cosine_embedding_loss_uint8_targets():
    torch = pytest.importorskip("torch")
    args = ([[1, 1, 0, 0, 0, 1], [1, 0, 0, 1, 1, 1], [1, 0, 1, 0, 0, 0]],
            [[0, 0, 1, 1, 1, 0], [0, 1, 1, 0, 1, 1], [0, 0, 0, 0, 1, 1]], [1, 255, 255])
    out = []
    for T in (ember, torch):
        x1, x2, y = (T.tensor(a, dtype=T.uint8) for a in args)
        out.append([T.nn.functional.cosine_embedding_loss(x1, x2, y, reduction=r).tolist()
                    for r in ("none", "mean")])
    assert out[0] == out[1]


def test_embedding_bag_index_dtypes_ties_and_empty_bags():
    torch = pytest.importorskip("torch")
    w = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    nan_w = [[1.5, float("inf"), 1e-38], [-0.01, 0.6, 0.7], [-1.9, -1.2, -float("inf")],
             [-3e38, -0.4, float("nan")], [-1.8, -0.7, 0.6], [float("inf"), 1.8, -1.4]]

    def run(T):
        F = T.nn.functional
        res = []
        for idt, odt in (("int8", "int64"), ("int16", "int64"), ("uint8", "int64"),
                         ("bool", "int64"), ("int16", "int16"), ("float32", "int64")):
            try:
                r = F.embedding_bag(T.tensor([0, 2, 1], dtype=getattr(T, idt)), T.tensor(w),
                                    T.tensor([0, 2], dtype=getattr(T, odt)), mode="max")
                res.append(r.tolist())
            except RuntimeError:
                res.append("RuntimeError")
        try:
            F.embedding_bag(T.tensor([[0, 2]], dtype=T.int8), T.tensor(w))
        except RuntimeError:
            res.append("RuntimeError")
        outs = T.embedding_bag(T.tensor(nan_w), T.tensor([0, 2, 4, 3, 4, 1]),
                               T.tensor([0, 2, 2, 5]), False, 2)
        res.append([o.tolist() for o in outs])
        e = T.embedding_bag(T.empty((0, 1), dtype=T.float64).requires_grad_(),
                            T.empty((0,), dtype=T.int64), T.tensor([0]), False, 0)[0]
        res.append(e.requires_grad)
        return res

    assert repr(run(ember)) == repr(run(torch))


@pytest.mark.filterwarnings("ignore:Mismatch dtype")
@pytest.mark.parametrize("xd", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("wd", [None, "same", "float32", "float64"])
def test_rms_norm_opmath_and_result_dtype(xd, wd):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 16)) * 1e-3
    w = rng.standard_normal(16)
    res = []
    for T in (ember, torch):
        wt = None if wd is None else T.tensor(w, dtype=getattr(T, xd if wd == "same" else wd))
        res.append(T.rms_norm(T.tensor(x, dtype=getattr(T, xd)), [16], wt))
    assert str(res[0].dtype).split(".")[1] == str(res[1].dtype).split(".")[1]
    e, t = (r.to(torch.float64 if isinstance(r, torch.Tensor) else ember.float64).numpy()
            for r in res)
    if xd in ("float16", "bfloat16"):  # the float32 mean of squares rounds away here
        np.testing.assert_array_equal(e, t)
    else:
        np.testing.assert_allclose(e, t, rtol=2e-6 if xd == "float32" else 1e-14)


def test_rms_norm_complex_weight_keeps_input_dtype():
    torch = pytest.importorskip("torch")
    import warnings

    res = []
    for T in (ember, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res.append(T.rms_norm(T.tensor([[0.4, 0.37]]), [2],
                                  T.tensor([1.5 + 0j, -1.75 + 0j], dtype=T.complex128), 1e-6))
    assert str(res[0].dtype) == "ember.float32"
    np.testing.assert_allclose(res[0].numpy(), res[1].numpy(), rtol=1e-6)


def test_layer_norm_dtype_checks_in_torch_order():
    torch = pytest.importorskip("torch")

    def kinds(T):
        z = T.zeros
        cases = [(z(2, 2), z(2, dtype=T.float64), None),
                 (z(2, 2, dtype=T.float64), z(2), None),
                 (z(2, 2, dtype=T.float16), z(2, dtype=T.float16), z(2)),
                 (z(2, 2, dtype=T.float16), z(2), z(2, dtype=T.float16)),
                 (z(2, 2), z(2), z(2, dtype=T.float64)),
                 (z(2, 2, dtype=T.uint8), z(2), z(2)),
                 (z(2, 2, dtype=T.uint8), z(2, dtype=T.uint8), z(2, dtype=T.float16)),
                 (z(2, 2, dtype=T.float16), z(2), z(2))]
        out = []
        for x, w, b in cases:
            for f in (lambda: T.nn.functional.layer_norm(x, [2], w, b),
                      lambda: T.native_layer_norm(x, [2], w, b, 1e-5)):
                try:
                    f()
                    out.append("ok")
                except Exception as e:
                    out.append(f"{type(e).__name__}: {str(e)[:40]}")
        return out

    assert kinds(ember) == kinds(torch)


def test_functional_batch_norm_size_check():
    torch = pytest.importorskip("torch")

    def kinds(T):
        out = []
        for shape in [(1, 0, 1), (1, 3), (1,), (1, 3, 1, 1), (2, 0), (2, 3)]:
            try:
                T.nn.functional.batch_norm(T.zeros(shape), None, None, training=True)
                out.append("ok")
            except ValueError as e:
                out.append(str(e).split(" got")[0])
        return out

    assert kinds(ember) == kinds(torch)
