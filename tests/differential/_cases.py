"""Helpers the per-session differential regression files share: the two frameworks, an
outcome as an exception's (class, message), and a tensor as NumPy values."""

import pytest

import ember


def torch_or_skip():
    """PyTorch, or a skip where it is not installed."""
    return pytest.importorskip("torch")


def both():
    """(ember, torch); a skip without torch."""
    return ember, torch_or_skip()


def raised(f):
    """(class name, message) of what ``f()`` raised, or None."""
    try:
        f()
    except Exception as e:  # noqa: BLE001 - the class and message are what is compared
        return type(e).__name__, str(e)
    return None


def as_numpy(x):
    """A tensor of either framework as NumPy values (bfloat16 widened to float32)."""
    x = x.detach().cpu()
    return (x.float() if str(x.dtype).endswith("bfloat16") else x).numpy()
