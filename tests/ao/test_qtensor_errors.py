"""What quantized tensors do with item(), float() and friends, compared with torch."""

import warnings

import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _q(lib):
    return lib.quantize_per_tensor(lib.tensor([1.0, 2.0, 3.04]), 0.1, 3, lib.quint8)


def test_qtensor_item_returns_the_real_value_as_float():
    e, t = _q(ember)[2].item(), _q(torch)[2].item()
    assert type(e) is float and e == t


def test_qtensor_float_conversion_of_one_element_matches_torch():
    assert float(_q(ember)[1]) == float(_q(torch)[1])


def test_qtensor_item_of_many_elements_raises_like_torch():
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        _q(torch).item()
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        _q(ember).item()


@pytest.mark.parametrize("conv", ["float", "double", "int", "to_float32"])
def test_qtensor_dtype_conversion_raises_runtime_error_like_torch(conv):
    def call(lib):
        q = _q(lib)
        return q.to(lib.float32) if conv == "to_float32" else getattr(q, conv)()

    with pytest.raises(RuntimeError, match="requires quantized dtype") as te:
        call(torch)
    with pytest.raises(RuntimeError, match="requires quantized dtype") as ee:
        call(ember)
    assert type(ee.value) is type(te.value)


def test_qtensor_exp_still_has_no_quantized_kernel():
    with pytest.raises(NotImplementedError):
        _q(torch).exp()
    with pytest.raises(NotImplementedError):
        _q(ember).exp()


@pytest.mark.parametrize("expr", ["q * 2", "2 * q", "q + 1", "q.mul_(2)"])
def test_qtensor_arithmetic_with_number_raises_runtime_error_like_torch(expr):
    with pytest.raises(RuntimeError, match="empty_strided") as te:
        eval(expr, {"q": _q(torch)})
    with pytest.raises(RuntimeError, match="empty_strided") as ee:
        eval(expr, {"q": _q(ember)})
    assert type(ee.value) is type(te.value)


def test_qtensor_add_of_two_qtensors_has_no_kernel_like_torch():
    with pytest.raises(NotImplementedError):
        _q(torch) + _q(torch)
    with pytest.raises(NotImplementedError, match="aten::add"):
        _q(ember) + _q(ember)


def test_qtensor_requires_grad_raises_like_torch():
    with pytest.raises(RuntimeError, match="can require gradients"):
        _q(torch).requires_grad_()
    with pytest.raises(RuntimeError, match="can require gradients"):
        _q(ember).requires_grad_()
    assert not _q(ember).requires_grad_(False).requires_grad
