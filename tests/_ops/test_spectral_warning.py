"""stft without a window warns as torch does (a rectangular window leaks)."""

import warnings

import pytest

import ember

torch = pytest.importorskip("torch")


def _messages(T, **kw):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        T.stft(T.ones(64), 16, return_complex=True, **kw)
    return [(i.category, str(i.message).split(" (Triggered")[0]) for i in w]


def test_stft_without_window_warns_as_torch():
    assert _messages(ember) == _messages(torch)
    assert len(_messages(ember)) == 1


def test_stft_with_window_does_not_warn():
    assert _messages(ember, window=ember.hann_window(16)) == []
