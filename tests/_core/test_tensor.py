"""Tensor metadata, storage, the NumPy bridge and the Python protocol."""

import pickle

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH


def test_size_is_tuple_subclass_with_repr():
    s = ember.zeros(2, 3).shape
    assert isinstance(s, tuple) and isinstance(s, ember.Size)
    assert s == (2, 3) and repr(s) == "ember.Size([2, 3])"
    assert s.numel() == 6 and isinstance(s[0:1], ember.Size)


def test_size_and_stride_accept_negative_dims():
    t = ember.zeros(2, 3, 4)
    assert t.size(-1) == 4 and t.stride() == (12, 4, 1) and t.stride(0) == 12
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.size(3)


def test_strided_view_metadata_from_numpy():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = ember.from_numpy(base[1:, ::2])
    assert t.shape == (3, 3)
    assert t.stride() == (6, 2)
    assert t.storage_offset() == 6
    assert not t.is_contiguous()
    assert t.data_ptr() == base.ctypes.data + 6 * 4
    assert t.untyped_storage() == ember.from_numpy(base).untyped_storage()
    assert t.untyped_storage().nbytes() == 96


def test_contiguous_copies_only_when_needed():
    t = ember.zeros(2, 3)
    assert t.contiguous() is t
    nc = ember.from_numpy(np.zeros((3, 4), np.float32)[:, ::2])
    c = nc.contiguous()
    assert c.is_contiguous() and c.stride() == (2, 1)
    assert c.untyped_storage() != nc.untyped_storage()


def test_element_size_nbytes_numel_dim():
    t = ember.zeros(2, 3, dtype=ember.float64)
    assert t.element_size() == 8 and t.itemsize == 8
    assert t.nbytes == 48 and t.numel() == 6 and t.dim() == 2 and t.ndim == 2


