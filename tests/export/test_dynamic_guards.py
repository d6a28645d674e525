"""The guards of an exported program's module on dynamic dimensions, worded and bounded as
PyTorch 2.13's: an upper bound is checked, a lower bound only above 2 (sizes 0 and 1 are
specialised, not guarded)."""

import pytest

import ember
from ember.export import Dim, export


def _module(lo=None, hi=None):
    bounds = {k: v for k, v in (("min", lo), ("max", hi)) if v is not None}
    ep = export(ember.nn.Linear(3, 2), (ember.randn(5, 3),),
                dynamic_shapes={"input": {0: Dim("b", **bounds)}})
    return ep.module()


@pytest.mark.parametrize("lo, hi, size, message", [
    (4, 16, 3, ".size()[0] >= 4"),
    (4, 16, 0, ".size()[0] >= 4"),
    (2, 16, 32, ".size()[0] <= 16"),
    (None, 8, 9, ".size()[0] <= 8"),
])
def test_dynamic_dim_out_of_range_fails_guard(lo, hi, size, message):
    with pytest.raises(AssertionError, match=r"^Guard failed: \w+" + message.replace(
            "[", r"\[").replace("]", r"\]").replace("(", r"\(").replace(")", r"\)")):
        _module(lo, hi)(ember.randn(size, 3))


@pytest.mark.parametrize("lo, size", [(2, 1), (None, 0)])
def test_dynamic_dim_below_two_is_not_guarded(lo, size):
    assert _module(lo, 16)(ember.randn(size, 3)).shape == (size, 2)
