"""Type promotion follows PyTorch's rules (NOTE [ Type promotion ] in ember/_core/dtype.py)."""

import itertools

import numpy as np
import pytest

import ember
from ember._core import dtype as _dt
from tests.conftest import HAS_TORCH

DTYPES = _dt.all_dtypes


def _name(torch_dtype):
    # ember has no complex32 (ComplexHalf): where torch would give it, ember gives complex64
    name = str(torch_dtype).replace("torch.", "")
    return "complex64" if name == "complex32" else name


def _torch_dtype(d):
    import torch

    return getattr(torch, d.name)


def test_promote_types_table_matches_torch():
    torch = pytest.importorskip("torch") if HAS_TORCH else pytest.skip("torch not installed")
    for a, b in itertools.product(DTYPES, DTYPES):
        want = torch.promote_types(_torch_dtype(a), _torch_dtype(b))
        got = ember.promote_types(a, b)
        assert got.name == _name(want), (a, b)


@pytest.mark.parametrize("scalar", [True, 3, 2.5, 1 + 2j])
def test_result_type_with_python_scalar_matches_torch(scalar):
    if not HAS_TORCH:
        pytest.skip("torch not installed")
    import torch

    for d in DTYPES:
        t = ember.zeros(2, dtype=d)
        want = torch.result_type(torch.zeros(2, dtype=_torch_dtype(d)), scalar)
        assert ember.result_type(t, scalar).name == _name(want), d


def test_result_type_zero_dim_against_dims_matches_torch():
    if not HAS_TORCH:
        pytest.skip("torch not installed")
    import torch

    for a, b in itertools.product(DTYPES, DTYPES):
        ta, tb = ember.zeros(2, dtype=a), ember.zeros((), dtype=b)
        want = torch.result_type(torch.zeros(2, dtype=_torch_dtype(a)),
                                 torch.zeros((), dtype=_torch_dtype(b)))
        assert ember.result_type(ta, tb).name == _name(want), (a, b)


def test_int_tensor_plus_float_scalar_is_default_float():
    assert (ember.tensor([1, 2]) + 1.5).dtype == ember.float32
    ember.set_default_dtype(ember.float64)
    try:
        assert (ember.tensor([1, 2]) + 1.5).dtype == ember.float64
    finally:
        ember.set_default_dtype(ember.float32)


def test_float16_keeps_width_with_python_float():
    assert (ember.ones(2, dtype=ember.float16) * 1e3).dtype == ember.float16


def test_int8_scalar_overflow_wraps_like_torch():
    r = ember.tensor([1, 2], dtype=ember.int8) + 1000
    assert r.dtype == ember.int8
    assert r.tolist() == [-23, -22]


def test_bool_add_stays_bool():
    r = ember.tensor([True, False]) + ember.tensor([True, True])
    assert r.dtype == ember.bool and r.tolist() == [True, True]


def test_true_division_of_ints_is_float():
    r = ember.tensor([1, 2]) / ember.tensor([2, 2])
    assert r.dtype == ember.float32 and r.tolist() == [0.5, 1.0]


def test_bfloat16_with_scalar_stays_bfloat16():
    r = ember.ones(3, dtype=ember.bfloat16) + 1.5
    assert r.dtype == ember.bfloat16
    assert r.tolist() == [2.5, 2.5, 2.5]


def test_inplace_rejects_category_upcast():
    t = ember.tensor([1, 2])
    with pytest.raises(RuntimeError, match="can't be cast"):
        t += 1.5
    assert t.tolist() == [1, 2]


def test_inplace_rejects_broadcast_growth():
    t = ember.ones(3)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        t.add_(ember.ones(2, 3))
    assert t.tolist() == [1.0, 1.0, 1.0]


def test_sub_of_bools_raises_like_torch():
    b = ember.tensor([True])
    with pytest.raises(RuntimeError, match="Subtraction"):
        b - b


def test_set_default_dtype_rejects_ints():
    with pytest.raises(TypeError):
        ember.set_default_dtype(ember.int32)
    assert ember.get_default_dtype() == ember.float32


def test_can_cast_is_same_kind():
    assert ember.can_cast(ember.int64, ember.float16)
    assert not ember.can_cast(ember.float32, ember.int64)
    assert not ember.can_cast(ember.complex64, ember.float64)


def test_numpy_scalar_treated_as_scalar():
    r = ember.ones(2, dtype=ember.float32) + np.float64(2.0)
    assert r.dtype == ember.float32
