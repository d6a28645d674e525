"""Issue 22, session 33 (helper hkern2): flat kernels split on the vector grid, and on numba's
pool by default.

Every split of a flat kernel (numba's pool and ember's relay alike) cuts at multiples of 64
elements, so that each element meets the loop (vector main loop, vector epilogue or scalar
tail) it meets in one call over the whole array (NOTE [ Flat cuts on the vector grid ] in
ember/_kernels/_numba_par.py): GELU's scalar tail rounds apart from its vector loops. These
tests check the cuts, that the pool's drivers and the relay give one call's bits for every
flat kernel at sizes off the grid, that the public ops give the same bits at one and two
threads on each path (sums included), that the flat kernels now take the pool by default
(NOTE [ Flat kernels on the pool in training steps ]), and the values against PyTorch's.
"""

import numpy as np
import pytest

import ember
from ember import _kernels, _parallel

pytest.importorskip("numba")

GRID = 64


def _values(size, seed=0):
    """Normal values spread over GELU's and exp's ranges, with the special values first."""
    x = np.random.default_rng(seed).standard_normal(size).astype(np.float32) * 6
    x.reshape(-1)[:10] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 90.0, -90.0, 1e-40, -110.0, 88.5]
    return x


def _same(a, b):
    np.testing.assert_array_equal(np.asarray(a).view(np.uint32), np.asarray(b).view(np.uint32))


@pytest.fixture
def par(pool_on):
    """The pool's drivers (``pool_on`` in conftest.py skips where numba's pool cannot run)."""
    return _kernels._pool_drivers()[0]


# sizes off the grid: a cut at size / n lands off it for every n here
SIZES = [(1 << 16) + 1, (1 << 16) + 37, 3 * (1 << 16) + 63, (1 << 18) + 5]


@pytest.mark.parametrize("nch", [2, 3, 4, 7])
@pytest.mark.parametrize("size", SIZES)
def test_flat_drivers_same_bits_as_one_call(par, size, nch):
    from ember._kernels import _numba as k

    x, g = _values(size), _values(size, seed=1)
    for i, name in enumerate(par.UNARY):
        one, got = np.empty_like(x), np.empty_like(x)
        getattr(k, name)(x, one)
        par.unary_on(x, got, nch, i)
        _same(got, one)
    for i, name in enumerate(par.BINARY):
        one, got = np.empty_like(x), np.empty_like(x)
        getattr(k, name)(g, x, one)
        par.binary_on(g, x, got, nch, i)
        _same(got, one)
    for i in range(len(par.ARITH)):
        one, got = np.empty_like(x), np.empty_like(x)
        par.arith_into(x, g, one, i)
        par.arith_on(x, g, got, nch, i)
        _same(got, one)


@pytest.mark.parametrize("nch", [2, 3, 5])
def test_flat_drivers_cut_on_the_grid(par, nch):
    size = 10 * GRID + 17
    assert par.FLAT_ALIGN == GRID == _kernels._FLAT_ALIGN
    cuts = [par._flat_chunk(size, nch, c) for c in range(nch)]
    cuts = [(lo, hi) for lo, hi in cuts if lo < hi]  # (trailing chunks may be empty)
    assert cuts[0][0] == 0 and cuts[-1][1] == size
    for (lo, hi), (nlo, _) in zip(cuts, cuts[1:]):
        assert lo % GRID == 0 and hi == nlo and (hi - lo) % GRID == 0
    assert cuts[-1][0] % GRID == 0


FLAT = {
    "silu": lambda x, g: _kernels.silu(x),
    "gelu": lambda x, g: _kernels.gelu(x)[0],
    "exp": lambda x, g: _kernels.exp(x),
    "sigmoid": lambda x, g: _kernels.sigmoid(x),
    "relu": lambda x, g: _kernels.relu(x),
    "silu_backward": lambda x, g: _kernels.silu_backward(g, x),
    "gelu_backward": lambda x, g: _kernels.gelu_backward(g, x),
}


