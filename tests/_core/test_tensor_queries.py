"""Tensor metadata queries, legacy methods and storages that torch's CPU build answers in a
fixed way (ember/_core/tensor.py, storage.py, stream.py, tag.py), compared with PyTorch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")

FLAGS = ["is_mps", "is_xpu", "is_ipu", "is_mtia", "is_maia", "is_vulkan", "is_xla",
         "is_mkldnn", "is_nested", "is_sparse_csr"]


@pytest.mark.parametrize("flag", FLAGS)
def test_device_flags_false_on_cpu(flag):
    assert getattr(ember.ones(2), flag) is False


@needs_torch
@pytest.mark.parametrize("name, error", [("xpu", AssertionError), ("mtia", AssertionError),
                                         ("ipu", RuntimeError)])
def test_conversions_to_absent_devices_raise_as_torch(name, error):
    import torch

    with pytest.raises(error):
        getattr(torch.ones(2), name)()
    with pytest.raises(error):
        getattr(ember.ones(2), name)()


def test_pin_memory_without_accelerator_raises():
    if ember.cuda.is_available():
        pytest.skip("an accelerator is present")
    with pytest.raises(RuntimeError, match="accelerator"):
        ember.ones(2).pin_memory()


def test_record_stream_on_cpu_raises():
    with pytest.raises(NotImplementedError):
        ember.ones(2).record_stream(ember.Stream())


def test_legacy_flags():
    x = ember.ones(2)
    assert x.name is None and x.is_distributed() is False
    with pytest.warns(UserWarning, match="volatile"):
        assert x.volatile is False
    assert x.const_data_ptr() == x.data_ptr()
    assert x.to_dense() is x and x.to_dense(ember.float64).dtype == ember.float64


def test_is_nonzero_single_and_errors():
    assert ember.tensor([0.5]).is_nonzero() and not ember.tensor(0).is_nonzero()
    with pytest.raises(RuntimeError, match="more than one"):
        ember.ones(2).is_nonzero()
    with pytest.raises(RuntimeError, match="no values"):
        ember.ones(0).is_nonzero()


def test_is_set_to_same_geometry_only():
    x = ember.ones(2, 3)
    assert x.is_set_to(x.view(2, 3)) and x.is_set_to(x[:])
    assert not x.is_set_to(x.view(3, 2)) and not x.is_set_to(x.clone())
    assert x.is_same_size(ember.zeros(2, 3)) and not x.is_same_size(ember.zeros(3, 2))


@needs_torch
@pytest.mark.parametrize("make", [
    lambda m: m.empty(2, 3, 5), lambda m: m.empty(2, 3, 5).transpose(1, 2),
    lambda m: m.empty(2, 3, 4, 5).permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2),
    lambda m: m.empty(1, 2, 3), lambda m: m.empty(2, 3).as_strided((2, 3), (1, 1)),
    lambda m: m.empty(4, 1).expand(4, 3)])
def test_dim_order_matches_torch(make):
    import torch

    assert make(ember).dim_order() == make(torch).dim_order()


def test_dim_order_ambiguity_check():
    with pytest.raises(RuntimeError, match="unique dim order"):
        ember.empty(1, 2, 3).dim_order(ambiguity_check=True)
    assert ember.empty(1, 2, 3).dim_order(
        ambiguity_check=[ember.contiguous_format, ember.channels_last]) == (0, 1, 2)
    with pytest.raises(TypeError):
        ember.empty(2).dim_order(ambiguity_check="yes")


def test_grad_dtype_defaults_and_leaf_only():
    x = ember.ones(2, requires_grad=True)
    assert x.grad_dtype == ember.float32
    x.grad_dtype = None
    assert x.grad_dtype is None
    with pytest.raises(RuntimeError, match="leaf"):
        (x * 2).grad_dtype = ember.float32


def test_module_load_copies_or_assigns():
    x = ember.zeros(2)
    y = ember.ones(2)
    assert x.module_load(y).tolist() == [1, 1] and x.tolist() == [1, 1]
    z = ember.zeros(2).module_load(y, assign=True)
    assert z.data_ptr() == y.data_ptr()


def test_new_forms():
    x = ember.ones(2, dtype=ember.int32)
    assert x.new([1.5, 2]).tolist() == [1, 2] and x.new([1.5]).dtype == ember.int32
    assert x.new(2, 3).shape == (2, 3) and x.new().shape == (0,)
    assert x.new((2, 3)).tolist() == [2, 3]
    assert x.new(x).data_ptr() == x.data_ptr()
    with pytest.raises(TypeError):
        x.new(ember.ones(2))
    with pytest.raises(TypeError):
        x.new(2, dtype=ember.float32)


def test_new_empty_strided_keeps_dtype():
    r = ember.ones(1, dtype=ember.float64).new_empty_strided((2, 3), (1, 2))
    assert r.stride() == (1, 2) and r.dtype == ember.float64


# -- set_ / resize / sum_to_size -------------------------------------------------------------


def test_set_shares_tensor_memory():
    src = ember.arange(5.)
    x = ember.zeros(3).set_(src)
    assert x.tolist() == src.tolist() and x.data_ptr() == src.data_ptr()


def test_set_storage_offset_size_stride():
    s = ember.arange(5.).untyped_storage()
    x = ember.zeros(3).set_(s, 1, (2,), (2,))
    assert x.tolist() == [1.0, 3.0]


def test_set_dtype_mismatch_raises():
    with pytest.raises(RuntimeError, match="Could not set"):
        ember.zeros(3).set_(ember.arange(5))


def test_resize_warns_and_reshapes():
    with pytest.warns(UserWarning, match="deprecated"):
        r = ember.arange(6.).resize(2, 3)
    assert r.shape == (2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="preserving the number of elements"):
            ember.arange(6.).resize(7)
        assert ember.arange(6.).resize_as(ember.ones(3, 2)).shape == (3, 2)


def test_resize_as_function():
    assert ember.resize_as_(ember.zeros(4), ember.ones(2, 2)).shape == (2, 2)


def test_sum_to_size_gradient():
    x = ember.ones(2, 3, requires_grad=True)
    x.sum_to_size(1, 3).sum().backward()
    assert x.grad.tolist() == [[1, 1, 1], [1, 1, 1]]


# -- storages ---------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("name", ["FloatStorage", "DoubleStorage", "HalfStorage", "LongStorage",
                                  "IntStorage", "ShortStorage", "CharStorage", "ByteStorage",
                                  "BoolStorage", "BFloat16Storage", "ComplexFloatStorage",
                                  "ComplexDoubleStorage"])
def test_legacy_storage_classes_match_torch(name):
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e, t = getattr(ember, name)([1, 0, 2]), getattr(torch, name)([1, 0, 2])
        assert e.tolist() == t.tolist()
        assert str(getattr(ember, name).dtype) .split(".")[1] == str(t.dtype).split(".")[1]
        assert e.type() == t.type() and len(getattr(ember, name)(4)) == 4


def test_tensor_storage_isinstance_by_dtype():
    s = ember.ones(2).storage()
    assert isinstance(s, ember.FloatStorage) and not isinstance(s, ember.DoubleStorage)
    assert isinstance(s, ember.TypedStorage)
    assert ember.ones(2).storage_type() is ember.FloatStorage
    assert ember.ones(2, dtype=ember.int64).storage_type() is ember.LongStorage


def test_storage_casts_and_fill():
    s = ember.FloatStorage([1.5, 2])
    assert s.double().dtype == ember.float64 and s.long().tolist() == [1, 2]
    assert s.fill_(3).tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match="slices"):
        s[0:1]


def test_storage_constructor_errors():
    with pytest.raises(TypeError):
        ember.FloatStorage("a")
    with pytest.raises(RuntimeError):
        ember.FloatStorage(2, device="cpu")


def test_storage_base_and_default_storage():
    assert isinstance(ember.ones(2).untyped_storage(), ember.StorageBase)
    assert ember.Storage is ember.FloatStorage


def test_tensor_from_legacy_storage():
    x = ember.zeros(2).set_(ember.FloatStorage([5, 6, 7]))
    assert x.tolist() == [5.0, 6.0, 7.0]


# -- top-level runtime names ------------------------------------------------------------------


def test_stream_and_event_cpu_semantics():
    s, e = ember.Stream(), ember.Event(enable_timing=True)
    assert s.query() and e.query() and not s.is_capturing()
    s.wait_event(e)
    with pytest.raises(RuntimeError, match="events"):
        s.record_event()
    with pytest.raises(RuntimeError, match="not linked"):
        ember.Stream("cuda")
    e2 = ember.Event(enable_timing=True)
    e.record()
    e2.record()
    assert e.elapsed_time(e2) >= 0
    with pytest.raises(ValueError):
        ember.Event().elapsed_time(ember.Event())


@needs_torch
def test_tag_members_match_torch():
    import torch

    assert {t.name: int(t.value) for t in ember.Tag} == \
        {n: t.value for n, t in torch.Tag.__members__.items()}


def test_error_aliases_and_formats():
    assert ember.OutOfMemoryError is ember.cuda.OutOfMemoryError
    assert issubclass(ember.AcceleratorError, RuntimeError)
    assert ember.legacy_contiguous_format is ember.contiguous_format
    with ember.DisableTorchFunction():
        pass
    assert np.asarray(ember.ones(1)).shape == (1,)


def _storage_uses(m):
    x = m.ones(2)
    return [lambda: x.storage(), lambda: m.FloatStorage(2), lambda: m.TypedStorage(3)]


@pytest.mark.parametrize("first", range(3))
def test_typed_storage_deprecation_warns_once_at_the_caller(first, monkeypatch):
    # NOTE [ TypedStorage deprecation warning ]: the first use warns, naming the user's line;
    # later ones stay silent even when the filters say "always"
    import ember._core.storage as st

    monkeypatch.setattr(st, "_typed_storage_warned", False)
    uses = _storage_uses(ember)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        uses[first]()
        for use in uses:
            use()
        ember.ones(2).untyped_storage()
    assert len(got) == 1 and got[0].category is UserWarning
    assert got[0].filename == __file__
    assert "TypedStorage is deprecated" in str(got[0].message)
    if HAS_TORCH:
        import torch

        flag = getattr(torch.storage, "_warn_typed_storage_removal", None)
        if flag is None:
            pytest.skip("this PyTorch has no typed-storage warning to compare with")
        monkeypatch.setitem(flag.__dict__, "has_warned", False)
        with warnings.catch_warnings(record=True) as want:
            warnings.simplefilter("always")
            _storage_uses(torch)[first]()
        assert [str(w.message) for w in want] == [str(w.message) for w in got]


def test_internal_typed_storages_do_not_warn(monkeypatch, tmp_path):
    # saving and loading tensors builds typed storages inside ember: no warning, as in torch
    import ember._core.storage as st

    monkeypatch.setattr(st, "_typed_storage_warned", False)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        ember.save({"w": ember.arange(3.0)}, tmp_path / "t.pt")
        loaded = ember.load(tmp_path / "t.pt")
        loaded["w"].clone().untyped_storage()
    assert not [w for w in got if "TypedStorage" in str(w.message)]
    assert st._typed_storage_warned is False
