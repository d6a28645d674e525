"""The NumPy-backed test device (NOTE [ Test device ] in ember/testing/_test_device.py): its
arrays are as strict as CuPy's, and tensors on it behave as on a separate device."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.testing import TEST_DEVICE, register_test_device
from ember.testing._test_device import TestDeviceArray, test_device_xp

DEV = register_test_device()
xp = test_device_xp()


# ------------------------------------------------------------------------------------------------
# the arrays


@pytest.mark.parametrize("host", [np.ones(3), np.ones((2, 3)), np.array(1.0)],
                         ids=["1d", "2d", "0d"])
def test_array_ufunc_with_host_array_raises(host):
    with pytest.raises(TypeError, match="numpy.ndarray"):
        xp.ones(3) + host


def test_array_ufunc_with_host_array_on_the_left_raises():
    with pytest.raises(TypeError, match="numpy.ndarray"):
        np.ones(3) * xp.ones(3)


def test_array_ufunc_with_host_out_raises():
    with pytest.raises(TypeError, match="numpy.ndarray"):
        np.add(xp.ones(3), 1, out=np.empty(3))


def test_array_function_with_host_array_raises():
    with pytest.raises(TypeError, match="numpy.ndarray"):
        np.concatenate([xp.ones(2), np.ones(2)])


def test_xp_function_with_host_array_raises():
    with pytest.raises(TypeError, match="numpy.ndarray"):
        xp.where(xp.ones(2, bool), np.zeros(2), 1.0)


def test_array_accepts_python_and_numpy_scalars():
    r = xp.arange(3) * 2 + np.float32(0.5) - np.int64(1)
    assert type(r) is TestDeviceArray
    assert r.tolist() == [-0.5, 1.5, 3.5]


def test_array_results_stay_device_arrays():
    a = xp.arange(6.0).reshape(2, 3)
    for r in (np.exp(a), np.concatenate([a, a]), a.sum(0), np.sum(a), a[0, 1], a.T @ a,
              xp.linalg.inv(xp.eye(2)), np.add.reduce(a, axis=1)):
        assert type(r) is TestDeviceArray, r


def test_array_element_is_a_zero_dim_device_array():
    a = xp.arange(3.0)
    assert type(a[1]) is TestDeviceArray and a[1].ndim == 0
    assert float(a[1]) == 1.0


def test_xp_factories_return_device_arrays():
    for r in (xp.zeros(2), xp.ones((2, 2)), xp.empty(3), xp.arange(4), xp.full(2, 3.0),
              xp.eye(2), xp.linspace(0, 1, 3)):
        assert type(r) is TestDeviceArray
    assert xp.ndarray is TestDeviceArray


def test_xp_asarray_copies_host_data():
    host = np.zeros(3)
    dev = xp.asarray(host)
    host[0] = 5
    assert type(dev) is TestDeviceArray and dev[0] == 0


def test_xp_asarray_passes_device_arrays_through():
    a = xp.ones(2)
    assert xp.asarray(a) is a


def test_get_returns_a_host_copy():
    a = xp.arange(3.0)
    h = a.get()
    h[0] = 9
    assert type(h) is np.ndarray and a[0] == 0


def test_namespace_has_a_name_of_its_own():
    # caches keyed by xp.__name__ must not take the test device for NumPy
    assert xp.__name__ != np.__name__ and TEST_DEVICE in xp.__name__


# ------------------------------------------------------------------------------------------------
# tensors on the device


def test_register_test_device_is_idempotent():
    assert register_test_device() == DEV == "npdev"
    assert DEV in ember.library.backends()
    assert ember.device(DEV).type == DEV


def test_register_test_device_leaves_privateuse1_alone():
    assert ember.utils.backend_registration._get_privateuse1_backend_name() == "privateuseone"


def test_tensor_prints_its_device():
    t = ember.tensor([1.0, 2.0]).to(DEV)
    assert repr(t) == "tensor([1., 2.], device='npdev')"
    assert t.device == ember.device(DEV)


def test_to_device_copies():
    c = ember.zeros(3)
    d = c.to(DEV)
    c[0] = 1
    assert type(d._data) is TestDeviceArray
    assert d.cpu().tolist() == [0.0, 0.0, 0.0]


def test_cpu_copies_back_to_a_numpy_array():
    d = ember.ones(2, device=DEV)
    c = d.cpu()
    d.add_(1)
    assert type(c._data) is np.ndarray and c.tolist() == [1.0, 1.0]
    assert c.device == ember.device("cpu")


def test_to_same_device_returns_self():
    d = ember.ones(2, device=DEV)
    assert d.to(DEV) is d


def test_factories_build_on_the_device():
    for t in (ember.zeros(2, device=DEV), ember.randn(2, device=DEV),
              ember.arange(3, device=DEV), ember.full((2,), 1.5, device=DEV)):
        assert t.device.type == DEV and type(t._data) is TestDeviceArray


@pytest.mark.parametrize("op", [lambda a, b: a + b, lambda a, b: ember.matmul(a, b),
                                lambda a, b: ember.cat([a, b])], ids=["add", "matmul", "cat"])
def test_mixing_devices_raises(op):
    with pytest.raises(RuntimeError, match="same device"):
        op(ember.ones(2, 2, device=DEV), ember.ones(2, 2))


def test_mixing_devices_raises_with_the_cpu_tensor_first():
    with pytest.raises(RuntimeError, match="same device"):
        ember.ones(2) * ember.ones(2, device=DEV)


def test_zero_dim_cpu_tensor_joins_as_a_scalar():
    # as a 0-dim CPU tensor may join CUDA tensors in torch
    r = ember.ones(2, device=DEV) * ember.tensor(3.0)
    assert r.device.type == DEV and r.cpu().tolist() == [3.0, 3.0]


def test_gradients_stay_on_the_device():
    w = ember.randn(3, 2, device=DEV, requires_grad=True)
    (ember.ones(4, 3, device=DEV) @ w).tanh().sum().backward()
    assert w.grad.device.type == DEV and type(w.grad._data) is TestDeviceArray



def test_array_ufunc_with_a_list_operand_raises():
    with pytest.raises(TypeError, match="list operand"):
        np.add(xp.ones(2), [1.0, 2.0])


def test_xp_refuses_object_arrays():
    with pytest.raises(ValueError, match="unsupported dtype object"):
        xp.asarray(None)


def test_reduction_gives_a_zero_dim_device_array():
    r = xp.arange(4.0).sum()
    assert type(r) is TestDeviceArray and r.ndim == 0


def test_zero_dim_cpu_tensor_first_joins_as_a_scalar():
    # torch runs the op on the other input's device whichever comes first
    s = ember.tensor(2.0, requires_grad=True)
    r = ember.where(ember.tensor(True), s, ember.ones(2, device=DEV))
    assert r.device.type == DEV and r.cpu().tolist() == [2.0, 2.0]
    r.sum().backward()
    assert s.grad.device.type == "cpu" and s.grad.item() == 2.0


def test_large_elementwise_ops_stay_on_the_device():
    # large enough for NumPy's threaded element-wise path, which must not take device arrays
    from ember._parallel import MIN_ELEMENTS

    a = ember.ones(MIN_ELEMENTS + 1).to(DEV)
    for r in (a + a, a * 2.0, a.add(a, alpha=0.5)):
        assert r.device.type == TEST_DEVICE and type(r._data) is TestDeviceArray
        assert float(r[-1].cpu()) in (2.0, 1.5)
