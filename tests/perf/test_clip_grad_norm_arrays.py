"""``clip_grad_norm_`` straight on the gradients' arrays (NOTE [ Clipping straight on the
arrays ]) against the per-tensor ops, and the 2-norm in PyTorch's lanes (NOTE [ A 2-norm
in PyTorch's lanes ])."""

import math

import numpy as np
import pytest

import ember
from ember.nn.utils import clip_grad

# char_gpt's gradient shapes at small sizes, a one-element and a 0-dim gradient, and a
# transposed (F-contiguous) one
_SHAPES = [(40, 16), (8, 16), (16,), (48, 16), (48,), (64, 16), (16, 64), (1,), (), (3, 1)]


@pytest.fixture(autouse=True)
def _no_observers_left():
    # the array route is taken only while nothing observes ops (``_dispatch.slow``); a
    # test run's earlier tests may leave a replaced kernel or hook registered in this worker
    from ember import _dispatch

    was = _dispatch.slow[0]
    _dispatch.slow[0] = False
    yield
    _dispatch.slow[0] = was


def _params(dtype, seed=0, scale=1.0, transposed=True):
    rng = np.random.default_rng(seed)
    ps = []
    for s in _SHAPES:
        p = ember.nn.Parameter(ember.zeros(s, dtype=dtype))
        g = ember.tensor((rng.standard_normal(s) * scale).astype(dtype))
        p.grad = g
        ps.append(p)
    if transposed:
        p = ember.nn.Parameter(ember.zeros(24, 8, dtype=dtype))
        p.grad = ember.tensor(rng.standard_normal((8, 24)).astype(dtype)).t()
        ps.append(p)
    return ps


def _bits(t):
    return t.detach().numpy().tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3.0, 0.0])
@pytest.mark.parametrize("max_norm", [1.0, 1e6])
def test_arrays_equal_the_per_tensor_ops(monkeypatch, dtype, norm_type, max_norm):
    fast, plain = _params(dtype), _params(dtype)
    assert clip_grad._plain_arrays([p.grad for p in fast]) is not None
    v0 = [p.grad._version for p in fast]
    r_fast = ember.nn.utils.clip_grad_norm_(fast, max_norm, norm_type)
    monkeypatch.setattr(clip_grad, "_plain_arrays", lambda tensors: None)
    w0 = [p.grad._version for p in plain]
    r_plain = ember.nn.utils.clip_grad_norm_(plain, max_norm, norm_type)
    assert r_fast.dtype == r_plain.dtype and r_fast.shape == r_plain.shape == ()
    assert _bits(r_fast) == _bits(r_plain)
    for a, b in zip(fast, plain):
        assert _bits(a.grad) == _bits(b.grad)
    # every gradient was written once, as by ``mul_``
    assert [p.grad._version - v for p, v in zip(fast, v0)] == \
        [p.grad._version - v for p, v in zip(plain, w0)] == [1] * len(fast)


def test_views_and_storage_stay_shared():
    p = ember.nn.Parameter(ember.zeros(4, 6))
    p.grad = ember.arange(24, dtype=ember.float32).reshape(4, 6)
    alias = p.grad.view(24)
    total = ember.nn.utils.clip_grad_norm_([p], 1.0)
    assert abs(float(total) - float(np.linalg.norm(np.arange(24.0)))) < 1e-3
    assert alias._version == p.grad._version == 1
    assert np.array_equal(alias.numpy(), p.grad.numpy().reshape(24))


def test_what_the_arrays_do_not_take():
    take = clip_grad._plain_arrays
    f32 = ember.ones(3)
    assert take([f32]) is not None
    assert take([]) is None
    assert take([f32, ember.ones(3, dtype=ember.float64)]) is None        # two dtypes
    assert take([ember.ones(3, dtype=ember.float16)]) is None
    assert take([ember.ones(0)]) is None                                   # empty
    assert take([ember.ones(1).expand(4)]) is None                         # shared elements


