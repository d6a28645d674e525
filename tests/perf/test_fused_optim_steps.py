"""The compiled SGD and Adadelta steps (NOTE [ Fused optimizer steps ] in
ember/_kernels/_train.py) against the op-by-op update and against torch."""

import numpy as np
import pytest

import ember
from ember import _kernels

pytest.importorskip("numba")


def _trajectory(fw, make_opt, steps=3, foreach=None):
    rng = np.random.default_rng(0)
    shapes = [(7, 5), (5,), (3, 4, 2)]
    params = [fw.from_numpy(rng.standard_normal(s).astype(np.float32)).requires_grad_()
              for s in shapes]
    opt = make_opt(fw, params, foreach)
    for _ in range(steps):
        for p in params:
            p.grad = fw.from_numpy(rng.standard_normal(tuple(p.shape)).astype(np.float32))
        opt.step()
    return [p.detach().numpy().copy() for p in params]


_SGD = [dict(lr=0.1, momentum=0.9), dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
        dict(lr=0.05, momentum=0.5, dampening=0.3, maximize=True), dict(lr=0.1),
        dict(lr=0.1, momentum=0.9, weight_decay=0.01)]  # (the last: the compiled common loop)
_ADADELTA = [dict(), dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1, maximize=True)]


def _sgd(kw):
    return lambda fw, params, foreach: fw.optim.SGD(params, foreach=foreach, **kw)


def _adadelta(kw):
    return lambda fw, params, foreach: fw.optim.Adadelta(params, foreach=foreach, **kw)


@pytest.mark.parametrize("make", [_sgd(kw) for kw in _SGD] + [_adadelta(kw) for kw in _ADADELTA])
@pytest.mark.parametrize("foreach", [None, False])
def test_fused_step_equals_op_by_op(numba_backend, make, foreach):
    fast = _trajectory(ember, make, foreach=foreach)
    _kernels.set_backend("numpy")
    plain = _trajectory(ember, make, foreach=foreach)
    for a, b in zip(fast, plain):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("make", [_sgd(_SGD[1]), _adadelta(_ADADELTA[1])])
def test_fused_step_matches_torch(numba_backend, make):
    torch = pytest.importorskip("torch")
    for a, b in zip(_trajectory(ember, make), _trajectory(torch, make)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_fused_steps_run_in_the_optimizers(numba_backend, monkeypatch):
    calls = []
    for name in ("sgd", "adadelta"):
        real = getattr(_kernels, name)
        monkeypatch.setattr(_kernels, name, lambda *a, _r=real, _n=name, **k: calls.append(_n)
                            or _r(*a, **k))
    _trajectory(ember, _sgd(_SGD[0]))
    _trajectory(ember, _adadelta(_ADADELTA[0]))
    assert "sgd" in calls and "adadelta" in calls


def test_fused_steps_decline_other_arrays(numba_backend):
    p = np.ones(4, np.float32)
    kw = dict(lr=0.1, momentum=0.9, dampening=0.0, weight_decay=0.0, nesterov=False,
              maximize=False)
    assert not _kernels.sgd(p, p.copy(), None, **kw)  # the first step makes the buffer
    assert not _kernels.sgd(p.astype(np.float64), p.astype(np.float64), p.astype(np.float64),
                            **kw)
    assert not _kernels.sgd(p, p[:2].copy(), p.copy(), **kw)
    ro = p.copy()
    ro.flags.writeable = False
    assert not _kernels.adadelta(ro, p, p.copy(), p.copy(), lr=1.0, rho=0.9, eps=1e-6,
                                 weight_decay=0.0, maximize=False)
    np.testing.assert_array_equal(p, np.ones(4, np.float32))
