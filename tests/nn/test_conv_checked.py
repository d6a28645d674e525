"""NOTE [ Checked convolution calls ]: a convolution call whose argument checks passed is
remembered, and the next identical call skips them -- with no mode pushed or under autocast
(which keeps tensors' data), never under a mode that changes what ``_data`` holds."""

import pytest

import ember
import ember.nn.functional as F
from ember import _dispatch
from ember._ops import nn_conv


@pytest.fixture(autouse=True)
def _fresh_cache():
    nn_conv._conv_checked.clear()
    yield
    nn_conv._conv_checked.clear()


def test_conv_call_is_remembered_without_modes():
    x, w = ember.randn(2, 3, 8, 8), ember.randn(4, 3, 3, 3)
    F.conv2d(x, w, padding=1)
    assert len(nn_conv._conv_checked) == 1
    # the remembered call gives the checked call's values
    ember.testing.assert_close(F.conv2d(x, w, padding=1), F.conv2d(x, w, padding=(1, 1)))


def test_conv_call_is_remembered_under_autocast():
    x, w = ember.randn(2, 3, 8, 8), ember.randn(4, 3, 3, 3)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        assert _dispatch.plain_data()
        y = F.conv2d(x, w, padding=1)
        y2 = F.conv2d(x, w, padding=1)
    assert len(nn_conv._conv_checked) == 1
    assert y.dtype == y2.dtype == ember.bfloat16


def test_conv_call_is_not_remembered_under_vmap():
    x, w = ember.randn(5, 2, 3, 8, 8), ember.randn(4, 3, 3, 3)
    y = ember.vmap(lambda xi: F.conv2d(xi, w, padding=1))(x)
    assert y.shape == (5, 2, 4, 8, 8)
    assert not nn_conv._conv_checked