def test_nonfinite_refused_before_anything_is_written():
    ps = _params(np.float32)
    ps[0].grad[0, 0] = math.inf
    before = [p.grad.clone() for p in ps]
    with pytest.raises(RuntimeError, match="non-finite"):
        ember.nn.utils.clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    for p, b in zip(ps, before):
        assert _bits(p.grad) == _bits(b)
    total = ember.nn.utils.clip_grad_norm_(ps, 1.0)
    assert math.isinf(float(total))


def test_a_dispatch_mode_still_sees_each_op():
    from ember.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Spy(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    ps = _params(np.float32, transposed=False)
    with Spy():
        ember.nn.utils.clip_grad_norm_(ps, 1.0)
    # one norm per gradient (a one-element one's too, as PyTorch's), one more for the stack
    norms = len(ps) + 1
    assert sum("linalg_vector_norm" in s for s in seen) == norms
    assert sum("mul_" in s for s in seen) == len(ps)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vector_norm_lanes_are_torchs_bits(numba_backend, dtype):
    torch = pytest.importorskip("torch")
    from ember._kernels import _vnorm

    if _vnorm._AVX512:
        pytest.skip("PyTorch's lanes are 64 bytes wide here")
    rng = np.random.default_rng(1)
    arrays = [(rng.standard_normal(n) * 3).astype(dtype) for n in (1, 3, 7, 8, 9, 1000, 4097,
                                                                     100003)]
    arrays.append(rng.standard_normal((300, 77)).astype(dtype))
    for a in arrays:
        e = ember.linalg.vector_norm(ember.tensor(a))
        t = torch.linalg.vector_norm(torch.tensor(a))
        assert _bits(e) == t.numpy().tobytes(), a.shape
    # a transposed matrix is read in memory order by both
    a = rng.standard_normal((77, 300)).astype(dtype)
    e = ember.linalg.vector_norm(ember.tensor(a).t())
    t = torch.linalg.vector_norm(torch.tensor(a).t())
    assert _bits(e) == t.numpy().tobytes()
    a = arrays[-1]
    e = ember.linalg.vector_norm(ember.tensor(a), dim=(1, 0), keepdim=True)
    t = torch.linalg.vector_norm(torch.tensor(a), dim=(1, 0), keepdim=True)
    assert tuple(e.shape) == tuple(t.shape) and _bits(e) == t.numpy().tobytes()


def test_vector_norm_lanes_match_the_numpy_kernel(numba_backend):
    rng = np.random.default_rng(2)
    for a in (rng.standard_normal(100003).astype(np.float32),
              rng.standard_normal((64, 33)).astype(np.float64)):
        lanes = ember.linalg.vector_norm(ember.tensor(a)).item()
        ember._kernels.set_backend("numpy")
        try:
            plain = ember.linalg.vector_norm(ember.tensor(a)).item()
        finally:
            ember._kernels.set_backend("numba")
        assert lanes == pytest.approx(plain, rel=1e-6)


def test_clip_grad_norm_is_torchs_bits(numba_backend):
    torch = pytest.importorskip("torch")
    from ember._kernels import _vnorm

    if _vnorm._AVX512:
        pytest.skip("PyTorch's lanes are 64 bytes wide here")
    ps = _params(np.float32, seed=3, scale=2.0)
    tp = []
    for p in ps:
        q = torch.nn.Parameter(torch.zeros(tuple(p.shape)))
        q.grad = torch.tensor(p.grad.numpy().copy())
        tp.append(q)
    e = ember.nn.utils.clip_grad_norm_(ps, 0.5)
    t = torch.nn.utils.clip_grad_norm_(tp, 0.5)
    assert _bits(e) == t.numpy().tobytes()
    for p, q in zip(ps, tp):
        assert _bits(p.grad) == q.grad.numpy().tobytes()
