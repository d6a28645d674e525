"""Session 27 (issue 22): per-op overhead of the plain path, each shortcut against the
general path it stands in for, and against PyTorch where it is installed.

- NOTE [ Operators inlined ] (ember/_ops/arithmetic.py) reads its kernel from
  ``ElementwiseOp.direct_cpu`` (NOTE [ Direct CPU kernels ] in ember/_ops/_elementwise.py).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import ember
from ember._ops import arithmetic


def _rand(*shape, seed=0, dtype=np.float32):
    r = np.random.default_rng(seed).standard_normal(shape) * 4
    return r.astype(dtype)


_DTYPES = [np.float32, np.float64, np.float16, np.int64, np.int32, np.uint8, np.bool_]


@pytest.mark.parametrize("dtype", _DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", ["__add__", "__mul__", "__sub__", "__truediv__", "__pow__"])
def test_inlined_operator_matches_torch(name, dtype):
    torch = pytest.importorskip("torch")
    a, b = _rand(2, 5, dtype=dtype), _rand(2, 5, seed=1, dtype=dtype)
    if name == "__pow__" and np.dtype(dtype).kind in "iu":
        b = np.abs(b) % 3
    ea, eb, ta, tb = ember.tensor(a), ember.tensor(b), torch.tensor(a), torch.tensor(b)
    for _ in range(2):  # the first call in a dtype fills the kernel table, the next reads it
        try:
            want = getattr(ta, name)(tb)
        except RuntimeError as err:
            # (the words differ for pow of bools: ember says "pow_cpu", torch 2.13 "pow")
            words = "pow" if name == "__pow__" else re.escape(str(err))
            with pytest.raises(RuntimeError, match=words):
                getattr(ea, name)(eb)
            return
        got = getattr(ea, name)(eb)
        assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
        np.testing.assert_allclose(got.numpy().astype(np.float64),
                                   want.numpy().astype(np.float64), rtol=1e-3, atol=1e-3)


def test_inlined_operator_zero_dim_and_strided_results_against_torch():
    torch = pytest.importorskip("torch")
    a, b, c = _rand(3, 4), _rand(3, 4, seed=1), _rand(4, 3, seed=2)
    cases = [
        (lambda T: T.tensor(np.float32(2.5)), lambda T: T.tensor(np.float32(-1.0))),
        (lambda T: T.tensor(a).t(), lambda T: T.tensor(b).t()),  # both transposed
        (lambda T: T.tensor(a).t(), lambda T: T.tensor(c)),  # one of each layout
        (lambda T: T.tensor(c), lambda T: T.tensor(a[0])[:3]),  # broadcast
    ]
    for x, y in cases:
        for _ in range(2):
            got, want = x(ember) + y(ember), x(torch) + y(torch)
            assert tuple(got.shape) == tuple(want.shape)
            assert got.stride() == want.stride()
            np.testing.assert_allclose(got.numpy(), want.numpy())


def test_inlined_operator_broadcast_error_matches_torch():
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as want:
        torch.ones(3) + torch.ones(4)
    for _ in range(2):
        with pytest.raises(RuntimeError) as got:
            ember.ones(3) + ember.ones(4)
        assert str(got.value) == str(want.value)


def _skip_when_slow():
    if ember._dispatch.slow[0]:
        pytest.skip("a CPU kernel was replaced or a mode pushed earlier in this process: the "
                    "operators take the general path from then on")


def test_direct_cpu_kernels_filled_by_first_call():
    _skip_when_slow()
    op = arithmetic.mul_op
    a = ember.ones(3, dtype=ember.float64)
    op.direct_cpu.pop(np.dtype(np.float64), None)
    a * a
    assert op.direct_cpu[np.dtype(np.float64)] is np.multiply


def test_direct_cpu_kernels_forgotten_when_a_kernel_is_registered():
    _skip_when_slow()
    op = arithmetic.mul_op
    a = ember.ones(3)
    a * a
    assert op.direct_cpu
    saved = dict(op.overrides)
    try:
        op.register_kernel("meta", op.resolve(np.ndarray))  # any backend: the table empties
        assert not op.direct_cpu
    finally:
        op.overrides.clear()
        op.overrides.update(saved)
        op.impl.clear()
    assert (a * a).tolist() == [1.0, 1.0, 1.0]


def test_inlined_operator_with_grad_records_against_torch():
    torch = pytest.importorskip("torch")
    x, y = _rand(5), _rand(5, seed=1)
    ea, ta = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    eb, tb = ember.tensor(y), torch.tensor(y)
    er, tr = ea * eb + ea, ta * tb + ta
    assert er.grad_fn.name() == tr.grad_fn.name()
    er.sum().backward()
    tr.sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-6)


# ------------------------------------------------------------------------------------------------
# NOTE [ Plain factory calls ] (ember/_ops/creation.py)

_SIZES = [(10,), (3, 4), ((2, 3),), ([2, 3],), ((),), (0,), (2, 0, 3)]


@pytest.mark.parametrize("size", _SIZES, ids=repr)
@pytest.mark.parametrize("name", ["zeros", "ones"])
def test_plain_factory_call_matches_torch(name, size):
    torch = pytest.importorskip("torch")
    got, want = getattr(ember, name)(*size), getattr(torch, name)(*size)
    assert tuple(got.shape) == tuple(want.shape) and got.stride() == want.stride()
    assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert not got.requires_grad and got.grad_fn is None and got._base is None


def test_plain_factory_call_takes_default_dtype_and_size_type():
    old = ember.get_default_dtype()
    try:
        ember.set_default_dtype(ember.float64)
        assert ember.zeros(2).dtype is ember.float64
        assert ember.ones(ember.Size([2, 1])).dtype is ember.float64
    finally:
        ember.set_default_dtype(old)
    assert ember.zeros(2).dtype is old


def test_plain_factory_call_keeps_default_device_and_errors():
    ember.set_default_device("meta")
    try:
        assert ember.zeros(2).device.type == "meta"
        assert ember.ones((2, 3)).device.type == "meta"
    finally:
        ember.set_default_device(None)
    assert ember.zeros(2).device.type == "cpu"
    for bad in [(-1,), ((2, -1),)]:
        with pytest.raises(RuntimeError, match="negative dimension"):
            ember.zeros(*bad)


def test_plain_factory_call_seen_by_dispatch_modes():
    from ember.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    with Log():
        ember.zeros(3)
        ember.ones(2, 2)
    assert any("zeros" in s for s in seen) and any("ones" in s for s in seen)


# ------------------------------------------------------------------------------------------------
# NOTE [ Plain views ] (ember/_ops/shape.py)


@pytest.mark.parametrize("shape", [(2, 6), ((3, 4),), (-1,), (4, -1), ((2, -1, 3),), (12,),
                                   (-1, -1), (5, -1), (0, -1), (-2, 6), ([3, 4],)], ids=repr)
def test_plain_view_matches_torch(shape):
    torch = pytest.importorskip("torch")
    x = _rand(12)
    results = []
    for T in (ember, torch):
        try:
            v = T.tensor(x).view(*shape)
            results.append((tuple(v.shape), v.stride(), v.numpy().tolist()))
        except RuntimeError as err:
            results.append(str(err))
    assert results[0] == results[1]


def test_plain_view_shares_storage_version_and_history_against_torch():
    torch = pytest.importorskip("torch")
    x = _rand(2, 6)
    grads = []
    for T in (ember, torch):
        leaf = T.tensor(x, requires_grad=True)
        base = leaf * 1
        v = base.view(3, 4)
        assert v.grad_fn.name() == "ViewBackward0"
        assert v._base is base
        w = v.view(12)
        w.mul_(2)  # through a view of a view: the base's history is rewritten
        assert base._version == v._version == w._version == 1
        base.sum().backward()
        grads.append(leaf.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


def test_plain_view_under_no_grad_refuses_inplace_like_torch():
    torch = pytest.importorskip("torch")
    for T in (ember, torch):
        leaf = T.ones(6, requires_grad=True)
        with T.no_grad():
            v = leaf.view(2, 3)
        assert v.requires_grad
        with pytest.raises(RuntimeError):
            v.mul_(2)


def test_plain_view_seen_by_dispatch_modes():
    from ember.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    x = ember.ones(6)
    with Log():
        x.view(2, 3)
    assert any("view" in s for s in seen)


# ------------------------------------------------------------------------------------------------
# the SGD step's per-parameter loop (ember/optim/sgd.py, ember/optim/_flat.py)


@pytest.mark.parametrize("kw", [{}, {"momentum": 0.9}, {"momentum": 0.9, "nesterov": True,
                                                        "weight_decay": 0.01}], ids=repr)
def test_sgd_steps_on_small_parameters_match_torch(kw):
    torch = pytest.importorskip("torch")
    shapes = [(10,), (3, 4), (), (5,), (2, 2)] * 2
    values = [_rand(*s, seed=i) if s else np.float32(i) for i, s in enumerate(shapes)]
    grads = [_rand(*s, seed=50 + i) if s else np.float32(-i) for i, s in enumerate(shapes)]
    out = []
    for T in (ember, torch):
        ps = [T.tensor(np.asarray(v), requires_grad=True) for v in values]
        opt = T.optim.SGD(ps, lr=0.1, **kw)
        for step in range(3):
            for p, g in zip(ps, grads):
                p.grad = T.tensor(np.asarray(g) * (step + 1))
            opt.step()
        bufs = [opt.state[p].get("momentum_buffer") for p in ps]
        out.append(([p.detach().numpy().copy() for p in ps],
                    [None if b is None else b.numpy().copy() for b in bufs]))
    for e, t in zip(out[0][0], out[1][0]):
        np.testing.assert_array_equal(e, t)
    for e, t in zip(out[0][1], out[1][1]):
        assert (e is None) == (t is None)
        if e is not None:
            np.testing.assert_array_equal(e, t)


def test_sgd_step_skips_parameters_without_grad_and_keeps_state_empty():
    ps = [ember.ones(3, requires_grad=True) for _ in range(4)]
    ps[0].grad = ember.ones(3)
    ps[2].grad = ember.ones(3)
    opt = ember.optim.SGD(ps, lr=0.5)
    opt.step()
    assert [p.tolist() for p in ps] == [[0.5] * 3, [1.0] * 3, [0.5] * 3, [1.0] * 3]
    assert len(opt.state) == 0