#: the kernel each entry of ``FLAT`` runs, as ``_kernels`` looks it up on the numba module
KERNELS = {"silu": "silu_into", "gelu": "gelu_out_into", "exp": "exp_into",
           "sigmoid": "sigmoid_into", "relu": "relu_into",
           "silu_backward": "silu_backward_into", "gelu_backward": "gelu_backward_into"}


@pytest.mark.parametrize("name", sorted(FLAT))
def test_relay_cuts_on_the_grid_with_one_calls_bits(two_threads, numba_backend, monkeypatch,
                                                    name):
    """With the pool out of the way the relay splits, on the grid, with one call's bits."""
    size = (1 << 18) + 2 * GRID + 3  # half of it is off the grid
    x, g = _values(size), _values(size, seed=1)
    kernel = getattr(numba_backend, KERNELS[name])
    _kernels._pool_drivers()  # (its first call warms the kernels up: not a piece of ours)
    pieces = []  # (address of the piece's output, its length)

    def recorded(*arrays):
        out = arrays[-1]
        pieces.append((out.__array_interface__["data"][0], out.size))
        kernel(*arrays)

    recorded.__name__ = kernel.__name__
    monkeypatch.setattr(_parallel, "native_split", lambda *a, **k: False)
    with monkeypatch.context() as m:
        m.setattr(numba_backend, KERNELS[name], recorded)
        split = FLAT[name](x, g)
    assert len(pieces) == 2, "the relay did not split the call"
    pieces.sort()
    start = pieces[0][0]
    for address, length in pieces[:-1]:
        assert (address - start) // 4 % GRID == 0 and length % GRID == 0
    assert (pieces[-1][0] - start) // 4 % GRID == 0
    assert (pieces[-1][0] - start) // 4 + pieces[-1][1] == size
    monkeypatch.setattr(_parallel, "split_on_threads", lambda *a, **k: False)
    _same(split, FLAT[name](x, g))


def test_gelu_off_the_grid_would_round_apart(numba_backend):
    """Why the grid matters: GELU's scalar tail gives other bits than its vector loops for
    some inputs, so a piece ending off the grid could change one call's bits (where this
    build's loops happen to round alike there is nothing for the grid to guard)."""
    x = _values(4096, seed=5)
    whole = np.empty_like(x)
    numba_backend.gelu_out_into(x, whole)
    alone = np.empty_like(x)
    for i in range(x.size):  # each element through the scalar loop
        numba_backend.gelu_out_into(x[i:i + 1], alone[i:i + 1])
    finite = np.isfinite(x)
    if np.array_equal(whole[finite].view(np.uint32), alone[finite].view(np.uint32)):
        pytest.skip("GELU's scalar and vector loops round alike in this build")
    np.testing.assert_allclose(alone, whole, rtol=2e-7, atol=0)  # 1 ulp apart at most


def test_flat_kernels_take_the_pool_from_the_threshold(two_threads, pool_on, monkeypatch):
    monkeypatch.setattr(_kernels, "POOL_FLAT_MIN", 1 << 18)  # the default, whatever the env
    x = _values((1 << 18) + 3)
    ran = []
    native = _parallel.native_split

    def counted(f, size, min_size=_parallel.MIN_ELEMENTS):
        ran.append(native(f, size, min_size))
        return ran[-1]

    monkeypatch.setattr(_parallel, "native_split", counted)
    _kernels.silu(x)
    assert ran == [True]
    ran.clear()
    _kernels.silu(x[:(1 << 18) - 1])  # below the threshold: neither the pool nor the relay
    assert ran == []