def test_clone_owns_memory_and_copy_broadcasts():
    t = ember.ones(3)
    c = t.clone()
    c.add_(1)
    assert t.tolist() == [1.0, 1.0, 1.0]
    dst = ember.zeros(2, 3)
    dst.copy_(ember.tensor([1, 2, 3]))
    assert dst.tolist() == [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
    with pytest.raises(RuntimeError):
        dst.copy_(ember.ones(4))


def test_casts_and_to():
    t = ember.tensor([1.7, -2.2])
    assert t.long().tolist() == [1, -2]
    assert t.int().dtype == ember.int32 and t.double().dtype == ember.float64
    assert t.half().dtype == ember.float16 and t.bfloat16().dtype == ember.bfloat16
    assert t.bool().tolist() == [True, True]
    assert t.to(ember.float32) is t
    assert t.to(ember.float32, copy=True) is not t
    assert t.to("cpu") is t
    assert t.to(ember.zeros(1, dtype=ember.float64)).dtype == ember.float64
    assert t.type() == "torch.FloatTensor"
    assert t.type(ember.float64).dtype == ember.float64


def test_item_tolist_and_number_protocol():
    assert ember.tensor(3.5).item() == 3.5
    assert ember.tensor([[1, 2]]).tolist() == [[1, 2]]
    assert float(ember.tensor([2.0])) == 2.0 and int(ember.tensor(7)) == 7
    assert [10, 20, 30][ember.tensor(1)] == 20
    assert bool(ember.tensor([1])) is True
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(ember.ones(2))
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        ember.ones(2).item()
    with pytest.raises(TypeError):
        [1, 2][ember.tensor(1.0)]


def test_len_and_zero_dim_errors():
    assert len(ember.zeros(4, 2)) == 4
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(ember.tensor(1.0))


def test_contains():
    t = ember.tensor([1, 2, 3])
    assert 2 in t and 5 not in t
    with pytest.raises(RuntimeError):
        "a" in t  # noqa: B015


def test_numpy_shares_memory_both_ways():
    a = np.zeros(3, np.float32)
    t = ember.from_numpy(a)
    a[0] = 5
    assert t.tolist()[0] == 5.0
    t.add_(1)
    assert a.tolist() == [6.0, 1.0, 1.0]
    assert t.numpy() is a or np.shares_memory(t.numpy(), a)


def test_from_numpy_rejects_negative_strides_and_unknown_dtypes():
    with pytest.raises(ValueError, match="negative"):
        ember.from_numpy(np.arange(3)[::-1])
    with pytest.raises(TypeError):
        ember.from_numpy(np.zeros(2, dtype=np.longdouble))  # uint16 converts, as in PyTorch


def test_array_protocol_and_dlpack():
    t = ember.tensor([1.0, 2.0])
    assert np.asarray(t).tolist() == [1.0, 2.0]
    back = ember.from_dlpack(np.arange(4.0))
    assert back.dtype == ember.float64 and back.tolist() == [0.0, 1.0, 2.0, 3.0]
    arr = np.from_dlpack(t)
    assert np.shares_memory(arr, t.numpy())


def test_numpy_refuses_requires_grad():
    t = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        t.numpy()


def test_requires_grad_only_for_float_and_complex():
    with pytest.raises(RuntimeError, match="floating point"):
        ember.tensor([1, 2]).requires_grad_()
    assert ember.ones(2).requires_grad_().requires_grad


def test_grad_setter_checks_shape_and_dtype():
    t = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient of size"):
        t.grad = ember.ones(3)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient with dtype"):
        t.grad = ember.ones(2, dtype=ember.float64)
    t.grad = ember.zeros(2)
    assert t.grad.tolist() == [0.0, 0.0]


def test_version_counter_bumps_on_inplace():
    t = ember.zeros(2)
    assert t._version == 0
    t.add_(1)
    t.mul_(2)
    assert t._version == 2


def test_device_objects():
    assert ember.device("cpu") == ember.device("cpu")
    d = ember.device("cuda:1")
    assert d.type == "cuda" and d.index == 1 and str(d) == "cuda:1"
    assert repr(d) == "device(type='cuda', index=1)"
    assert ember.device("cuda", 0) == ember.device("cuda:0")
    if ember.cuda.is_available():  # a bare index is the current accelerator's device
        assert ember.device(0) == ember.device("cuda:0")
    else:  # as PyTorch without an accelerator
        with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
            ember.device(0)
    assert ember.zeros(1).device == ember.device("cpu")
    with pytest.raises(RuntimeError):
        ember.device("nope")
    with pytest.raises(RuntimeError):
        ember.device("cuda:x")


def test_cuda_use_without_gpu_is_a_clear_error():
    try:
        import cupy  # noqa: F401

        pytest.skip("CuPy present")
    except ImportError:
        pass
    # as a CPU-only PyTorch build: AssertionError "Torch not compiled with CUDA enabled"
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        ember.zeros(2).to("cuda")
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        ember.zeros(2, device="cuda")


def test_dtype_objects_and_info():
    assert ember.float32.is_floating_point and not ember.int64.is_floating_point
    assert ember.complex64.is_complex and ember.float == ember.float32
    assert ember.long is ember.int64 and ember.half is ember.float16
    assert repr(ember.float64) == "ember.float64"
    assert pickle.loads(pickle.dumps(ember.bfloat16)) is ember.bfloat16
    fi = ember.finfo(ember.float32)
    assert fi.bits == 32 and fi.eps == np.finfo(np.float32).eps
    assert ember.finfo(ember.bfloat16).eps == 2 ** -7
    assert ember.iinfo(ember.int8).min == -128 and ember.iinfo(ember.uint8).max == 255
    with pytest.raises(TypeError):
        ember.finfo(ember.int32)
    with pytest.raises(TypeError):
        ember.iinfo(ember.float32)


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_finfo_matches_torch():
    import torch

    for name in ["float16", "bfloat16", "float32", "float64"]:
        a, b = ember.finfo(getattr(ember, name)), torch.finfo(getattr(torch, name))
        assert (a.eps, a.max, a.min, a.tiny, a.bits) == (b.eps, b.max, b.min, b.tiny, b.bits)


def test_is_tensor_and_helpers():
    t = ember.zeros(2)
    assert ember.is_tensor(t) and not ember.is_tensor([1])
    assert ember.is_floating_point(t) and ember.numel(t) == 2
