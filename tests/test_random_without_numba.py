"""The NumPy-only paths (no numba, or ``EMBER_KERNELS=numpy``) of the fused multiply-add, of
``randperm``'s swaps and of the AVX2 float32 normal blocks give the same bits as the
compiled paths and as PyTorch (NOTE [ Fused multiply-add in cache-sized blocks ], NOTE
[ randperm's swaps at once ], NOTE [ AVX2 normal blocks without numba ]). Each comparison
with numba skips without it; the ones with PyTorch skip without torch; the rest need
neither."""

from fractions import Fraction

import numpy as np
import pytest

import ember
from ember import _kernels
from ember._core import rng_math
from ember._ops import _fma, random_ops


@pytest.fixture
def numpy_backend():
    """The NumPy kernel backend, restored afterwards."""
    old = _kernels.set_backend("numpy")
    yield
    _kernels.set_backend(old)


def _with_backend(name, fn):
    old = _kernels.set_backend(name)
    try:
        return fn()
    finally:
        _kernels.set_backend(old)


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view({4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def _exact_fma(a, b, c, dtype):
    """``a * b + c`` correctly rounded to ``dtype`` (ties to even), from fractions."""
    out = []
    for x, y, z in np.broadcast(a, b, c):
        if not (np.isfinite(x) and np.isfinite(y) and np.isfinite(z)):
            out.append(dtype(x) * dtype(y) + dtype(z))
            continue
        v = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
        big = np.finfo(dtype).max
        ulp = Fraction(float(big)) - Fraction(float(np.nextafter(big, dtype(0))))
        if abs(v) >= Fraction(float(big)) + ulp / 2:
            out.append(dtype(np.inf) if v > 0 else dtype(-np.inf))  # overflows
            continue
        near = dtype(float(v)) if abs(v) <= float(big) else dtype(big) * np.sign(v)
        cands = [np.nextafter(near, dtype(-np.inf)), near, np.nextafter(near, dtype(np.inf))]
        cands = [q for q in cands if np.isfinite(q)]  # (one step from the correct rounding)
        out.append(min(cands, key=lambda q: (abs(Fraction(float(q)) - v),
                                             int(_bits(np.asarray(q)).item()) & 1)))
    return np.array(out, dtype).reshape(np.broadcast_shapes(
        np.shape(a), np.shape(b), np.shape(c)))


def _operands(rng, n, dtype):
    """Random operands with magnitudes far apart, exact ties, zeros and subnormal sums (for
    float32; float64's emulation gives the plain formula's value where a product underflows,
    as its NOTE says, so its operands stay clear of that)."""
    a, b, c = (rng.standard_normal(n).astype(dtype) for _ in range(3))
    q = n // 8
    c[:q] *= dtype(2.0 ** 30)                  # the sum's low bits matter
    a[q:2 * q] *= dtype(2.0 ** -40)
    b[2 * q:3 * q] = dtype(0.5)                # products exact: sums on halfway points
    c[3 * q:4 * q] = -(a[3 * q:4 * q] * b[3 * q:4 * q])  # zero or tiny results
    if dtype == np.float32:
        tiny = dtype(np.finfo(dtype).tiny)
        a[4 * q:5 * q] *= tiny
        c[4 * q:5 * q] *= tiny                 # subnormal results
    return a, b, c


# ------------------------------------------------------------------------------------------------
# the fused multiply-add


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fma_numpy_path_is_correctly_rounded(numpy_backend, dtype):
    rng = np.random.default_rng(11)
    a, b, c = _operands(rng, 800, dtype)
    np.testing.assert_array_equal(_bits(_fma.fma(a, b, c, dtype)),
                                  _bits(_exact_fma(a, b, c, dtype)))
    # the double-rounding corner itself
    x = np.float32(2 ** -12 * (1 + 2 ** -23))
    y = np.float32(2 ** -12 * (1 - 2 ** -23))
    z = np.float32(1 + 2 ** -23)
    a3, b3, c3 = np.array([x, x, -x]), np.array([y, y, y]), np.array([z, -z, -z])
    a3, b3, c3 = (v.astype(np.float32) for v in (a3, b3, c3))
    np.testing.assert_array_equal(_fma.fma(a3, b3, c3, np.float32),
                                  _exact_fma(a3, b3, c3, np.float32))


@pytest.mark.parametrize("scalar", [0.5, 2.0, -1.0, 0.0, -0.0, 2.0 ** -130, 2.0 ** 100, 0.3,
                                    -1e-3, float("inf"), float("nan")])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fma_numpy_path_scalar_factor(numpy_backend, scalar, dtype):
    """One factor a number, powers of two (an exact product: a plain add) included, with
    products that overflow or underflow and non-finite operands."""
    rng = np.random.default_rng(5)
    b, c = (rng.standard_normal(300).astype(dtype) for _ in range(2))
    big = dtype(np.finfo(dtype).max) / dtype(4)
    b[:20] = big
    c[:10] = -big           # an overflowing product that the sum brings back in range
    if dtype == np.float32:  # (float64: see _operands)
        b[20:40] *= dtype(np.finfo(dtype).tiny)
    b[40], c[41], b[42] = np.inf, np.nan, -0.0
    with np.errstate(all="ignore"):
        for got in (_fma.fma(scalar, b, c, dtype), _fma.fma(b, scalar, c, dtype)):
            want = _exact_fma(np.asarray(scalar, dtype), b, c, dtype)
            np.testing.assert_array_equal(_bits(got), _bits(want))


def test_fma_numpy_path_layouts(numpy_backend):
    """Broadcasting, strided operands, 0-d operands, ``out=`` over an operand (in place) and
    over a strided array, across block boundaries."""
    rng = np.random.default_rng(2)
    n = 3 * _fma._BLOCK + 5
    a, b, c = _operands(rng, n, np.float32)
    want = _exact_fma(a[:400], b[:400], c[:400], np.float32)
    x = c.copy()
    assert _fma.fma(a, b, x, np.float32, out=x) is x  # c's buffer written as it is read
    np.testing.assert_array_equal(_bits(x[:400]), _bits(want))
    np.testing.assert_array_equal(_bits(x), _bits(_fma.fma(a, b, c, np.float32)))
    m = rng.standard_normal((40, 30)).astype(np.float32)
    row = rng.standard_normal(30).astype(np.float32)
    col = rng.standard_normal((40, 1)).astype(np.float32)
    zeros = np.array([0.0, -0.0, 1e-30, -1e-30, 3.0], np.float32)
    for args in [(m, row, col), (m.T, m.T, row[:, None] * 3), (row, col, np.float32(0.7)),
                 (m[::2, ::3], m[1::2, ::3], m[::2, 1::3]), (m, row, np.float32(0)),
                 (zeros, zeros[::-1], np.float32(-0.0)), (zeros, np.float32(-1e-20), 0.0),
                 (m, row, np.float32(np.nan))]:
        np.testing.assert_array_equal(_bits(_fma.fma(*args, np.float32)),
                                      _bits(_exact_fma(*args, np.float32)))
    out = np.zeros((30, 40), np.float32).T  # a strided destination
    _fma.fma(m, row, col, np.float32, out=out)
    np.testing.assert_array_equal(_bits(out), _bits(_exact_fma(m, row, col, np.float32)))
    # an operand overlapping the destination shifted by one: NumPy-ufunc semantics
    buf = rng.standard_normal(1000).astype(np.float32)
    want = _exact_fma(np.float32(0.3), buf[:-1], buf[1:], np.float32)
    _fma.fma(np.float32(0.3), buf[:-1], buf[1:], np.float32, out=buf[:-1])
    np.testing.assert_array_equal(_bits(buf[:-1]), _bits(want))
    r = _fma.fma(np.float32(2), np.float32(3), np.float32(1), np.float32)
    assert r.shape == () and float(r) == 7.0
    for x, y, z in [(-0.0, 5.0, 0.0), (-1e-30, 1e-30, 0.0), (-1e-30, 1e-30, -0.0),
                    (0.0, -2.0, 0.0)]:
        got = _fma.fma(np.float32(x), np.float32(y), np.float32(z), np.float32)
        want = _exact_fma(np.float32(x), np.float32(y), np.float32(z), np.float32)
        assert got.shape == () and _bits(got) == _bits(want), (x, y, z)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fma_numpy_path_equals_compiled_fma(dtype):
    pytest.importorskip("numba")
    rng = np.random.default_rng(9)
    n = 2 * _fma._BLOCK + 77
    a, b, c = _operands(rng, n, dtype)
    for args in [(a, b, c), (dtype(0.01), b, c), (a, dtype(-0.9), c), (a, b, dtype(1.5))]:
        with np.errstate(all="ignore"):
            want = _with_backend("numba", lambda: _fma.fma(*args, dtype))
            got = _with_backend("numpy", lambda: _fma.fma(*args, dtype))
        np.testing.assert_array_equal(_bits(got), _bits(want))


# ------------------------------------------------------------------------------------------------
# randperm


def _swap_loop(picks, n):
    r = list(range(n))
    for i, z in enumerate(picks.tolist()):
        j = i + z
        r[i], r[j] = r[j], r[i]
    return np.array(r, dtype=np.int64)


@pytest.mark.parametrize("n", [2, 3, 4, 7, 64, 257, 1000, 4097, 70_000])
def test_swaps_at_once_equal_the_loop(n):
    rng = np.random.default_rng(n)
    spans = np.arange(n, 1, -1, dtype=np.uint64)
    cases = [rng.integers(0, 2 ** 32, n - 1, dtype=np.uint64) % spans,
             np.zeros(n - 1, np.uint64),            # every step swaps with itself
             spans - np.uint64(1),                  # every step swaps with the last element
             np.where(np.arange(n - 1) % 2, spans - np.uint64(1), np.uint64(0)),
             np.minimum(np.uint64(1), spans - np.uint64(1))]  # each with its neighbour
    for picks in cases:
        np.testing.assert_array_equal(random_ops._swaps_at_once(picks, n),
                                      _swap_loop(picks, n))


@pytest.mark.parametrize("n", [257, 5000, 100_000])
def test_randperm_numpy_backend_matches_torch(numpy_backend, n):
    torch = pytest.importorskip("torch")
    ember.manual_seed(7)
    torch.manual_seed(7)
    np.testing.assert_array_equal(ember.randperm(n).numpy(), torch.randperm(n).numpy())
    np.testing.assert_array_equal(ember.get_rng_state().numpy(), torch.get_rng_state().numpy())


def test_randperm_numpy_backend_equals_compiled():
    pytest.importorskip("numba")
    for n in (65, 300, 20_000):
        a = _with_backend("numba", lambda: ember.randperm(n, generator=ember.Generator()
                                                          .manual_seed(n)))
        b = _with_backend("numpy", lambda: ember.randperm(n, generator=ember.Generator()
                                                          .manual_seed(n)))
        np.testing.assert_array_equal(a.numpy(), b.numpy())


# ------------------------------------------------------------------------------------------------
# AVX2 float32 normal blocks


def _uniforms(rng, n):
    """Multiples of 2**-24 in [0, 1) (what the blocks see), edge values first."""
    k = rng.integers(0, 2 ** 24, n)
    edges = [0, 1, 2, 3, 2 ** 23, 2 ** 24 - 1, 2 ** 24 - 2, 2 ** 22, 3 * 2 ** 21]
    # angles next to the multiples of pi/4 where the reduction switches quadrant
    edges += [int(round(q / 8 * 2 ** 24)) + d for q in range(1, 8) for d in (-1, 0, 1)]
    k[:len(edges)] = edges
    return (k * 2.0 ** -24).astype(np.float32)


@pytest.mark.parametrize("mean,std", [(0.0, 1.0), (0.3, 0.02), (-2.0, 3.5), (0.0, 1e-40)])
def test_normal_blocks_numpy_path_equals_compiled(mean, std):
    pytest.importorskip("numba")
    u = _uniforms(np.random.default_rng(4), 1 << 16)
    want = _with_backend("numba", lambda: rng_math.normal16_avx2(u, mean, std))
    got = _with_backend("numpy", lambda: rng_math.normal16_avx2(u, mean, std))
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_normal_blocks_fast_functions_equal_exact_ones():
    """The fast log and sin/cos against the exactly emulated ones (no numba needed)."""
    u = _uniforms(np.random.default_rng(8), 4096)
    h = np.empty(u.size)
    one, two_pi = np.float32(1), np.float32(2 * np.pi)
    np.testing.assert_array_equal(_bits(rng_math._log_avx2_fast(one - u, h)),
                                  _bits(rng_math._log_avx2(one - u)))
    for fast, exact in zip(rng_math._sincos_avx2_fast(two_pi * u, h),
                           rng_math._sincos_avx2(two_pi * u)):
        np.testing.assert_array_equal(_bits(fast), _bits(exact))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("n", [16, 1000, 70_000])
def test_randn_numpy_backend_matches_torch(numpy_backend, dtype, n):
    torch = pytest.importorskip("torch")
    if rng_math.cpu_capability() != "avx2":
        pytest.skip("the AVX2 build's blocks are what this compares")
    ember.manual_seed(3)
    torch.manual_seed(3)
    e = ember.randn(n, dtype=getattr(ember, dtype)).float().numpy()
    t = torch.randn(n, dtype=getattr(torch, dtype)).float().numpy()
    np.testing.assert_array_equal(_bits(e), _bits(t))
    e = ember.empty(n, dtype=getattr(ember, dtype)).normal_(0.3, 0.02).float().numpy()
    t = torch.empty(n, dtype=getattr(torch, dtype)).normal_(0.3, 0.02).float().numpy()
    np.testing.assert_array_equal(_bits(e), _bits(t))
    np.testing.assert_array_equal(ember.get_rng_state().numpy(), torch.get_rng_state().numpy())


# ------------------------------------------------------------------------------------------------
# uniform_ with a range (NOTE [ Uniform floats fused without the halfway check ])


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_uniform_range_matches_torch(backend, dtype):
    torch = pytest.importorskip("torch")
    if backend == "numba":
        pytest.importorskip("numba")
    ranges = [(-0.1, 0.1), (0.0, 5.0), (-3.0, -1.0), (1e-30, 1.0), (2.0, 2.0), (1e-3, 1e3),
              (-1e30, 1e30), (0.75, 1.0), (-2.0 ** -130, 2.0 ** -130), (-1.0, 3e7)]
    if dtype == "float16":  # (bounds past float16's range are refused)
        ranges = [(a, b) for a, b in ranges if max(abs(a), abs(b)) < 6e4]

    def draw(T):
        T.manual_seed(5)
        return [T.empty(3000, dtype=getattr(T, dtype)).uniform_(a, b).float().numpy()
                for a, b in ranges]

    got = _with_backend(backend, lambda: draw(ember))
    for g, t, r in zip(got, draw(torch), ranges):
        np.testing.assert_array_equal(_bits(g), _bits(t), err_msg=str(r))


def test_exact_in_double_bounds():
    f = np.float32
    assert random_ops._exact_in_double(f(0.2), f(-0.1))
    assert random_ops._exact_in_double(f(1e10), f(0))
    assert not random_ops._exact_in_double(f(1e-3), f(1e3))  # low far above the span
    assert not random_ops._exact_in_double(f(1.0), f(1e-30))  # low far below
    assert not random_ops._exact_in_double(f(np.inf), f(0))
