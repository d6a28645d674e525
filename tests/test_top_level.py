"""Small top-level functions (ember/_top_level.py), compared with torch where installed."""

from __future__ import annotations

import os
import warnings

import pytest

import ember
import ember._settings

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


@pytest.fixture
def default_dtype():
    saved = ember.get_default_dtype()
    yield
    ember.set_default_dtype(saved)


@needs_torch
@pytest.mark.parametrize("make", [lambda m: m.zeros(2), lambda m: m.zeros(2, dtype=m.int64),
                                  lambda m: 3, lambda m: "x", lambda m: int, lambda m: None,
                                  lambda m: len])
def test_typename_matches_torch(make):
    assert ember.typename(make(ember)) == torch.typename(make(torch))


def test_typename_module_instance_is_dotted_class_path():
    assert ember.typename(ember.nn.Linear(2, 2)) == "ember.nn.modules.linear.Linear"


@needs_torch
@pytest.mark.parametrize("data", [[1.5], [0.0], 0, 3])
def test_is_nonzero_matches_torch(data):
    assert ember.is_nonzero(ember.tensor(data)) == torch.is_nonzero(torch.tensor(data))


@pytest.mark.parametrize("data, match", [([1, 2], "more than one value"), ([], "no values")])
def test_is_nonzero_not_one_element_raises(data, match):
    with pytest.raises(RuntimeError, match=match):
        ember.is_nonzero(ember.tensor(data))


def test_is_nonzero_non_tensor_raises_type_error():
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        ember.is_nonzero(3)


def test_is_same_size_compares_shapes():
    assert ember.is_same_size(ember.zeros(2, 3), ember.ones(2, 3))
    assert not ember.is_same_size(ember.zeros(2, 3), ember.ones(3, 2))


def test_get_device_cpu_is_minus_one():
    assert ember.get_device(ember.zeros(2)) == -1


def test_set_default_tensor_type_double(default_dtype, monkeypatch):
    monkeypatch.setattr(ember._settings, "_warned_once", set())  # the warning is once a process
    with pytest.warns(UserWarning, match="deprecated"):
        ember.set_default_tensor_type(ember.DoubleTensor)
    assert ember.get_default_dtype() == ember.float64
    assert ember.tensor([1.5]).dtype == ember.float64 and ember.Tensor(2).dtype == ember.float64


def test_set_default_tensor_type_by_name(default_dtype, monkeypatch):
    monkeypatch.setattr(ember._settings, "_warned_once", set())
    with pytest.warns(UserWarning):
        ember.set_default_tensor_type("torch.DoubleTensor")
    assert ember.get_default_dtype() == ember.float64


@pytest.mark.parametrize("arg, error", [(ember.LongTensor, TypeError),
                                        ("torch.LongTensor", TypeError),
                                        (ember.float64, TypeError),
                                        ("torch.Foo", AttributeError)])
def test_set_default_tensor_type_bad_type_raises(arg, error, default_dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error):
            ember.set_default_tensor_type(arg)


@pytest.mark.skipif(ember.cuda.is_available(), reason="needs a machine without a GPU")
def test_set_default_tensor_type_cuda_without_gpu_raises(default_dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TypeError, match="not available"):
            ember.set_default_tensor_type(ember.cuda.FloatTensor)


def test_build_flags_are_bools():
    for name in ("has_lapack", "has_mkl", "has_openmp", "has_spectral"):
        assert isinstance(getattr(ember, name), bool)
    assert ember.compiled_with_cxx11_abi() is True
    assert ember.is_vulkan_available() is False


def test_get_file_path_joins_under_package_parent():
    path = ember.get_file_path("ember", "version.py")
    assert os.path.isfile(path)


def test_set_flush_denormal_unsupported_returns_false():
    assert ember.set_flush_denormal(True) is False


@needs_torch
@pytest.mark.parametrize("name, args", [("sym_int", (3.7,)), ("sym_int", (-3.7,)),
                                        ("sym_float", (3,)), ("sym_max", (2, 3)),
                                        ("sym_max", (2, 3.0)), ("sym_min", (2, 3.0)),
                                        ("sym_not", (True,)), ("sym_ite", (False, 1, 2)),
                                        ("sym_sum", ([1, 2, 3],)), ("sym_sqrt", (4,))])
def test_sym_function_matches_torch(name, args):
    e, t = getattr(ember, name)(*args), getattr(torch, name)(*args)
    assert e == t and type(e) is type(t)


def test_symint_isinstance_false_for_plain_numbers():
    assert not isinstance(3, ember.SymInt) and not isinstance(1.5, ember.SymFloat)


def test_symint_construction_raises_not_implemented():
    with pytest.raises(NotImplementedError, match="symbolic shapes"):
        ember.SymInt(3)


def test_set_anomaly_enabled_roundtrip():
    ember.set_anomaly_enabled(True, False)
    try:
        assert ember.is_anomaly_enabled() and not ember.is_anomaly_check_nan_enabled()
    finally:
        ember.set_anomaly_enabled(False)
    assert not ember.is_anomaly_enabled() and ember.is_anomaly_check_nan_enabled()


