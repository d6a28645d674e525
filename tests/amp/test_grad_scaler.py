"""ember.amp.GradScaler against torch.amp.GradScaler, step by step."""

import pickle
import warnings

import numpy as np
import pytest

import ember

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False


def _trajectory(lib, inf_steps, n=8, **kw):
    p = lib.nn.Parameter(lib.ones(3))
    opt = lib.optim.SGD([p], lr=0.1)
    s = lib.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2, **kw)
    rows = []
    for i in range(n):
        opt.zero_grad()
        loss = (p * 2.0).sum()
        if i in inf_steps:
            loss = loss * float("inf")
        s.scale(loss).backward()
        s.step(opt)
        s.update()
        rows.append((s.get_scale(), s._get_growth_tracker(), p.detach().numpy().copy()))
    return rows


@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
def test_grad_scaler_scale_trajectory_matches_torch_with_injected_inf():
    e = _trajectory(ember, {1, 4, 5})
    t = _trajectory(torch, {1, 4, 5})
    for (es, eg, ep), (ts, tg, tp) in zip(e, t):
        assert es == ts and eg == tg
        np.testing.assert_allclose(ep, tp, rtol=1e-6)


def test_grad_scaler_skips_step_on_nan():
    p = ember.nn.Parameter(ember.ones(1))
    opt = ember.optim.SGD([p], lr=1.0)
    s = ember.amp.GradScaler("cpu")
    s.scale((p * float("nan")).sum()).backward()
    assert s.step(opt) is None
    s.update()
    assert float(p) == 1.0 and s.get_scale() == 2.0**15


def test_grad_scaler_unscale_divides_grads():
    p = ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.SGD([p], lr=0.1)
    s = ember.amp.GradScaler("cpu", init_scale=4.0)
    s.scale(p.sum()).backward()
    assert p.grad.tolist() == [4.0, 4.0]
    s.unscale_(opt)
    assert p.grad.tolist() == [1.0, 1.0]


def test_grad_scaler_unscale_twice_raises():
    p = ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.SGD([p], lr=0.1)
    s = ember.amp.GradScaler("cpu")
    s.scale(p.sum()).backward()
    s.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        s.unscale_(opt)


def test_grad_scaler_step_twice_raises():
    p = ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.SGD([p], lr=0.1)
    s = ember.amp.GradScaler("cpu")
    s.scale(p.sum()).backward()
    s.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        s.step(opt)


def test_grad_scaler_update_before_scale_raises_assertion():
    with pytest.raises(AssertionError, match="_scale is None"):
        ember.amp.GradScaler("cpu").update()


def test_grad_scaler_closure_raises():
    p = ember.nn.Parameter(ember.ones(1))
    s = ember.amp.GradScaler("cpu")
    s.scale(p.sum()).backward()
    with pytest.raises(RuntimeError, match="Closure"):
        s.step(ember.optim.SGD([p], lr=0.1), closure=lambda: 0)


def test_grad_scaler_scale_nested_outputs():
    s = ember.amp.GradScaler("cpu", init_scale=2.0)
    a, (b,) = s.scale([ember.ones(1), (ember.ones(1),)])
    assert float(a) == 2.0 and float(b) == 2.0


def test_grad_scaler_bad_outputs_raise_value_error():
    with pytest.raises(ValueError, match="must be a Tensor"):
        ember.amp.GradScaler("cpu").scale([1.0])


def test_grad_scaler_state_dict_round_trip():
    a = ember.amp.GradScaler("cpu", init_scale=8.0, growth_interval=3)
    b = ember.amp.GradScaler("cpu")
    b.load_state_dict(a.state_dict())
    assert b.state_dict() == {"scale": 8.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                              "growth_interval": 3, "_growth_tracker": 0}


def test_grad_scaler_load_empty_state_dict_raises():
    with pytest.raises(RuntimeError, match="empty"):
        ember.amp.GradScaler("cpu").load_state_dict({})


def test_grad_scaler_pickles():
    s = ember.amp.GradScaler("cpu", init_scale=4.0)
    s.scale(ember.ones(1))
    assert pickle.loads(pickle.dumps(s)).get_scale() == 4.0


def test_grad_scaler_disabled_is_pass_through():
    s = ember.amp.GradScaler("cpu", enabled=False)
    x = ember.ones(1)
    assert s.scale(x) is x and s.get_scale() == 1.0 and s.state_dict() == {}


def test_grad_scaler_bad_growth_factor_raises():
    with pytest.raises(AssertionError, match="growth factor"):
        ember.amp.GradScaler("cpu", growth_factor=0.5)


@pytest.mark.skipif(ember.cuda.is_available(), reason="needs a machine without CUDA")
def test_grad_scaler_cuda_without_gpu_warns_and_disables():
    with pytest.warns(UserWarning, match="CUDA is not available"):
        assert not ember.amp.GradScaler().is_enabled()


@pytest.mark.skipif(ember.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_amp_grad_scaler_warns_future_and_disables():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        s = ember.cuda.amp.GradScaler()
    assert {FutureWarning, UserWarning} <= {x.category for x in w}
    assert not s.is_enabled()


def test_cpu_amp_grad_scaler_warns_future_and_is_enabled():
    with pytest.warns(FutureWarning, match="torch.amp.GradScaler\\('cpu'"):
        assert ember.cpu.amp.GradScaler().is_enabled()


def test_cpu_module_queries():
    assert ember.cpu.is_available() and ember.cpu.device_count() == 1
    assert ember.cpu.current_device() == "cpu"
    with ember.cpu.stream(ember.cpu.Stream()):
        pass
    assert ember.cpu.Event().query()
