"""SGD's op-by-op update is written once (NOTE [ One SGD update ] in ember/optim/sgd.py):
run on NumPy arrays (the threaded pieces) it gives, bit for bit, what it gives on tensors
(the loop), for every option, the first step's momentum buffer included, and the pieces
and the loop agree with PyTorch."""

import numpy as np
import pytest

import ember
from ember import _kernels
from ember.optim import sgd as sgd_module

_CASES = [
    {"momentum": 0.9},
    {"momentum": 0.9, "nesterov": True, "weight_decay": 1e-2},
    {"momentum": 0.5, "dampening": 0.25, "maximize": True},
    {"weight_decay": 1e-3, "maximize": True},
    {},
]


def _options(opts):
    full = dict(lr=0.1, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                maximize=False)
    full.update(opts)
    return full


def _steps(ops, opts, dtype, steps=3):
    rng = np.random.default_rng(3)
    p = rng.standard_normal(1001).astype(dtype)
    grads = [rng.standard_normal(1001).astype(dtype) for _ in range(steps)]
    kw = _options(opts)
    if ops is sgd_module._TensorMath:
        p, grads = ember.from_numpy(p), [ember.from_numpy(g) for g in grads]
    buf = None
    for g in grads:
        buf = sgd_module._sgd_update(ops, p, g, buf, kw["lr"], kw["momentum"],
                                     kw["dampening"], kw["weight_decay"], kw["nesterov"],
                                     kw["maximize"])
    as_array = (lambda t: t.numpy()) if ops is sgd_module._TensorMath else (lambda a: a)
    return as_array(p), None if buf is None else as_array(buf)


@pytest.mark.parametrize("opts", _CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_arrays_give_the_tensor_bits(opts, dtype):
    on_tensors = _steps(sgd_module._TensorMath, opts, dtype)
    on_arrays = _steps(sgd_module._ArrayMath, opts, dtype)
    assert (on_arrays[1] is None) == (opts.get("momentum", 0) == 0)
    for a, b in zip(on_arrays, on_tensors):
        if a is not None:
            np.testing.assert_array_equal(a, b)


def test_the_loop_makes_and_keeps_the_buffer():
    p = ember.nn.Parameter(ember.ones(5))
    opt = ember.optim.SGD([p], lr=0.1, momentum=0.9, foreach=False)
    p.grad = ember.full((5,), 2.0)
    opt.step()
    buf = opt.state[p]["momentum_buffer"]
    assert buf.tolist() == [2.0] * 5 and buf.data_ptr() != p.grad.data_ptr()
    opt.step()
    assert opt.state[p]["momentum_buffer"] is buf
    assert buf.tolist() == pytest.approx([3.8] * 5)


def test_no_momentum_keeps_no_buffer():
    p = ember.nn.Parameter(ember.ones(3))
    opt = ember.optim.SGD([p], lr=0.5, foreach=False)
    p.grad = ember.ones(3)
    opt.step()
    assert "momentum_buffer" not in opt.state[p] or opt.state[p]["momentum_buffer"] is None
    assert p.tolist() == [0.5] * 3


@pytest.mark.parametrize("opts", _CASES)
def test_pieces_and_loop_match_torch(opts, monkeypatch):
    torch = pytest.importorskip("torch")
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    old = _kernels.set_backend("numpy")  # the NumPy pieces, not the compiled step
    try:
        from tests.conftest import spy_thread_splits

        seen = spy_thread_splits(monkeypatch)
        rng = np.random.default_rng(4)
        n = _kernels.OPTIM_SPLIT + 9
        w0 = rng.standard_normal(n).astype(np.float32)
        grads = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
        pe = ember.from_numpy(w0.copy()).requires_grad_()
        pt = torch.from_numpy(w0.copy()).requires_grad_()
        oe = ember.optim.SGD([pe], lr=0.05, **opts)
        ot = torch.optim.SGD([pt], lr=0.05, **opts)
        for g in grads:
            pe.grad, pt.grad = ember.from_numpy(g.copy()), torch.from_numpy(g.copy())
            oe.step()
            ot.step()
        assert True in seen  # the pieces ran (the first step's buffer is made by the loop)
        # (PyTorch fuses some multiply-adds: a few ulps of the values' scale apart)
        np.testing.assert_allclose(pe.detach().numpy(), pt.detach().numpy(), rtol=1e-6,
                                   atol=1e-6)
    finally:
        _kernels.set_backend(old)
        ember.set_num_threads(before)