def test_set_anomaly_enabled_non_bool_raises():
    with pytest.raises(TypeError, match="argument 'enabled'"):
        ember.set_anomaly_enabled(1)


def test_types_number_accepts_python_numbers():
    from ember.types import Device, Number

    assert isinstance(1.5, Number) and isinstance(True, Number)
    assert isinstance("cpu", Device)


def test_is_inference_true_inside_inference_mode():
    with ember.inference_mode():
        x = ember.ones(2)
    assert ember.is_inference(x) and not ember.is_inference(ember.ones(2))


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8", "bool", "int8"])
def test_is_signed_matches_torch(dtype):
    e = ember.is_signed(ember.zeros(2, dtype=getattr(ember, dtype)))
    assert e == torch.is_signed(torch.zeros(2, dtype=getattr(torch, dtype)))


def test_is_signed_non_tensor_raises_type_error():
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        ember.is_signed(3)


def test_get_device_module_by_name():
    assert ember.get_device_module("cpu") is ember.cpu
    assert ember.get_device_module(ember.device("cuda:0")) is ember.cuda


def test_get_device_module_default_is_cpu_without_gpu():
    expected = ember.cuda if ember.cuda.is_available() else ember.cpu
    assert ember.get_device_module() is expected


def test_get_device_module_meta_raises():
    with pytest.raises(RuntimeError, match="does not have a corresponding module"):
        ember.get_device_module("meta")


@needs_torch
def test_cudnn_is_acceptable_cpu_tensor_false_like_torch():
    for dt in ("float32", "float64", "int64"):
        assert ember.cudnn_is_acceptable(ember.zeros(2, dtype=getattr(ember, dt))) is \
            torch.cudnn_is_acceptable(torch.zeros(2, dtype=getattr(torch, dt)))


def test_cudnn_is_acceptable_non_tensor_raises_type_error():
    with pytest.raises(TypeError, match="must be Tensor"):
        ember.cudnn_is_acceptable([1.0])


@needs_torch
def test_fatal_error_is_plain_exception_like_torch():
    assert issubclass(ember.FatalError, Exception)
    assert issubclass(ember.FatalError, RuntimeError) == issubclass(torch.FatalError, RuntimeError)
    assert str(ember.FatalError("x")) == str(torch.FatalError("x"))


@needs_torch
def test_jit_aliases_are_torch_jit_names():
    assert ember.JITException is ember.jit.Error and torch.JITException is torch.jit.Error
    assert ember.ScriptFunction is ember.jit.ScriptFunction
    assert ember.CompilationUnit is ember.jit.CompilationUnit


@needs_torch
def test_bit_is_uint1_and_private_ops_like_torch():
    assert (ember.bit is ember.uint1) == (torch.bit is torch.uint1)
    assert ember.PRIVATE_OPS == torch.PRIVATE_OPS


@needs_torch
@pytest.mark.parametrize("case", ["1d", "2d_groups_bias", "3d", "scalar_pad"])
def test_mkldnn_convolution_matches_torch(case):
    import numpy as np

    rng = np.random.default_rng(0)
    shapes, args = {
        "1d": (((1, 2, 6), (3, 2, 3), None), ([0], [1], [1], 1)),
        "2d_groups_bias": (((1, 4, 6, 6), (4, 2, 3, 3), (4,)), ([1, 1], [2, 2], [1, 1], 2)),
        "3d": (((1, 2, 4, 4, 4), (3, 2, 3, 3, 3), None), ([1, 1, 1], [1, 1, 1], [1, 1, 1], 1)),
        "scalar_pad": (((1, 2, 6, 6), (3, 2, 3, 3), None), ([1], [1], [1], 1)),
    }[case]
    arrays = [None if s is None else rng.standard_normal(s).astype(np.float32) for s in shapes]
    e = ember.mkldnn_convolution(*[None if a is None else ember.from_numpy(a) for a in arrays],
                                 *args)
    t = torch.mkldnn_convolution(*[None if a is None else torch.from_numpy(a) for a in arrays],
                                 *args)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-5)


@needs_torch
def test_mkldnn_convolution_grad_flows_like_torch():
    import numpy as np

    x = np.random.default_rng(1).standard_normal((1, 2, 5, 5)).astype(np.float32)
    grads = []
    for m in (ember, torch):
        xi = m.tensor(x, requires_grad=True)
        m.mkldnn_convolution(xi, m.ones(3, 2, 3, 3), None, [0, 0], [1, 1], [1, 1], 1).sum() \
            .backward()
        grads.append(xi.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5)


def test_mkldnn_convolution_double_raises_runtime_error():
    with pytest.raises(RuntimeError, match="expects float"):
        ember.mkldnn_convolution(ember.zeros(1, 1, 4, dtype=ember.float64),
                                 ember.zeros(1, 1, 3, dtype=ember.float64), None, [0], [1],
                                 [1], 1)
