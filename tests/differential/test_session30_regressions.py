"""Regressions for session 30's differential run against PyTorch 2.13 (OpInfo cases, and the
random optimizer programs of tests/differential/programs_optim.py): each case runs with
``T = ember`` and ``T = torch`` from the same values where torch is installed, and compares
values, dtypes, shapes or the exception raised (class and message)."""

import warnings

import numpy as np
import pytest

from tests.differential._cases import as_numpy as _np
from tests.differential._cases import both as _both
from tests.differential._cases import raised as _raised


def _outcome(f):
    """(dtype name, shape, values) of ``f()``'s tensor, or (class, message) it raised."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's uint8-index deprecation
        err = _raised(f)
        if err:
            return err[0], err[1].replace("torch", "ember")
        r = f()
    return str(r.dtype).split(".")[-1], tuple(r.shape), _np(r).tolist()


def _setitem(x, index, value):
    x[index] = value
    return x


# ---- a number written under one uint8 mask is torch's masked_fill, which refuses it

_U8_INDEXES = {
    "mask": lambda L: L.tensor([[1, 1, 0], [0, 1, 1]], dtype=L.uint8),
    "row mask": lambda L: L.tensor([1, 0], dtype=L.uint8),
    "slice then mask": lambda L: (slice(None), L.tensor([1, 1, 0], dtype=L.uint8)),
    "int then mask": lambda L: (0, L.tensor([1, 1, 0], dtype=L.uint8)),
    "None then mask": lambda L: (None, L.tensor([1, 0], dtype=L.uint8)),
    "list of a mask": lambda L: [L.tensor([1, 0], dtype=L.uint8)],
    "two masks": lambda L: (L.tensor([1, 0], dtype=L.uint8), L.tensor([1, 1, 0], dtype=L.uint8)),
    "0-dim uint8": lambda L: L.tensor(1, dtype=L.uint8),
    "0-dim uint8 zero": lambda L: L.tensor(0, dtype=L.uint8),
}


@pytest.mark.parametrize("value", [1.0, 3, -1])
@pytest.mark.parametrize("index", sorted(_U8_INDEXES))
def test_setitem_number_under_a_uint8_mask(index, value):
    E, T = _both()

    def run(L):
        x = L.tensor([[6.0, 1, 7], [5, 7, 0]])
        return _setitem(x, _U8_INDEXES[index](L), value)

    assert _outcome(lambda: run(E)) == _outcome(lambda: run(T))


# ---- numbers written by __setitem__: int64 range, then the dtype's range (NOTE [ Numbers
# written by __setitem__ ])

_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
           "float32", "float64", "complex64", "complex128"]
_VALUES = [300, -1, -256, 2 ** 31, 2 ** 63 - 1, -2 ** 63 - 1, 2 ** 63, 2.5, -1.0, 1e6, 1e39,
           float("inf"), 1j, -1 + 0j, 1e39 + 0j, True]
_INDEXES = {
    "int": lambda L: 0,
    "bool mask": lambda L: L.tensor([True, False, True]),
    "index tensor": lambda L: L.tensor([0, 2]),
    "False": lambda L: False,
}


@pytest.mark.parametrize("index", sorted(_INDEXES))
@pytest.mark.parametrize("value", _VALUES, ids=repr)
@pytest.mark.parametrize("dtype", _DTYPES)
def test_setitem_number_conversion(dtype, value, index):
    E, T = _both()

    def run(L):
        x = L.zeros(3, dtype=getattr(L, dtype))
        return _setitem(x, _INDEXES[index](L), value)

    assert _outcome(lambda: run(E)) == _outcome(lambda: run(T))


def test_setitem_negative_int_wraps_into_uint8_under_a_bool_mask():
    E, T = _both()

    def run(L):
        x = L.tensor([[6, 1, 7], [5, 7, 0]], dtype=L.uint8)
        return _setitem(x, L.tensor([True, False]), -1)

    assert _outcome(lambda: run(E)) == _outcome(lambda: run(T))
    assert _outcome(lambda: run(E))[2][0] == [255, 255, 255]


def test_setitem_number_with_autograd_checks_the_conversion():
    E, T = _both()

    def run(L):
        x = L.zeros(3, dtype=L.float32, requires_grad=True).clone()
        return _setitem(x, 0, 1e39)

    assert _outcome(lambda: run(E)) == _outcome(lambda: run(T))


# ---- masked_fill / masked_scatter / masked_select name a non-bool mask in torch's words

@pytest.mark.parametrize("op", ["masked_fill", "masked_fill_", "masked_scatter",
                                "masked_scatter_", "masked_select"])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64", "float16",
                                   "bfloat16", "float32", "float64", "complex64"])
def test_masked_ops_refuse_a_non_bool_mask_in_torchs_words(op, dtype):
    E, T = _both()

    def run(L):
        x, m = L.zeros(2), L.tensor([1, 0]).to(getattr(L, dtype))
        if op.startswith("masked_fill"):
            return getattr(x, op)(m, 1.0)
        if op.startswith("masked_scatter"):
            return getattr(x, op)(m, L.ones(2))
        return x.masked_select(m)

    assert _outcome(lambda: run(E)) == _outcome(lambda: run(T))


def test_outcome_helper_tells_values_apart():
    # the helper these tests lean on must see a different value
    E, _ = _both()
    assert _outcome(lambda: E.tensor([1.0])) != _outcome(lambda: E.tensor([2.0]))
    assert np.isfinite(_outcome(lambda: E.tensor([1.0]))[2][0])
