"""Session 32's element-wise fast paths against their plain paths, at one and two threads:
clamp by numbers as one ``clip`` pass (NOTE [ Clamp by numbers in one pass ]), float32
arithmetic with a broadcast operand in one compiled loop (NOTE [ Broadcast arithmetic in one
loop ]), the sigmoid kernel with SiLU's exp (NOTE [ SiLU's exp ]), and the numba pool's
short spin (NOTE [ The pool's workers spin briefly ])."""

import itertools

import numpy as np
import pytest

import ember
from ember import _parallel
from ember._ops import _elementwise

#: special values whose clamps differ in their bits (signed zeros, NaN, infinities)
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-40, 3e38, -3e38]


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request, monkeypatch):
    """The test at one and at two threads (the split taken whatever the machine's load)."""
    monkeypatch.setattr(_parallel, "contended", lambda: False)
    before = ember.get_num_threads()
    ember.set_num_threads(request.param)
    yield request.param
    ember.set_num_threads(before)


def _same_bits(got, want):
    """Equal values with equal signs of zero, NaN where NaN (payloads aside)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    width = {2: np.uint16, 4: np.uint32, 8: np.uint64}[want.dtype.itemsize]
    np.testing.assert_array_equal(got[~nan].view(width), want[~nan].view(width))


# -- clamp --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_clamp_numbers_signed_zeros_match_torch(threads, dtype):
    torch = pytest.importorskip("torch")
    x = np.array(SPECIAL * 3, dtype)
    for lo, hi in itertools.product(SPECIAL, SPECIAL):
        got = ember.clamp(ember.from_numpy(x), lo, hi).numpy()
        want = torch.clamp(torch.from_numpy(x), lo, hi).numpy()
        _same_bits(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_clamp_numbers_large_equals_minimum_of_maximum(threads, dtype):
    # above the split threshold and not a multiple of the cut; values as the plain path's,
    # which differs from clip only in the sign of a clamped zero (none here)
    n = _parallel.MIN_ELEMENTS * 2 + 5
    x = (np.random.default_rng(0).standard_normal(n) * 10).astype(dtype)
    lo, hi = (-3, 4) if np.dtype(dtype).kind == "i" else (-3.25, 4.5)
    got = ember.clamp(ember.from_numpy(x), lo, hi).numpy()
    want = np.minimum(np.maximum(x, np.array(lo, dtype)), np.array(hi, dtype))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_clamp_numbers_large_splits_on_two_threads(threads, monkeypatch):
    calls = []
    real = _parallel.split_on_threads

    def spy(*args, **kwargs):
        ran = real(*args, **kwargs)
        calls.append(ran)
        return ran

    monkeypatch.setattr(_parallel, "split_on_threads", spy)
    x = np.random.default_rng(1).standard_normal(_parallel.MIN_ELEMENTS + 7).astype(
        np.float32)
    got = ember.clamp(ember.from_numpy(x), -0.5, 0.5).numpy()
    np.testing.assert_array_equal(got, np.clip(x, np.float32(-0.5), np.float32(0.5)))
    assert (True in calls) == (threads == 2)


def test_clamp_numbers_min_above_max_gives_max(threads):
    x = ember.tensor([-2.0, 0.0, 3.0, float("nan")])
    got = ember.clamp(x, 2.0, 1.0).tolist()
    assert got[:3] == [1.0, 1.0, 1.0] and got[3] != got[3]


def test_clamp_numbers_gradient_matches_torch(threads):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(2).standard_normal(1000).astype(np.float32)
    x[:4] = [-0.5, 0.5, 0.0, 2.0]  # the bounds themselves: their gradient passes
    e = ember.from_numpy(x.copy()).requires_grad_(True)
    t = torch.from_numpy(x.copy()).requires_grad_(True)
    ember.clamp(e, -0.5, 0.5).sum().backward()
    torch.clamp(t, -0.5, 0.5).sum().backward()
    np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())


def test_clamp_tensor_bounds_keep_minimum_of_maximum(threads):
    x = np.array(SPECIAL, np.float32)
    lo, hi = np.full_like(x, -0.5), np.full_like(x, 0.0)
    got = ember.clamp(ember.from_numpy(x), ember.from_numpy(lo), ember.from_numpy(hi))
    _same_bits(got.numpy(), np.minimum(np.maximum(x, lo), hi))


# -- arithmetic with a broadcast operand ----------------------------------------------------

_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}
# (larger operand's shape, smaller operand's shape): rows, columns, a channel block, a
# block in the middle, a small operand of more leading ones, a plane of one sample
_SHAPES = [((300, 257), (257,)), ((300, 257), (300, 1)), ((3, 40, 17, 19), (1, 40, 1, 1)),
           ((6, 5, 40, 64), (5, 40, 1)), ((70, 300), (1, 1, 300)), ((1, 80, 300), (80, 1)),
           ((1100, 1024), (1024,)), ((4, 300, 32, 32), (300, 1, 1))]


def _operands(big, small, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(big).astype(np.float32)
    b = rng.standard_normal(small).astype(np.float32)
    a.reshape(-1)[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40]
    b.reshape(-1)[:3] = [0.0, -0.0, np.inf]
    return a, b


@pytest.mark.parametrize("shapes", _SHAPES, ids=lambda s: f"{s[0]}-{s[1]}")
@pytest.mark.parametrize("name", list(_OPS))
def test_broadcast_arith_bits_equal_numpy(threads, shapes, name):
    pytest.importorskip("numba")
    a, b = _operands(*shapes)
    f = _OPS[name]
    with np.errstate(all="ignore"):
        for x, y in ((a, b), (b, a)):  # the broadcast operand second, then first
            got = getattr(ember, name)(ember.from_numpy(x), ember.from_numpy(y)).numpy()
            _same_bits(got, f(x, y))


@pytest.mark.parametrize("shapes", _SHAPES[:4], ids=lambda s: f"{s[0]}-{s[1]}")
def test_broadcast_arith_operators_take_the_compiled_loop(threads, shapes, monkeypatch):
    pytest.importorskip("numba")
    from ember import _kernels

    if not _kernels._fast(np.zeros(1, np.float32)):
        pytest.skip("the numba backend is not in use")
    taken = []
    real = _elementwise._broadcast_arith

    def spy(f, ad, bd):
        r = real(f, ad, bd)
        taken.append(r is not None)
        return r

    monkeypatch.setattr(_elementwise, "_broadcast_arith", spy)
    a, b = _operands(*shapes, seed=3)
    ea, eb = ember.from_numpy(a), ember.from_numpy(b)
    with np.errstate(all="ignore"):
        # (the functions with the broadcast operand first: the operators' inlined case
        # sends a first operand under _BCAST_MIN elements to NumPy's loop)
        pairs = [(ea + eb, a + b), (ea - eb, a - b), (ea * eb, a * b), (ea / eb, a / b),
                 (ember.sub(eb, ea), b - a), (ember.div(eb, ea), b / a)]
    for got, want in pairs:
        _same_bits(got.numpy(), want)
    assert taken == [True] * 6


def test_broadcast_arith_splits_large_outputs_on_two_threads(threads, monkeypatch):
    pytest.importorskip("numba")
    calls = []
    real = _parallel.split_on_threads

    def spy(*args, **kwargs):
        ran = real(*args, **kwargs)
        calls.append(ran)
        return ran

    monkeypatch.setattr(_parallel, "split_on_threads", spy)
    for big, small in (((1100, 1024), (1024,)), ((1, 300, 64, 64), (300, 1, 1))):
        a, b = _operands(big, small, seed=4)
        _same_bits((ember.from_numpy(a) * ember.from_numpy(b)).numpy(), a * b)
    assert (True in calls) == (threads == 2)


@pytest.mark.parametrize("small", [(1,), (1, 1), (), (3, 1, 1)])
def test_broadcast_arith_leaves_other_shapes_to_numpy(small):
    # one value, a short inner run (q = 2..15), a 0-d operand: NumPy's loop runs them
    a = np.random.default_rng(5).standard_normal((3, 64, 4)).astype(np.float32)
    b = np.random.default_rng(6).standard_normal(small).astype(np.float32)
    if len(small) == 3:
        a = np.random.default_rng(5).standard_normal((8, 3, 64, 4)).astype(np.float32)
    assert _elementwise._broadcast_arith(np.add, a, b) is None
    _same_bits((ember.from_numpy(a) + ember.from_numpy(b)).numpy(), a + b)


def test_broadcast_arith_shapes_that_do_not_broadcast_raise():
    a = ember.randn(300, 257)
    with pytest.raises(RuntimeError, match="must match the size"):
        a + ember.randn(256)


def test_broadcast_bias_gradients_match_torch(threads):
    torch = pytest.importorskip("torch")
    a, b = _operands((512, 129), (129,), seed=7)
    g = np.random.default_rng(8).standard_normal((512, 129)).astype(np.float32)
    ea, eb = (ember.from_numpy(v.copy()).requires_grad_(True) for v in (a, b))
    ta, tb = (torch.from_numpy(v.copy()).requires_grad_(True) for v in (a, b))
    ((ea + eb) * eb).backward(ember.from_numpy(g))
    ((ta + tb) * tb).backward(torch.from_numpy(g))
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-5, atol=1e-4)


# -- sigmoid ------------------------------------------------------------------------------------


def test_sigmoid_kernel_bits_equal_the_full_exp_formula(numba_backend):
    # the kernel's quiet exp against the formula with the full exp, on every exponent and
    # sign, NaN payloads included (the whole 2**32 was checked once: NOTE [ SiLU's exp ])
    from numba import njit

    impl = numba_backend
    one = np.float32(1)

    @njit(fastmath=impl._FM, error_model="numpy")
    def full(x, out):
        for j in range(x.size):
            out[j] = one / (one + impl._expf(-x[j]))

    rng = np.random.default_rng(9)
    bits = np.concatenate([rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint64),
                           np.arange(0, 1 << 32, 1 << 12, dtype=np.uint64)]).astype(np.uint32)
    x = bits.view(np.float32)
    got, want = np.empty_like(x), np.empty_like(x)
    impl.sigmoid_into(x, got)
    full(x, want)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_sigmoid_values_match_torch(threads, numba_backend):
    torch = pytest.importorskip("torch")
    x = np.concatenate([np.array(SPECIAL + [-88.0, -87.0, -86.0, 89.0, 100.0], np.float32),
                        np.random.default_rng(10).standard_normal(_parallel.MIN_ELEMENTS)
                        .astype(np.float32) * 20])
    got = ember.sigmoid(ember.from_numpy(x)).numpy()
    want = torch.sigmoid(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=4e-7, atol=0)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))


# -- the pool's spin --------------------------------------------------------------------------


def test_pool_spin_count_is_the_short_one():
    # a spin near 30000 rounds held the second core ~0.5 ms after every pool call, and the
    # two-thread products that followed waited for it (NOTE [ The pool's workers spin
    # briefly ]); the count must stay well below that
    pytest.importorskip("numba")
    from ember._kernels import _numba_par

    assert 0 < _numba_par.SPIN_COUNT <= 5000


def test_inlined_operators_use_the_broadcast_threshold():
    # the operators' inlined case names the threshold as a literal (NOTE [ Operators
    # inlined ] in ember/_ops/arithmetic.py): it must be the module's
    import inspect

    from ember._ops import arithmetic

    src = inspect.getsource(arithmetic._inlined_dunder)
    assert f"ad.size < {_elementwise._BCAST_MIN} or" in src


# -- tanh's and sigmoid's backward in one compiled pass -----------------------------------


@pytest.mark.parametrize("n", [5000, _parallel.MIN_ELEMENTS + 9])
@pytest.mark.parametrize("name", ["sigmoid", "tanh"])
def test_fused_backward_bits_equal_numpy_passes(threads, numba_backend, name, n):
    from ember._ops import pointwise

    rng = np.random.default_rng(11)
    g = rng.standard_normal(n).astype(np.float32)
    y = np.tanh(rng.standard_normal(n).astype(np.float32))
    y[:6] = [np.nan, 1.0, -0.0, 0.0, np.inf, -1.0]
    g[6:9] = [np.inf, np.nan, -0.0]
    one = np.float32(1)
    with np.errstate(all="ignore"):
        if name == "sigmoid":
            got = pointwise._sigmoid_backward_kernel(np, g, y)
            want = (g * (one - y)) * y
        else:
            got = pointwise._tanh_backward_kernel(np, g, y)
            want = (one - y * y) * g
    _same_bits(got, want)


@pytest.mark.parametrize("name", ["sigmoid", "tanh"])
def test_fused_backward_gradients_match_torch(threads, name):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(12).standard_normal(_parallel.MIN_ELEMENTS + 3).astype(
        np.float32) * 3
    g = np.random.default_rng(13).standard_normal(x.size).astype(np.float32)
    e = ember.from_numpy(x.copy()).requires_grad_(True)
    t = torch.from_numpy(x.copy()).requires_grad_(True)
    getattr(ember, name)(e).backward(ember.from_numpy(g))
    getattr(torch, name)(t).backward(torch.from_numpy(g))
    # (the forward values may be an ulp apart, which 1 - y**2 near saturation magnifies
    # relatively: an absolute bound)
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=2e-6)
