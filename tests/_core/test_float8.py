"""The float8 dtypes (NOTE [ Float8 dtypes ] in ember/_core/dtype.py), compared with PyTorch."""

import io

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

NAMES = ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu"]
VALUES = [0.0, -0.0, 1.0, -2.5, 0.3, 447.0, 449.0, 1e6, -1e6, 57344.0, 70000.0, 1e-10, -1e-10,
          2.0 ** -9, float("inf"), float("-inf"), 3e38]


def _bits(t):
    return t.view(ember.uint8 if isinstance(t, ember.Tensor) else torch.uint8).tolist()


@pytest.mark.parametrize("name", NAMES)
def test_float8_dtype_attributes_match_torch(name):
    d, td = getattr(ember, name), getattr(torch, name)
    assert (d.is_floating_point, d.is_signed, d.itemsize, d.is_complex) == \
        (td.is_floating_point, td.is_signed, td.itemsize, td.is_complex)
    assert repr(d) == repr(td).replace("torch", "ember")


@pytest.mark.parametrize("name", NAMES)
def test_float8_finfo_matches_torch(name):
    assert repr(ember.finfo(getattr(ember, name))) == repr(torch.finfo(getattr(torch, name)))


@pytest.mark.parametrize("name", NAMES)
def test_float8_cast_from_float32_bits_match_torch(name):
    x = np.array(VALUES, np.float32)
    got = ember.from_numpy(x).to(getattr(ember, name))
    assert _bits(got) == _bits(torch.from_numpy(x).to(getattr(torch, name)))


@pytest.mark.parametrize("name", NAMES)
def test_float8_cast_random_bits_match_torch(name):
    x = np.random.default_rng(0).integers(0, 2 ** 32, 4000, dtype=np.uint64)
    x = x.astype(np.uint32).view(np.float32)
    got = ember.from_numpy(x).to(getattr(ember, name))
    assert _bits(got) == _bits(torch.from_numpy(x).to(getattr(torch, name)))


@pytest.mark.parametrize("name", NAMES)
def test_float8_cast_back_to_float32_exact(name):
    codes = torch.arange(256, dtype=torch.uint8)
    want = codes.view(getattr(torch, name)).float()
    got = ember.arange(256).to(ember.uint8).view(getattr(ember, name)).float()
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_float8_tensor_constructor_saturates():
    got = ember.tensor([1.0, 1000.0, -3.3], dtype=ember.float8_e4m3fn)
    assert _bits(got) == _bits(torch.tensor([1.0, 1000.0, -3.3], dtype=torch.float8_e4m3fn))


def test_float8_full_overflow_raises():
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.full((3,), 1000.0, dtype=ember.float8_e4m3fn)
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.zeros(3, dtype=ember.float8_e4m3fnuz).fill_(float("inf"))


def test_float8_full_inf_allowed_for_e5m2():
    got = ember.full((3,), float("inf"), dtype=ember.float8_e5m2)
    assert _bits(got) == _bits(torch.full((3,), float("inf"), dtype=torch.float8_e5m2))


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"])
def test_float8_repr_matches_torch(name):
    vals = [[1.0, 2.5], [-448.0, 0.001953125]] if name != "float8_e8m0fnu" else [1.0, 2.0]
    got = repr(ember.tensor(vals).to(getattr(ember, name)))
    assert got == repr(torch.tensor(vals).to(getattr(torch, name))).replace("torch", "ember")


def test_float8_element_size_and_is_floating_point():
    x = ember.zeros(2, dtype=ember.float8_e5m2)
    assert x.element_size() == 1 and x.is_floating_point() and ember.is_floating_point(x)


def test_float8_view_uint8_reinterprets_bits():
    got = ember.tensor([56, 184], dtype=ember.uint8).view(ember.float8_e4m3fn).tolist()
    assert got == torch.tensor([56, 184], dtype=torch.uint8).view(torch.float8_e4m3fn).tolist()


def test_float8_promotion_raises():
    with pytest.raises(RuntimeError, match="Promotion for Float8 Types is not supported"):
        ember.promote_types(ember.float8_e4m3fn, ember.float32)
    with pytest.raises(RuntimeError, match="attempted to promote Float8_e4m3fn and Float8_e5m2"):
        ember.ones(2, dtype=ember.float8_e4m3fn) + ember.ones(2, dtype=ember.float8_e5m2)


@pytest.mark.parametrize("op", [lambda t, x: x + x, lambda t, x: -x, lambda t, x: x.sqrt(),
                                lambda t, x: x < x])
def test_float8_arithmetic_raises_not_implemented(op):
    with pytest.raises(NotImplementedError):
        op(torch, torch.ones(2, dtype=torch.float8_e4m3fn))
    with pytest.raises(NotImplementedError, match="not implemented for 'Float8_e4m3fn'"):
        op(ember, ember.ones(2, dtype=ember.float8_e4m3fn))