def _run_ops(x, g, a, b):
    """The public ops whose flat kernels split: forward and backward, arithmetic, sums."""
    F = ember.nn.functional
    out = {}
    for name, f in (("gelu", F.gelu), ("silu", F.silu), ("relu", F.relu),
                    ("sigmoid", ember.sigmoid), ("exp", ember.exp)):
        t = ember.from_numpy(x.copy()).requires_grad_(True)
        y = f(t)
        y.backward(ember.from_numpy(g))
        out[name] = y.detach().numpy().copy()
        out[name + " grad"] = t.grad.numpy().copy()
    ta, tb = ember.from_numpy(a), ember.from_numpy(b)
    for name, r in (("+", ta + tb), ("-", ta - tb), ("*", ta * tb), ("/", ta / tb),
                    ("sum", ta.sum()), ("mean", ta.mean()),
                    ("row sums", ta[:1000 * 1000].reshape(1000, 1000).sum(-1))):
        out[name] = r.numpy().copy()
    return out


@pytest.fixture(scope="module")
def operands():
    size = (1 << 18) + 37
    big = (1 << 20) + 1000 * 3 + 5  # arithmetic splits from 2**20 elements
    x, g = _values(size, seed=2), _values(size, seed=3)
    g[~np.isfinite(g)] = 1.0
    a = np.random.default_rng(4).standard_normal(big).astype(np.float32)
    b = np.random.default_rng(5).standard_normal(big).astype(np.float32) + np.float32(3)
    return x, g, a, b


def test_public_ops_same_bits_on_every_path(two_threads, pool_on, monkeypatch, operands):
    """Two threads on the pool, two on the relay, one thread: the same bits everywhere."""
    monkeypatch.setattr(_kernels, "POOL_FLAT_MIN", 1 << 18)
    ran = []
    native = _parallel.native_split

    def counted(f, size, min_size=_parallel.MIN_ELEMENTS):
        ran.append(native(f, size, min_size))
        return ran[-1]

    with np.errstate(all="ignore"):
        with monkeypatch.context() as m:
            m.setattr(_parallel, "native_split", counted)
            pool = _run_ops(*operands)
        assert sum(ran) >= 10, "the pool did not take the calls"
        with monkeypatch.context() as m:
            m.setattr(_parallel, "native_split", lambda *a, **k: False)
            relay = _run_ops(*operands)
        ember.set_num_threads(1)
        one = _run_ops(*operands)
    for name in one:
        _same(pool[name], one[name])
        _same(relay[name], one[name])


@pytest.mark.parametrize("n_threads", [1, 2])
def test_public_ops_match_torch(monkeypatch, operands, n_threads):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(_parallel, "contended", lambda: False)
    old = ember.get_num_threads()
    ember.set_num_threads(n_threads)
    try:
        with np.errstate(all="ignore"):
            got = _run_ops(*operands)
    finally:
        ember.set_num_threads(old)
    x, g, a, b = operands
    # finite inputs only: PyTorch's own GELU of inf is inf alone and NaN in a vector lane
    keep = np.isfinite(x)
    F = torch.nn.functional
    for name, f in (("gelu", F.gelu), ("silu", F.silu), ("relu", F.relu),
                    ("sigmoid", torch.sigmoid), ("exp", torch.exp)):
        t = torch.from_numpy(x.copy()).requires_grad_(True)
        y = f(t)
        y.backward(torch.from_numpy(g))
        # (GELU's float32 polynomial is ~1e-6 off in the far tails these inputs reach)
        np.testing.assert_allclose(got[name][keep], y.detach().numpy()[keep], rtol=1e-5,
                                   atol=2e-6, err_msg=name)
        np.testing.assert_allclose(got[name + " grad"][keep], t.grad.numpy()[keep],
                                   rtol=1e-4, atol=1e-5, err_msg=name + " grad")
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    for name, r in (("+", ta + tb), ("-", ta - tb), ("*", ta * tb), ("/", ta / tb)):
        np.testing.assert_array_equal(got[name], r.numpy(), err_msg=name)
    np.testing.assert_allclose(got["sum"], ta.sum().numpy(), rtol=1e-5)
    np.testing.assert_allclose(got["mean"], ta.mean().numpy(), rtol=1e-5)
    rows = ta[:1000 * 1000].reshape(1000, 1000).sum(-1).numpy()
    np.testing.assert_allclose(got["row sums"], rows, rtol=1e-5, atol=1e-4)
