"""Focused tests for ember/_ops/creation.py, from_data.py and ranges.py (the generic ones come
from the OpInfo table in ember/testing/opinfos/creation.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.testing import assert_close
from tests.conftest import HAS_TORCH

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


# ------------------------------------------------------------------------------------------------
# tensor(): dtype inference (NOTE [ tensor() dtype inference ])
#
# Each case builds its data from a library (ember or torch) so 0-dim tensors inside lists can
# be compared; the expected dtype and shape were read off PyTorch 2.13.

def _scalar(lib, value, dtype):
    return lib.tensor(value, dtype=getattr(lib, dtype))


INFERENCE = [
    ("ints", lambda lib: [1, 2], "int64", (2,)),
    ("int_float", lambda lib: [1, 2.0], "float32", (2,)),
    ("bool_int", lambda lib: [True, 1], "int64", (2,)),
    ("bools", lambda lib: [True, False], "bool", (2,)),
    ("int_complex", lambda lib: [1, 2j], "complex64", (2,)),
    ("bool_float", lambda lib: [True, 2.5], "float32", (2,)),
    ("empty", lambda lib: [], "float32", (0,)),
    ("empty_nested", lambda lib: [[], []], "float32", (2, 0)),
    ("int", lambda lib: 5, "int64", ()),
    ("float", lambda lib: 5.0, "float32", ()),
    ("bool", lambda lib: True, "bool", ()),
    ("complex", lambda lib: 1j, "complex64", ()),
    ("nested_mixed", lambda lib: [[1, 2], [3, 4.0]], "float32", (2, 2)),
    ("tuples", lambda lib: [(1, 2), [3, 4]], "int64", (2, 2)),
    ("range", lambda lib: range(4), "int64", (4,)),
    ("np_float64", lambda lib: np.float64(1.5), "float64", ()),
    ("np_float32", lambda lib: np.float32(1.5), "float32", ()),
    ("np_int32", lambda lib: np.int32(3), "int32", ()),
    ("np_bool", lambda lib: np.bool_(True), "bool", ()),
    ("np_float16", lambda lib: np.float16(1), "float16", ()),
    ("np_complex64", lambda lib: np.complex64(1j), "complex64", ()),
    ("np_uint8", lambda lib: np.uint8(3), "uint8", ()),
    ("list_np_float64_int", lambda lib: [np.float64(1.0), 2], "float64", (2,)),
    ("list_np_float32_float", lambda lib: [np.float32(1.0), 2.0], "float32", (2,)),
    ("list_np_int32_int", lambda lib: [np.int32(1), 2], "int64", (2,)),
    ("list_np_int32_float", lambda lib: [np.int32(1), 2.0], "float32", (2,)),
    ("list_np_f16_f32", lambda lib: [np.float16(1), np.float32(2)], "float32", (2,)),
    ("list_np_u8_i8", lambda lib: [np.uint8(1), np.int8(2)], "int16", (2,)),
    ("list_int_np_float64", lambda lib: [1, np.float64(2.0)], "float64", (2,)),
    ("list_float_np_f16", lambda lib: [1.0, np.float16(2.0)], "float32", (2,)),
    ("list_complex_np_f64", lambda lib: [1j, np.float64(2)], "complex128", (2,)),
    ("list_np_c64_float", lambda lib: [np.complex64(1), 1.0], "complex64", (2,)),
    ("nested_np_f64", lambda lib: [[1], [np.float64(1)]], "float64", (2, 1)),
    ("list_0d_f64", lambda lib: [_scalar(lib, 1.5, "float64"), 2], "float64", (2,)),
    ("list_0d_i32_int", lambda lib: [_scalar(lib, 1, "int32"), 2], "int64", (2,)),
    ("list_0d_i32_float", lambda lib: [_scalar(lib, 1, "int32"), 2.0], "float32", (2,)),
    ("list_0d_f16_float", lambda lib: [_scalar(lib, 1, "float16"), 2.0], "float32", (2,)),
    ("list_0d_bools", lambda lib: [lib.tensor(True), lib.tensor(False)], "bool", (2,)),
    ("list_0d_f16_f64", lambda lib: [_scalar(lib, 1, "float16"), _scalar(lib, 1, "float64")],
     "float64", (2,)),
    ("list_int64_0d_float", lambda lib: [lib.tensor(3), 4.5], "float32", (2,)),
    ("list_one_element_1d", lambda lib: [lib.tensor([1.0]), lib.tensor([3.0])], "float32",
     (2,)),
    ("list_np_arrays_i32", lambda lib: [np.array([1, 2], np.int32), np.array([3, 4], np.int32)],
     "int32", (2, 2)),
    ("list_np_array_and_list", lambda lib: [np.array([1, 2], np.int32), [3, 4]], "int64",
     (2, 2)),
    ("list_np_f64_array_and_list", lambda lib: [np.array([1.0, 2]), [3, 4]], "float64", (2, 2)),
    ("list_np_f16_array_and_floats", lambda lib: [np.zeros(2, np.float16), [1.0, 2.0]],
     "float32", (2, 2)),
    ("list_2d_np_arrays", lambda lib: [np.zeros((2, 2)), np.ones((2, 2))], "float64",
     (2, 2, 2)),
    ("np_array_f64", lambda lib: np.array([1.0, 2.0]), "float64", (2,)),
    ("np_array_i16", lambda lib: np.array([1], np.int16), "int16", (1,)),
    ("np_array_bool", lambda lib: np.array([True]), "bool", (1,)),
    ("np_0d", lambda lib: np.array(3.0), "float64", ()),
    ("big_int", lambda lib: 2**62, "int64", ()),
    ("big_int_with_float", lambda lib: [2**63 - 1, 1.0], "float32", (2,)),
    ("float_overflowing_float32", lambda lib: [1e40], "float32", (1,)),
]


@pytest.mark.parametrize("name,make,dtype,shape", INFERENCE, ids=[c[0] for c in INFERENCE])
def test_tensor_dtype_inference(name, make, dtype, shape):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = ember.tensor(make(ember))
    assert t.dtype.name == dtype
    assert tuple(t.shape) == shape


@needs_torch
@pytest.mark.parametrize("name,make,dtype,shape", INFERENCE, ids=[c[0] for c in INFERENCE])
def test_tensor_dtype_inference_matches_torch(name, make, dtype, shape):
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.tensor(make(torch))
        got = ember.tensor(make(ember))
    assert_close(got, want, rtol=0, atol=0)


def test_tensor_inference_follows_default_dtype():
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.tensor([1.0]).dtype == ember.float64
        assert ember.tensor([1j]).dtype == ember.complex128
        assert ember.tensor([1]).dtype == ember.int64
    finally:
        ember.set_default_dtype(ember.float32)


BAD_DATA = [
    ("ragged", [[1, 2], [3]], ValueError, "expected sequence of length 2 at dim 1 \\(got 1\\)"),
    ("ragged_longer", [[1, 2], [3, 4, 5]], ValueError, "expected sequence of length 2"),
    ("ragged_np_arrays", [np.zeros(2), np.ones(3)], ValueError, "expected sequence of length"),
    ("scalar_then_list", [1, [2]], TypeError, ""),
    ("list_then_scalar", [[1], 2], TypeError, ""),
    ("string_element", ["a"], ValueError, "too many dimensions 'str'"),
    ("none_element", [None], RuntimeError, "Could not infer dtype of NoneType"),
    ("object", object(), RuntimeError, "Could not infer dtype of object"),
    ("dict", {1: 2}, RuntimeError, "Could not infer dtype of dict"),
    ("string", "abc", TypeError, "invalid data type 'str'"),
    ("mixed_string", [1, "a"], TypeError, ""),
    ("too_big_int", 2**64, ValueError, "Overflow"),
    ("too_big_int_in_list", [2**64], ValueError, "Overflow"),
    ("multi_element_tensors", None, ValueError, "only one element tensors"),
    ("np_strings", np.array(["a"]), TypeError, "can't convert np.ndarray"),
    ("np_longdouble", np.array([1], np.longdouble), TypeError, "can't convert np.ndarray"),
    ("np_negative_strides", np.arange(3)[::-1], ValueError, "negative"),
    ("np_big_endian", np.arange(3, dtype=">f4"), ValueError, "byte order"),
]


@pytest.mark.parametrize("name,data,error,match", BAD_DATA, ids=[c[0] for c in BAD_DATA])
def test_tensor_bad_data_raises(name, data, error, match):
    if name == "multi_element_tensors":
        data = [ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0])]
    # mixed_string raises in PyTorch with a TypeError; so does ember
    if name == "mixed_string":
        with pytest.raises((TypeError, ValueError)):
            ember.tensor(data)
        return
    with pytest.raises(error, match=match or None):
        ember.tensor(data)


@needs_torch
@pytest.mark.parametrize("name,data,error,match", BAD_DATA, ids=[c[0] for c in BAD_DATA])
def test_tensor_bad_data_raises_like_torch(name, data, error, match):
    import torch

    if name == "multi_element_tensors":
        data = [torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])]
    if name == "mixed_string":
        pytest.skip("PyTorch raises ValueError for mixed strings")
    with pytest.raises(error):
        torch.tensor(data)


def test_tensor_explicit_dtype_converts():
    assert ember.tensor([1.7, -1.7], dtype=ember.int64).tolist() == [1, -1]
    assert ember.tensor([-1], dtype=ember.uint8).tolist() == [255]
    assert ember.tensor([0.5, 0.0], dtype=ember.bool).tolist() == [True, False]
    assert ember.tensor([1], dtype=float).dtype == ember.float64
    assert ember.tensor([[1], [2.0]], dtype=ember.complex64).dtype == ember.complex64
    assert ember.tensor([1.1], dtype=ember.bfloat16).item() == pytest.approx(1.1015625)
    assert ember.tensor([1e300], dtype=ember.float32).tolist() == [float("inf")]


def test_tensor_explicit_dtype_overflow_raises():
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.tensor([300], dtype=ember.uint8)
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.tensor([float("nan")], dtype=ember.int64)
    with pytest.raises(TypeError, match="complex"):
        ember.tensor([1 + 1j], dtype=ember.float32)


def test_tensor_copies_numpy_data():
    a = np.arange(3.0)
    t = ember.tensor(a)
    a[0] = 7
    assert t.tolist() == [0.0, 1.0, 2.0]
    s = np.arange(6.0)[::2]
    assert ember.tensor(s).tolist() == [0.0, 2.0, 4.0]
    assert ember.tensor(s).is_contiguous()


def test_tensor_from_tensor_warns_and_copies():
    src = ember.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="detach"):
        t = ember.tensor(src)
    assert not t.requires_grad and t.is_leaf
    t.add_(1)
    assert src.tolist() == [1.0, 1.0]
    with pytest.warns(UserWarning):
        assert ember.tensor(ember.tensor([1, 2], dtype=ember.int16)).dtype == ember.int16


def test_tensor_requires_grad():
    t = ember.tensor([1.0, 2.0], requires_grad=True)
    assert t.requires_grad and t.is_leaf
    with pytest.raises(RuntimeError, match="floating point"):
        ember.tensor([1, 2], requires_grad=True)


def test_tensor_result_owns_contiguous_memory():
    t = ember.tensor([[1, 2], [3, 4]])
    assert t.is_contiguous() and t.stride() == (2, 1)


# ------------------------------------------------------------------------------------------------
# as_tensor / asarray / from_numpy / from_dlpack


def test_as_tensor_shares_numpy_memory():
    a = np.arange(3.0)
    t = ember.as_tensor(a)
    t[0] = 9
    assert a[0] == 9
    a[1] = 8
    assert t[1].item() == 8


def test_as_tensor_converts_when_needed():
    a = np.arange(3.0)
    t = ember.as_tensor(a, dtype=ember.float32)
    t[0] = 5
    assert a[0] == 0 and t.dtype == ember.float32
    assert ember.as_tensor([1, 2]).dtype == ember.int64
    assert ember.as_tensor(2.0).dtype == ember.float32


def test_as_tensor_of_tensor_is_identity():
    t = ember.ones(2)
    assert ember.as_tensor(t) is t
    assert ember.as_tensor(t, dtype=ember.float64).dtype == ember.float64


def test_asarray_copy_semantics():
    a = np.arange(3.0)
    shared = ember.asarray(a)
    shared[1] = 7
    assert a[1] == 7
    copied = ember.asarray(a, copy=True)
    copied[2] = 6
    assert a[2] == 2
    with pytest.raises(ValueError, match="can't alias"):
        ember.asarray(a, dtype=ember.float32, copy=False)
    t = ember.ones(2)
    assert ember.asarray(t) is t
    assert ember.asarray(t, copy=True) is not t
    assert ember.asarray([1.0, 2]).dtype == ember.float32
    assert ember.asarray([1.0], requires_grad=True).requires_grad
    assert ember.asarray(np.float64(2)).dtype == ember.float64


def test_from_numpy_shares_both_ways():
    a = np.zeros((2, 3), np.float32)
    t = ember.from_numpy(a)
    t.fill_(2)
    assert (a == 2).all()
    a[0, 0] = 5
    assert t[0, 0].item() == 5
    assert t.dtype == ember.float32 and tuple(t.shape) == (2, 3)


def test_from_numpy_keeps_strides():
    a = np.arange(12.0).reshape(3, 4)[:, ::2]
    t = ember.from_numpy(a)
    assert t.stride() == (4, 2)
    assert t.tolist() == a.tolist()


def test_from_numpy_rejects(monkeypatch):
    from ember import _settings

    # the warning comes once a process: another test in this worker may have had it
    monkeypatch.setattr(_settings, "_warned_once", set())
    with pytest.raises(TypeError, match="expected np.ndarray"):
        ember.from_numpy([1, 2])
    with pytest.raises(TypeError, match="can't convert"):
        ember.from_numpy(np.array(["a"]))
    with pytest.raises(ValueError, match="negative"):
        ember.from_numpy(np.arange(3)[::-1])
    with pytest.raises(ValueError, match="byte order"):
        ember.from_numpy(np.arange(3, dtype=">f4"))
    with pytest.warns(UserWarning, match="not writable"):
        ember.from_numpy(np.broadcast_to(np.arange(3.0), (2, 3)))


def test_from_dlpack_shares_memory():
    a = np.arange(4.0)
    t = ember.from_dlpack(a)
    t[0] = 3
    assert a[0] == 3
    back = np.from_dlpack(ember.arange(3))
    assert back.tolist() == [0, 1, 2]


# ------------------------------------------------------------------------------------------------
# the legacy constructor


def test_legacy_constructor_sizes():
    assert tuple(ember.Tensor(2, 3).shape) == (2, 3)
    assert ember.Tensor(2, 3).dtype == ember.float32
    assert tuple(ember.Tensor(ember.Size([4, 1])).shape) == (4, 1)
    assert tuple(ember.Tensor().shape) == (0,)


def test_legacy_constructor_data():
    t = ember.Tensor([1, 2])
    assert t.dtype == ember.float32 and t.tolist() == [1.0, 2.0]
    assert ember.Tensor([True]).tolist() == [1.0]
    assert ember.Tensor((2, 3)).tolist() == [2.0, 3.0]  # a tuple is data, not a size
    assert ember.Tensor(np.array([1, 2])).dtype == ember.float32
    assert ember.Tensor([[1, 2], [3, 4]]).shape == (2, 2)


def test_legacy_constructor_aliases_tensor():
    src = ember.ones(2, dtype=ember.int64)
    t = ember.Tensor(src)
    assert t.dtype == ember.int64
    t.fill_(3)
    assert src.tolist() == [3, 3]


def test_legacy_constructor_errors():
    with pytest.raises(TypeError, match="must be a sequence"):
        ember.Tensor(3.5)
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.Tensor(-1)
    with pytest.raises(TypeError):
        ember.Tensor(2, dtype=ember.float64)


def test_legacy_constructor_subclass():
    class Sub(ember.Tensor):
        pass

    s = Sub([1.0, 2.0])
    assert type(s) is Sub and s.tolist() == [1.0, 2.0]


# ------------------------------------------------------------------------------------------------
# filled tensors


@pytest.mark.parametrize("size", [(2, 3), ((2, 3),), ([2, 3],), (ember.Size([2, 3]),),
                                  (np.int64(2), 3)], ids=["varargs", "tuple", "list", "Size",
                                                         "numpy_int"])
@pytest.mark.parametrize("fn", [ember.zeros, ember.ones, ember.empty])
def test_factory_size_forms(fn, size):
    t = fn(*size)
    assert tuple(t.shape) == (2, 3) and t.dtype == ember.float32


def test_factory_size_keyword_and_errors():
    assert tuple(ember.zeros(size=(2, 3)).shape) == (2, 3)
    assert tuple(ember.zeros(()).shape) == ()
    with pytest.raises(TypeError):
        ember.zeros()
    with pytest.raises(TypeError):
        ember.zeros(2.0)
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.ones(2, -1)


def test_factory_dtype_device_requires_grad():
    assert ember.zeros(2, dtype=int).dtype == ember.int64
    assert ember.ones(2, device="cpu").device == ember.device("cpu")
    assert ember.zeros(2, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        ember.zeros(2, dtype=ember.int64, requires_grad=True)


def test_factory_out():
    out = ember.zeros(3, dtype=ember.int64)
    r = ember.ones(2, out=out)
    assert r is out and out.tolist() == [1, 1]


@pytest.mark.parametrize("value,dtype", [(True, "bool"), (3, "int64"), (1.5, "float32"),
                                         (1j, "complex64"), (np.float32(1), "float32")])
def test_full_infers_dtype_from_value(value, dtype):
    assert ember.full((2,), value).dtype.name == dtype


def test_full_values_and_errors():
    assert ember.full((2,), 1.5, dtype=ember.int64).tolist() == [1, 1]
    assert ember.full((2,), ember.tensor(1.5, dtype=ember.float64)).dtype == ember.float32
    assert ember.full((2,), -1, dtype=ember.uint8).tolist() == [255, 255]
    with pytest.raises(TypeError, match="tuple of ints"):
        ember.full(2, 3)
    with pytest.raises(RuntimeError, match="uint8_t without overflow"):
        ember.full((2,), 300, dtype=ember.uint8)
    with pytest.raises(RuntimeError, match="int64_t without overflow"):
        ember.full((2,), float("inf"), dtype=ember.int64)
    with pytest.raises(RuntimeError, match="float without overflow"):
        ember.full((1,), 1e300, dtype=ember.float32)
    # float16 refuses it too in torch 2.13 (inf itself is stored), but for one element,
    # which torch rounds to inf
    with pytest.raises(RuntimeError, match="c10::Half without overflow"):
        ember.full((2,), 1e6, dtype=ember.float16)
    assert ember.full((1,), 1e6, dtype=ember.float16).tolist() == [float("inf")]
    assert ember.full((1,), float("inf"), dtype=ember.float16).tolist() == [float("inf")]


def test_empty_strided():
    t = ember.empty_strided((2, 3), (1, 2))
    assert t.stride() == (1, 2) and tuple(t.shape) == (2, 3)
    assert ember.empty_strided((2, 0), (1, 2)).numel() == 0
    with pytest.raises(RuntimeError, match="dimensionality"):
        ember.empty_strided((2, 3), (1,))
    with pytest.raises(RuntimeError, match="overflowed"):
        ember.empty_strided((2, 3), (-1, 2))


def test_empty_channels_last():
    t = ember.empty(2, 3, 4, 5, memory_format=ember.channels_last)
    assert t.is_contiguous(memory_format=ember.channels_last)


# -- *_like -----------------------------------------------------------------------------------


def _transposed():
    return ember.from_numpy(np.ones((2, 3), np.float64).T)


@pytest.mark.parametrize("fn", [ember.zeros_like, ember.ones_like, ember.empty_like,
                                lambda t, **kw: ember.full_like(t, 2.7, **kw)])
def test_like_preserves_dtype_and_layout(fn):
    src = _transposed()
    r = fn(src)
    assert r.dtype == ember.float64 and tuple(r.shape) == (3, 2)
    assert r.stride() == src.stride()
    assert fn(src, memory_format=ember.contiguous_format).stride() == (2, 1)
    assert fn(src, dtype=ember.int32).dtype == ember.int32


def test_like_results_do_not_require_grad():
    src = ember.ones(2, requires_grad=True)
    assert not ember.ones_like(src).requires_grad
    assert ember.zeros_like(src, requires_grad=True).requires_grad


def test_like_expanded_input_gets_contiguous_strides():
    src = ember.from_numpy(np.broadcast_to(np.ones(3), (2, 3)).copy())[0:1]
    assert ember.zeros_like(src).is_contiguous()


def test_full_like_casts_value_to_input_dtype():
    assert ember.full_like(ember.ones(2, dtype=ember.int64), 2.7).tolist() == [2, 2]
    assert ember.full_like(ember.ones(2), True).tolist() == [1.0, 1.0]


# -- new_* ------------------------------------------------------------------------------------


def test_new_methods_take_self_dtype_and_device():
    y = ember.ones(2, dtype=ember.float64)
    assert y.new_tensor([1, 2]).dtype == ember.float64
    assert ember.ones(2, dtype=ember.int64).new_tensor([1.5]).tolist() == [1]
    assert y.new_tensor([1], dtype=ember.int32).dtype == ember.int32
    assert tuple(y.new_zeros(2, 3).shape) == (2, 3) and y.new_zeros((2, 3)).dtype == y.dtype
    assert y.new_ones(2).tolist() == [1.0, 1.0]
    assert y.new_full((2,), 3).tolist() == [3.0, 3.0]
    assert ember.ones(1, dtype=ember.int64).new_full((2,), 3.5).tolist() == [3, 3]
    assert tuple(y.new_empty(()).shape) == ()
    assert y.new_zeros(2, requires_grad=True).requires_grad
    assert y.new_zeros(2).device == y.device
    with pytest.raises(TypeError, match="tuple of ints"):
        y.new_full(2, 3)


def test_new_tensor_from_tensor_warns():
    with pytest.warns(UserWarning, match="detach"):
        r = ember.ones(2, dtype=ember.float64).new_tensor(ember.ones(2))
    assert r.dtype == ember.float64


# ------------------------------------------------------------------------------------------------
# eye / ranges / index helpers / meshgrid


def test_eye():
    assert ember.eye(2).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert tuple(ember.eye(2, 3).shape) == (2, 3)
    assert ember.eye(2, 3, dtype=ember.bool).dtype == ember.bool
    assert tuple(ember.eye(0).shape) == (0, 0)
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0, got -1"):
        ember.eye(-1)


@pytest.mark.parametrize("args,kwargs,dtype", [
    ((5,), {}, "int64"),
    ((0.0, 1, 0.1), {}, "float32"),
    ((5, 0, -1), {}, "int64"),
    ((0, 2.5, 1), {"dtype": "int64"}, "int64"),
    ((0.5, 3, 1), {"dtype": "int64"}, "int64"),
    ((0.7, 5.2, 1.1), {"dtype": "int64"}, "int64"),
    ((-2.5, 2), {}, "float32"),
    ((0, 1, 1 / 3), {}, "float32"),
    ((3,), {"dtype": "float16"}, "float16"),
    ((True,), {}, "int64"),
    ((np.int32(3),), {}, "int64"),
    ((np.float64(3),), {}, "float32"),
    ((0, 100, 0.37), {"dtype": "float64"}, "float64"),
])
def test_arange_values_and_dtype(args, kwargs, dtype):
    kw = {k: getattr(ember, v) for k, v in kwargs.items()}
    t = ember.arange(*args, **kw)
    assert t.dtype.name == dtype
    if HAS_TORCH:
        import torch

        want = torch.arange(*args, **{k: getattr(torch, v) for k, v in kwargs.items()})
        assert_close(t, want)


def test_arange_keywords_and_tensors():
    assert ember.arange(end=3).tolist() == [0, 1, 2]
    assert ember.arange(start=1, end=3).tolist() == [1, 2]
    assert ember.arange(ember.tensor(3)).tolist() == [0, 1, 2]
    assert ember.arange(ember.tensor(3.0)).dtype == ember.float32
    assert ember.arange(1.0, 4, requires_grad=True).requires_grad


def test_arange_errors():
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        ember.arange(0, 1, 0)
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        ember.arange(0, -1)
    with pytest.raises(RuntimeError, match="unsupported range"):
        ember.arange(0, float("nan"))
    with pytest.raises(NotImplementedError, match="Bool"):
        ember.arange(3, dtype=ember.bool)


def test_range_is_inclusive_and_deprecated():
    with pytest.warns(UserWarning, match="deprecated"):
        t = ember.range(0, 5)
    assert t.dtype == ember.float32 and t.tolist() == [0.0, 1, 2, 3, 4, 5]
    with pytest.warns(UserWarning):
        assert ember.range(0, 5, 2).tolist() == [0.0, 2.0, 4.0]
    with pytest.warns(UserWarning):
        assert ember.range(0, 5, dtype=ember.int64).dtype == ember.int64
    with pytest.raises(RuntimeError, match="step must be nonzero"), pytest.warns(UserWarning):
        ember.range(0, 1, 0)


def test_linspace():
    assert ember.linspace(0, 1, 5).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert ember.linspace(0, 10, 5, dtype=ember.int64).tolist() == [0, 2, 5, 7, 10]
    assert ember.linspace(10, 0, 4, dtype=ember.int64).tolist() == [10, 6, 3, 0]
    assert ember.linspace(0, 1, 1).tolist() == [0.0]
    assert tuple(ember.linspace(0, 1, 0).shape) == (0,)
    assert ember.linspace(0, 1j, 3).dtype == ember.complex64
    assert ember.linspace(ember.tensor(0), ember.tensor(1.0), 3).tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.linspace(0, 1, -1)
    with pytest.raises(TypeError):
        ember.linspace(0, 1, 2.5)


@needs_torch
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_linspace_matches_torch_exactly(dtype):
    import torch

    for start, end, steps in [(-3.5, 7.25, 12), (0, 1, 1000), (1e-3, 5, 33), (2, -2, 9)]:
        got = ember.linspace(start, end, steps, dtype=getattr(ember, dtype))
        want = torch.linspace(start, end, steps, dtype=getattr(torch, dtype))
        assert_close(got, want, rtol=0, atol=0)


def test_logspace():
    assert ember.logspace(0, 2, 3).tolist() == [1.0, 10.0, 100.0]
    assert ember.logspace(0, 2, 3, base=2).tolist() == [1.0, 2.0, 4.0]
    assert ember.logspace(0, 3, 4, dtype=ember.int64).tolist() == [1, 10, 100, 1000]
    assert ember.logspace(-1, 2, 5, base=3.0, dtype=ember.int64).tolist() == [0, 0, 1, 3, 9]


@pytest.mark.parametrize("fn,np_fn", [(ember.tril_indices, np.tril_indices),
                                      (ember.triu_indices, np.triu_indices)])
@pytest.mark.parametrize("row,col,offset", [(3, 3, 0), (3, 4, 1), (3, 4, -1), (4, 3, -5),
                                            (3, 4, 7), (0, 3, 0)])
def test_tri_indices(fn, np_fn, row, col, offset):
    got = fn(row, col, offset)
    want = np.stack(np_fn(row, offset, col)).reshape(2, -1)
    assert got.dtype == ember.int64 and got.tolist() == want.tolist()


def test_tri_indices_errors_and_dtype():
    assert ember.tril_indices(3, 3, dtype=ember.int32).dtype == ember.int32
    with pytest.raises(RuntimeError, match="row must be non-negative"):
        ember.triu_indices(-1, 4)
    with pytest.raises(NotImplementedError):
        ember.tril_indices(3, 3, dtype=ember.float32)


def test_meshgrid_indexing():
    a, b = ember.arange(2), ember.arange(3)
    x, y = ember.meshgrid(a, b, indexing="ij")
    assert tuple(x.shape) == (2, 3) and x.tolist() == [[0, 0, 0], [1, 1, 1]]
    assert y.tolist() == [[0, 1, 2], [0, 1, 2]]
    x, y = ember.meshgrid([a, b], indexing="xy")
    assert tuple(x.shape) == (3, 2) and x.tolist() == [[0, 1]] * 3
    shapes = [tuple(t.shape) for t in ember.meshgrid(a, b, ember.arange(4), indexing="xy")]
    assert shapes == [(3, 2, 4)] * 3
    shapes = [tuple(t.shape) for t in ember.meshgrid(ember.tensor(1), b, indexing="ij")]
    assert shapes == [(1, 3)] * 2


def test_meshgrid_outputs_are_views():
    a = ember.arange(2.0)
    x, _ = ember.meshgrid(a, ember.arange(3.0), indexing="ij")
    assert x.stride() == (1, 0)
    assert x.untyped_storage() == a.untyped_storage()


def test_meshgrid_warns_without_indexing():
    with pytest.warns(UserWarning, match="indexing"):
        ember.meshgrid(ember.arange(2), ember.arange(3))


def test_meshgrid_gradient():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x, y = ember.meshgrid(a, b, indexing="xy")
    (x * y).sum().backward()
    assert a.grad.tolist() == [6.0, 6.0]
    assert b.grad.tolist() == [3.0, 3.0, 3.0]


# ------------------------------------------------------------------------------------------------
# fill_ / zero_


def test_fill_and_zero_bump_version_and_write_views():
    base = ember.zeros(2, 3)
    row = base[0]
    v0 = base._version
    row.fill_(5)
    assert base.tolist() == [[5.0] * 3, [0.0] * 3]
    assert base._version == v0 + 1 and row._version == v0 + 1
    other = ember.zeros(3)
    base.zero_()
    assert base.tolist() == [[0.0] * 3] * 2 and other._version == 0
    assert ember.fill_(ember.zeros(2), 1).tolist() == [1.0, 1.0]
    assert ember.zero_(ember.ones(2)).tolist() == [0.0, 0.0]


def test_fill_values():
    assert ember.zeros(3, dtype=ember.int64).fill_(1.5).tolist() == [1, 1, 1]
    assert ember.zeros(2, dtype=ember.bool).fill_(2).tolist() == [True, True]
    assert ember.zeros(2).fill_(ember.tensor(2.5, dtype=ember.float64)).tolist() == [2.5, 2.5]
    with pytest.raises(RuntimeError, match="0-dimension value tensor"):
        ember.zeros(3).fill_(ember.ones(1))
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.zeros(2, dtype=ember.uint8).fill_(300)
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.zeros(2).fill_(1j)


def test_fill_refuses_leaf_requiring_grad():
    x = ember.zeros(3, requires_grad=True)
    for f in (lambda: x.fill_(1), lambda: x.zero_()):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            f()
    with ember.no_grad():
        x.fill_(2)
    assert x.tolist() == [2.0, 2.0, 2.0]


def test_fill_autograd():
    a = ember.ones(3, requires_grad=True)
    x = a * 2
    x.fill_(3.0)
    assert x.requires_grad and x.grad_fn is not None
    x.sum().backward()
    assert a.grad is None or a.grad.tolist() == [0.0, 0.0, 0.0]
    v = ember.tensor(2.0, requires_grad=True)
    y = ember.zeros(3)
    y.fill_(v)
    assert y.requires_grad
    y.sum().backward()
    assert v.grad.item() == 3.0
