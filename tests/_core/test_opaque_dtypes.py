"""The opaque dtypes (NOTE [ Opaque dtypes ] in ember/_core/dtype.py): bits8, int1..int7,
float4_e2m1fn_x2 and the rest, compared with PyTorch."""

import io

import pytest

import ember

torch = pytest.importorskip("torch")

NAMES = ["bits8", "bits16", "bits1x8", "bits2x4", "bits4x2", "float4_e2m1fn_x2",
         *(f"int{i}" for i in range(1, 8)), *(f"uint{i}" for i in range(1, 8))]


@pytest.mark.parametrize("name", NAMES)
def test_opaque_dtype_attributes_match_torch(name):
    d, td = getattr(ember, name), getattr(torch, name)
    assert (d.is_floating_point, d.itemsize, d.is_complex) == \
        (td.is_floating_point, td.itemsize, td.is_complex)
    assert repr(d) == repr(td).replace("torch", "ember")


@pytest.mark.parametrize("name", ["bits8", "bits16", "int3", "uint4", "float4_e2m1fn_x2"])
def test_opaque_view_uint8_round_trip(name):
    d = getattr(ember, name)
    codes = ember.tensor([18, 63, 200, 7], dtype=ember.uint8)
    x = codes.view(d)
    assert x.dtype is d and x.element_size() == d.itemsize
    assert x.view(ember.uint8).tolist() == [18, 63, 200, 7]
    assert list(x.shape) == list(torch.tensor([18, 63, 200, 7], dtype=torch.uint8)
                                 .view(getattr(torch, name)).shape)


@pytest.mark.parametrize("name", ["bits8", "int3", "float4_e2m1fn_x2"])
def test_opaque_storage_ops_keep_dtype(name):
    d = getattr(ember, name)
    x = ember.zeros(4, dtype=d)
    assert x.view(ember.uint8).tolist() == [0, 0, 0, 0]
    assert ember.cat([x, x]).dtype is d and x[1:].dtype is d
    assert x.view(2, 2).t().contiguous().dtype is d and ember.empty_like(x).dtype is d
    assert x.zero_().dtype is d


@pytest.mark.parametrize("op", [
    lambda t, x: x + x, lambda t, x: x.sum(), lambda t, x: repr(x), lambda t, x: x[0].item(),
    lambda t, x: x.fill_(1), lambda t, x: t.ones(2, dtype=x.dtype), lambda t, x: x.float(),
    lambda t, x: x.sort(), lambda t, x: x.flip(0),
])
def test_opaque_value_ops_raise_not_implemented(op):
    with pytest.raises(NotImplementedError):
        op(torch, torch.zeros(2, dtype=torch.bits8))
    with pytest.raises(NotImplementedError, match="not implemented for 'Bits8'"):
        op(ember, ember.zeros(2, dtype=ember.bits8))


def test_opaque_promotion_raises():
    with pytest.raises(RuntimeError):
        torch.promote_types(torch.bits8, torch.int32)
    with pytest.raises(RuntimeError, match="Promotion from Bits8 and Int is unsupported"):
        ember.promote_types(ember.bits8, ember.int32)


def test_opaque_tolist_and_numpy_raise():
    x = ember.zeros(2, dtype=ember.uint3)
    with pytest.raises(RuntimeError, match="load_scalar"):
        x.tolist()
    with pytest.raises(TypeError, match="Got unsupported ScalarType UInt3"):
        x.numpy()


def test_float4_repr_prints_packed_bytes():
    codes = [18, 63]
    got = repr(ember.tensor(codes, dtype=ember.uint8).view(ember.float4_e2m1fn_x2))
    want = repr(torch.tensor(codes, dtype=torch.uint8).view(torch.float4_e2m1fn_x2))
    assert got == want.replace("torch", "ember")


def test_opaque_checkpoint_round_trip_with_torch():
    x = ember.tensor([1, 2, 3, 4], dtype=ember.uint8).view(ember.bits16)
    buf = io.BytesIO()
    ember.save(x, buf)
    buf.seek(0)
    t = torch.load(buf)
    assert t.dtype is torch.bits16 and t.view(torch.uint8).tolist() == [1, 2, 3, 4]
    buf = io.BytesIO()
    torch.save(t, buf)
    buf.seek(0)
    back = ember.load(buf)
    assert back.dtype is ember.bits16 and back.view(ember.uint8).tolist() == [1, 2, 3, 4]
