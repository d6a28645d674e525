"""Tensor printing: ``repr`` must equal PyTorch's, with ``torch.`` spelled ``ember.``.

The table below builds each tensor from a NumPy array in both frameworks and compares the
two reprs (skipped without PyTorch). A few literal expectations, taken from PyTorch 2.13,
keep the suite meaningful when PyTorch is not installed.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import ember
from ember._core import _print
from tests.conftest import HAS_TORCH

if HAS_TORCH:
    import torch

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")

BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.fixture(autouse=True)
def _restore_printoptions():
    """Every test starts from and leaves the default options (in both frameworks)."""
    _print.set_printoptions(profile="default")
    if HAS_TORCH:
        torch.set_printoptions(profile="default")
    yield
    _print.set_printoptions(profile="default")
    ember.set_default_dtype(ember.float32)
    if HAS_TORCH:
        torch.set_printoptions(profile="default")
        torch.set_default_dtype(torch.float32)


def _rand(shape, scale=1.0, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _ember(array, requires_grad=False):
    t = ember.from_numpy(np.array(array, copy=True))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _torch(array, requires_grad=False):
    a = np.array(array, copy=True)
    if a.dtype == BF16:
        t = torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)  # exact
    else:
        t = torch.from_numpy(a)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _expected(array, requires_grad=False):
    return repr(_torch(array, requires_grad)).replace("torch.", "ember.")


# ------------------------------------------------------------------------------------------------
# the table: id -> NumPy array (its dtype is the tensor's dtype)

f32, f64, f16, c64, c128 = np.float32, np.float64, np.float16, np.complex64, np.complex128
nan, inf = np.nan, np.inf

CASES = {
    # zero-dim
    "0d_float": np.array(3.5, f32),
    "0d_float_int_valued": np.array(-2.0, f32),
    "0d_float_tiny": np.array(1e-10, f32),
    "0d_float_huge": np.array(3e20, f64),
    "0d_nan": np.array(nan, f32),
    "0d_neg_inf": np.array(-inf, f32),
    "0d_neg_zero": np.array(-0.0, f32),
    "0d_int": np.array(7, np.int64),
    "0d_int32": np.array(-7, np.int32),
    "0d_bool": np.array(True),
    "0d_complex": np.array(1 + 2j, c64),
    "0d_complex128": np.array(-1.25 - 0.5j, c128),
    "0d_float16": np.array(0.1, f16),
    "0d_bfloat16": np.array(0.1, BF16),
    # 1-D floats
    "int_valued": np.array([1.0, 2.0, -3.0], f32),
    "int_valued_large": np.array([1e7, -2.0, 0.0], f32),
    "int_valued_sci": np.array([1e9, 1.0], f32),
    "fractional": np.array([0.1, 2.5, -3.75], f32),
    "mixed_signs": np.array([-1.5, 0.25, 100.125, -0.001], f32),
    "ratio_over_1000": np.array([0.5, 600.0], f32),
    "ratio_exactly_1000": np.array([0.5, 500.0], f32),
    "small": np.array([1e-5, 2e-5], f32),
    "large": np.array([1.5e9, -2.25e9], f64),
    "huge_exponent": np.array([1e200, 1e-200, -1.0], f64),
    "nan_inf_mixed": np.array([nan, 1.5, inf, -inf, 0.0], f32),
    "nan_inf_int_valued": np.array([nan, 1.0, -inf], f32),
    "all_zero": np.zeros(4, f32),
    "all_nan": np.array([nan, nan], f32),
    "neg_zero": np.array([-0.0, 1.0, 0.5], f32),
    "neg_zero_int_mode": np.array([-0.0, 2.0], f32),
    "randn": _rand(7),
    "randn_scaled_up": _rand(6, 1e5),
    "randn_scaled_down": _rand(6, 1e-6),
    "float64": np.array([1.0 / 3, 2.0 / 3], f64),
    "float16": np.array([0.1, 65504.0, -1.5], f16),
    "float16_subnormal": np.array([6e-8, 1.0], f16),
    "bfloat16": np.array([0.1, 3.0e38, -1.5], BF16),
    "bfloat16_int_valued": np.array([1.0, 256.0], BF16),
    # integers and bools
    "int64": np.array([1, -20, 300], np.int64),
    "int64_extremes": np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max]),
    "int32": np.array([1, 2, 3], np.int32),
    "int16": np.array([-5, 5], np.int16),
    "int8": np.array([-128, 127], np.int8),
    "uint8": np.array([0, 255, 7], np.uint8),
    "bool": np.array([True, False, True]),
    "bool_all_true": np.array([True, True]),
    # complex
    "complex": np.array([1 + 2j, -3.5j, 4.0], c64),
    "complex_int_valued": np.array([1 + 2j, 3 - 4j], c64),
    "complex_sci": np.array([1e-6 + 1j, 2e5 - 3e-3j], c64),
    "complex_nan": np.array([complex(nan, nan), 1 + 1j, complex(0, -inf)], c64),
    "complex_neg_zero_imag": np.array([complex(1.0, -0.0), 2j], c128),
    "complex128": np.array([0.125 + 1e10j, -1 - 1j], c128),
    "complex_2d": (_rand((3, 4)) + 1j * _rand((3, 4), seed=1)).astype(c64),
    # higher dimensions
    "2d": _rand((3, 4)),
    "2d_int": np.arange(12, dtype=np.int64).reshape(3, 4) * 37 - 200,
    "2d_single_row": _rand((1, 5)),
    "2d_single_column": _rand((4, 1)),
    "3d": _rand((2, 3, 4)),
    "3d_bool": np.arange(24).reshape(2, 3, 4) % 3 == 0,
    "4d": _rand((2, 2, 2, 3)),
    "4d_int32": np.arange(36, dtype=np.int32).reshape(3, 2, 2, 3),
    "5d": _rand((1, 2, 1, 2, 2)),
    "transposed": _rand((3, 5)).T,
    "strided": _rand(20)[::3],
    # wide rows that wrap
    "wrap_float": _rand(30),
    "wrap_int": np.arange(100, dtype=np.int64),
    "wrap_complex": (_rand(20) + 1j * _rand(20, seed=1)).astype(c64),
    "wrap_2d": _rand((3, 25)),
    "wrap_3d": _rand((2, 2, 20)),
    "wrap_sci": _rand(15, 1e12),
    "wrap_float16": _rand(25).astype(f16),
    # summarised (more than 1000 elements)
    "big_1d": np.arange(2000, dtype=np.int64),
    "big_1d_float": _rand(1001),
    "big_2d": _rand((100, 100)),
    "big_2d_wide": _rand((3, 1000)),
    "big_2d_tall": _rand((1000, 3)),
    "big_3d": _rand((2, 3, 400)),
    "big_4d": _rand((10, 10, 10, 10)),
    "big_complex": (_rand((40, 30)) + 1j * _rand((40, 30), seed=2)).astype(c64),
    "big_bool": np.arange(3000).reshape(30, 100) % 7 == 0,
    "big_float64": _rand((2, 1200)).astype(f64) * 1e-7,
    "big_bfloat16": _rand((50, 50)).astype(BF16),
    # empty
    "empty_1d": np.zeros(0, f32),
    "empty_2d": np.zeros((0, 3), f32),
    "empty_3d": np.zeros((2, 0, 4), f32),
    "empty_int32": np.zeros(0, np.int32),
    "empty_int64": np.zeros(0, np.int64),
    "empty_bool": np.zeros((0, 2), bool),
    "empty_complex": np.zeros(0, c64),
    "empty_float64": np.zeros((3, 0), f64),
}

GRAD_CASES = {
    "grad_1d": np.array([1.0, 2.0], f32),
    "grad_0d": np.array(1.5, f32),
    "grad_float64": np.array([1.0, 2.0], f64),
    "grad_wraps_suffix": _rand(11).astype(f64),  # dtype and requires_grad overflow the line
    "grad_2d": _rand((3, 7)).astype(f16),
    "grad_empty": np.zeros((0, 2), f64),
}

# (printoptions, array)
OPTION_CASES = {
    "precision_2": ({"precision": 2}, _rand(5)),
    "precision_8": ({"precision": 8}, _rand((2, 5))),
    "precision_0": ({"precision": 0}, np.array([0.5, 1.5, 2.25], f32)),
    "sci_mode_true": ({"sci_mode": True}, _rand(4)),
    "sci_mode_true_int_valued": ({"sci_mode": True}, np.array([1.0, 20.0], f32)),
    "sci_mode_true_zeros": ({"sci_mode": True}, np.zeros(3, f32)),
    "sci_mode_false": ({"sci_mode": False}, np.array([1e-8, 1e8], f32)),
    "sci_mode_false_complex": ({"sci_mode": False}, np.array([1e-8 + 1e9j], c64)),
    "threshold_5": ({"threshold": 5}, np.arange(10, dtype=np.int64)),
    "threshold_5_2d": ({"threshold": 5}, _rand((4, 9))),
    "edgeitems_1": ({"threshold": 10, "edgeitems": 1}, _rand((5, 6, 7))),
    "edgeitems_0_1d": ({"threshold": 10, "edgeitems": 0}, _rand(20)),
    "edgeitems_0_3d": ({"threshold": 10, "edgeitems": 0}, _rand((3, 4, 5))),
    "edgeitems_0_not_summarised": ({"edgeitems": 0}, _rand((2, 2))),
    "linewidth_40": ({"linewidth": 40}, _rand((2, 12))),
    "linewidth_200": ({"linewidth": 200}, _rand(40)),
    "linewidth_tiny": ({"linewidth": 5}, np.arange(4, dtype=np.int64)),
    "linewidth_suffix": ({"linewidth": 30}, np.array([1, 2, 3], np.int32)),
    "profile_short": ({"profile": "short"}, _rand(2000)),
    "profile_full": ({"profile": "full"}, np.arange(1200, dtype=np.int64)),
    "profile_full_2d": ({"profile": "full"}, _rand((40, 30))),
    "profile_short_precision_6": ({"profile": "short", "precision": 6}, _rand(5)),
}


@needs_torch
@pytest.mark.parametrize("case", list(CASES))
def test_repr_matches_torch(case):
    array = CASES[case]
    assert repr(_ember(array)) == _expected(array)


@needs_torch
@pytest.mark.parametrize("case", list(CASES))
def test_str_equals_repr(case):
    t = _ember(CASES[case])
    assert str(t) == repr(t)


@needs_torch
@pytest.mark.parametrize("case", list(GRAD_CASES))
def test_repr_requires_grad_matches_torch(case):
    array = GRAD_CASES[case]
    assert repr(_ember(array, True)) == _expected(array, True)


@needs_torch
@pytest.mark.parametrize("case", list(OPTION_CASES))
def test_repr_with_printoptions_matches_torch(case):
    options, array = OPTION_CASES[case]
    ember.set_printoptions(**options)
    torch.set_printoptions(**options)
    assert repr(_ember(array)) == _expected(array)


@needs_torch
@pytest.mark.parametrize("case", ["fractional", "int_valued", "2d", "complex", "empty_1d"])
def test_repr_default_dtype_float64_matches_torch(case):
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    for array in (CASES[case], CASES[case].astype(np.complex128 if CASES[case].dtype.kind == "c"
                                                  else np.float64)):
        assert repr(_ember(array)) == _expected(array)


@needs_torch
def test_repr_grad_fn_matches_torch(monkeypatch):
    class FakeNode:  # stands in for autograd's Node, which provides name()
        def name(self):
            return "AddBackward0"

    t = _ember(np.array([1.0, 2.0], f32))
    monkeypatch.setattr(t, "_grad_fn", FakeNode())
    a = torch.tensor([0.5, 1.0], requires_grad=True)
    expected = repr(a + torch.tensor([0.5, 1.0])).replace("torch.", "ember.")
    assert repr(t) == expected


@needs_torch
def test_get_printoptions_matches_torch():
    assert ember._tensor_str.get_printoptions() == torch._tensor_str.get_printoptions()
    ember.set_printoptions(profile="short", sci_mode=True)
    torch.set_printoptions(profile="short", sci_mode=True)
    assert ember._tensor_str.get_printoptions() == torch._tensor_str.get_printoptions()


# ------------------------------------------------------------------------------------------------
# literal expectations (from PyTorch 2.13): these run without PyTorch


LITERALS = [
    (np.array(3.5, f32), "tensor(3.5000)"),
    (np.array([1.0, 2.0, -3.0], f32), "tensor([ 1.,  2., -3.])"),
    (np.array([1e-5, 2e-5], f32), "tensor([1.0000e-05, 2.0000e-05])"),
    (np.array([nan, 1.5, inf, -inf], f32), "tensor([   nan, 1.5000,    inf,   -inf])"),
    (np.array([1, -20, 300], np.int32), "tensor([  1, -20, 300], dtype=ember.int32)"),
    (np.array([True, False]), "tensor([ True, False])"),
    (np.array([1 + 2j, -3.5j], c64), "tensor([1.+2.0000j, -0.-3.5000j])"),
    (np.array([[1, 2], [3, 4]], np.int64), "tensor([[1, 2],\n        [3, 4]])"),
    (np.zeros((0, 3), f32), "tensor([], size=(0, 3))"),
    (np.zeros(0, np.int64), "tensor([], dtype=ember.int64)"),
    (np.array([0.1, 2.0], f16), "tensor([0.1000, 2.0000], dtype=ember.float16)"),
    (np.arange(2000, dtype=np.int64), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"),
]


@pytest.mark.parametrize("array, expected", LITERALS, ids=[e for _, e in LITERALS])
def test_repr_literal(array, expected):
    assert repr(_ember(array)) == expected


def test_repr_literal_wrapped_row():
    t = ember.from_numpy(np.arange(30, dtype=np.int64) * 1000)
    assert repr(t) == (
        "tensor([    0,  1000,  2000,  3000,  4000,  5000,  6000,  7000,  8000,  9000,\n"
        "        10000, 11000, 12000, 13000, 14000, 15000, 16000, 17000, 18000, 19000,\n"
        "        20000, 21000, 22000, 23000, 24000, 25000, 26000, 27000, 28000, 29000])")


def test_repr_literal_summarised_2d():
    t = ember.from_numpy(np.arange(1100, dtype=np.int64).reshape(110, 10))
    assert repr(t) == (
        "tensor([[   0,    1,    2,  ...,    7,    8,    9],\n"
        "        [  10,   11,   12,  ...,   17,   18,   19],\n"
        "        [  20,   21,   22,  ...,   27,   28,   29],\n"
        "        ...,\n"
        "        [1070, 1071, 1072,  ..., 1077, 1078, 1079],\n"
        "        [1080, 1081, 1082,  ..., 1087, 1088, 1089],\n"
        "        [1090, 1091, 1092,  ..., 1097, 1098, 1099]])")


def test_repr_literal_requires_grad():
    t = ember.from_numpy(np.array([1.0, 2.0], f64)).requires_grad_(True)
    assert repr(t) == "tensor([1., 2.], dtype=ember.float64, requires_grad=True)"


def test_repr_literal_grad_fn(monkeypatch):
    class FakeNode:
        def name(self):
            return "MulBackward0"

    t = ember.from_numpy(np.array([2.0, 4.0], f32))
    monkeypatch.setattr(t, "_grad_fn", FakeNode())
    assert repr(t) == "tensor([2., 4.], grad_fn=<MulBackward0>)"


def test_repr_device_suffix(monkeypatch):
    monkeypatch.setattr(ember.Tensor, "device", property(lambda self: ember.device("cuda:0")))
    t = ember.from_numpy(np.array([1.0, 2.0], f32))
    assert repr(t) == "tensor([1., 2.], device='cuda:0')"


def test_set_printoptions_precision_and_restore():
    t = ember.from_numpy(np.array([1.12345], f32))
    ember.set_printoptions(precision=2)
    assert repr(t) == "tensor([1.12])"
    ember.set_printoptions(profile="default")
    assert repr(t) == "tensor([1.1235])"


def test_set_printoptions_threshold_summarises():
    ember.set_printoptions(threshold=5)
    assert repr(ember.from_numpy(np.arange(10))) == "tensor([0, 1, 2,  ..., 7, 8, 9])"


def test_set_printoptions_omitted_sci_mode_resets_it():
    ember.set_printoptions(sci_mode=True)
    ember.set_printoptions(precision=4)
    assert _print.PRINT_OPTS.sci_mode is None


def test_set_printoptions_unknown_profile_raises():
    with pytest.raises(ValueError, match="profile"):
        ember.set_printoptions(profile="verbose")


def test_printoptions_context_restores():
    before = _print.get_printoptions()
    with _print.printoptions(precision=1, linewidth=20):
        assert _print.PRINT_OPTS.precision == 1
        assert repr(ember.from_numpy(np.array([1.25], f32))) == "tensor([1.2])"
    assert _print.get_printoptions() == before


def test_tensor_contents_replaces_data():
    t = ember.from_numpy(np.array([1, 2], np.int32))
    assert _print.tensor_repr(t, tensor_contents="[...]") == "tensor([...], dtype=ember.int32)"


def test_repr_width_from_candidates_matches_all_values():
    # a formatter measures only four candidate values; check that against every value
    ember.set_printoptions(profile="full")
    rng = np.random.default_rng(3)
    values = rng.standard_normal(3000) * 10.0 ** rng.integers(-120, 120, 3000)
    text = repr(ember.from_numpy(values))
    body = text[len("tensor(["):text.rindex("]")]
    items = [x for line in body.split(",\n" + " " * 8) for x in line.split(", ")]
    assert len(items) == 3000
    assert {len(x) for x in items} == {max(len(format(v, ".4e")) for v in values)}


@needs_torch
def test_repr_recorded_grad_fn_matches_torch():
    pairs = []
    for make in (_ember, _torch):
        a = make(np.array([1.0, 2.0], f32), True)
        pairs.append((repr(a + a), repr((a * a).sum())))
    if "grad_fn" not in pairs[0][0]:
        pytest.skip("ember's autograd does not record graphs yet")
    assert [s.replace("torch.", "ember.") for s in pairs[1]] == list(pairs[0])


def test_printing_api_is_exported():
    assert ember.set_printoptions is _print.set_printoptions
    assert ember._tensor_str.PRINT_OPTS is _print.PRINT_OPTS
    assert ember._tensor_str.get_printoptions() == {
        "precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}