@pytest.mark.parametrize("op", [
    lambda t, x: x * x, lambda t, x: x.abs(), lambda t, x: x == x, lambda t, x: x.clone(),
    lambda t, x: t.cat([x, x]), lambda t, x: x[1:], lambda t, x: x.view(2, 1),
    lambda t, x: t.stack([x, x]), lambda t, x: x.isnan(),
])
def test_float8_supported_ops_match_torch(op):
    vals = [1.5, -2.0]
    got = op(ember, ember.tensor(vals).to(ember.float8_e4m3fn))
    want = op(torch, torch.tensor(vals).to(torch.float8_e4m3fn))
    assert str(got.dtype) == str(want.dtype).replace("torch", "ember")
    assert got.float().tolist() == want.float().tolist()


def test_float8_load_torch_checkpoint():
    x = torch.tensor([1.0, -2.0, 448.0, 0.1]).to(torch.float8_e4m3fn)
    buf = io.BytesIO()
    torch.save({"x": x, "y": x.to(torch.float8_e5m2)[1:]}, buf)
    buf.seek(0)
    got = ember.load(buf)
    assert got["x"].dtype is ember.float8_e4m3fn and got["y"].dtype is ember.float8_e5m2
    assert _bits(got["x"]) == _bits(x) and _bits(got["y"]) == _bits(x.to(torch.float8_e5m2)[1:])


def test_float8_e8m0_repr_counts_smallest_as_zero():
    got = repr(ember.tensor([1.0, 0.0, -3.3], dtype=ember.float8_e8m0fnu))
    want = repr(torch.tensor([1.0, 0.0, -3.3], dtype=torch.float8_e8m0fnu))
    assert got == want.replace("torch", "ember")


def test_float8_copy_and_setitem_saturate():
    x = ember.zeros(3, dtype=ember.float8_e4m3fn)
    x.copy_(ember.tensor([1000.0, 2.0, -1e9]))
    x[1] = 1000.0
    y = torch.zeros(3, dtype=torch.float8_e4m3fn)
    y.copy_(torch.tensor([1000.0, 2.0, -1e9]))
    y[1] = 1000.0
    assert _bits(x) == _bits(y)


def test_float8_mm_matches_torch():
    a = [[1.0, 2.5, -3.0], [0.5, 7.0, 100.0]]
    got = ember.tensor(a).to(ember.float8_e4m3fn) @ ember.tensor(a).to(ember.float8_e4m3fn).t()
    want = torch.tensor(a).to(torch.float8_e4m3fn) @ torch.tensor(a).to(torch.float8_e4m3fn).t()
    assert got.dtype is ember.float8_e4m3fn and _bits(got) == _bits(want)


@pytest.mark.parametrize("op", [
    lambda t, x: x * 2, lambda t, x: x.sum(), lambda t, x: x.max(), lambda t, x: x.argmax(),
    lambda t, x: x.sort(), lambda t, x: x.flip(0), lambda t, x: t.dot(x, x),
    lambda t, x: x @ x.view(3, 1).squeeze(1), lambda t, x: x.nonzero(),
    lambda t, x: x.gather(0, t.tensor([0])), lambda t, x: x.cumsum(0),
    lambda t, x: t.rand(2, dtype=x.dtype), lambda t, x: t.arange(2, dtype=x.dtype),
    lambda t, x: x.masked_fill(t.tensor([True, False, True]), 0.0),
    lambda t, x: t.isclose(x, x),
])
def test_float8_refused_ops_raise_not_implemented(op):
    with pytest.raises(NotImplementedError):
        op(torch, torch.ones(3, dtype=torch.float8_e4m3fn))
    with pytest.raises(NotImplementedError, match="not implemented for 'Float8_e4m3fn'"):
        op(ember, ember.ones(3, dtype=ember.float8_e4m3fn))


def test_float8_var_raises_runtime_error():
    with pytest.raises(RuntimeError, match="std_var_all: Unsupported dtype Float8_e4m3fn"):
        ember.ones(3, dtype=ember.float8_e4m3fn).var()


def test_float8_sum_with_dtype_converts_first():
    x = ember.tensor([1.5, 2.0, 448.0]).to(ember.float8_e4m3fn)
    assert x.sum(dtype=ember.float32).item() == 451.5


def test_float8_numpy_raises_type_error():
    with pytest.raises(TypeError, match="Got unsupported ScalarType Float8_e5m2"):
        ember.ones(2, dtype=ember.float8_e5m2).numpy()


def test_float8_save_loads_in_torch():
    x = ember.tensor([1.0, -2.0, 448.0, 0.1]).to(ember.float8_e4m3fn)
    buf = io.BytesIO()
    ember.save({"x": x, "v": x[1:], "y": x.to(ember.float8_e8m0fnu)}, buf)
    buf.seek(0)
    got = torch.load(buf)
    assert got["x"].dtype is torch.float8_e4m3fn and got["y"].dtype is torch.float8_e8m0fnu
    assert _bits(got["v"]) == _bits(x[1:]) and _bits(got["y"]) == _bits(x.to(ember.float8_e8m0fnu))


def test_float8_save_load_round_trip():
    x = ember.tensor([1.0, -2.0, 0.1]).to(ember.float8_e5m2fnuz)
    buf = io.BytesIO()
    ember.save(x, buf)
    buf.seek(0)
    got = ember.load(buf)
    assert got.dtype is ember.float8_e5m2fnuz and _bits(got) == _bits(x)
