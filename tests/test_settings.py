"""Process-wide settings (ember/_settings.py): threads, determinism, matmul precision,
warn-always; compared with torch where it is installed."""

from __future__ import annotations

import warnings

import pytest

import ember
from ember import _settings

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


@pytest.fixture
def restore():
    """Put every setting back as it was after the test."""
    saved = dict(vars(_settings.settings))
    threads = ember.get_num_threads()
    yield
    if ember.get_num_threads() != threads:
        ember.set_num_threads(threads)
    vars(_settings.settings).update(saved)


def _blas_threads():
    from threadpoolctl import threadpool_info

    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


def test_set_num_threads_limits_blas(restore):
    ember.set_num_threads(1)
    assert ember.get_num_threads() == 1
    assert _blas_threads() and set(_blas_threads()) == {1}


def test_get_num_threads_default_positive():
    assert ember.get_num_threads() >= 1


@pytest.mark.parametrize("value", [0, -1])
def test_set_num_threads_non_positive_raises(value):
    with pytest.raises(RuntimeError, match="expects a positive integer"):
        ember.set_num_threads(value)


def test_set_num_threads_float_raises():
    with pytest.raises(RuntimeError, match="expects an int, but got float"):
        ember.set_num_threads(1.5)


def test_set_num_interop_threads_once(restore):
    _settings.settings.num_interop_threads = None
    ember.set_num_interop_threads(3)
    assert ember.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError, match="cannot set number of interop threads"):
        ember.set_num_interop_threads(2)


def test_set_num_interop_threads_non_positive_raises():
    with pytest.raises(RuntimeError, match="expects a positive integer"):
        ember.set_num_interop_threads(0)


def test_deterministic_algorithms_default_off():
    assert not ember.are_deterministic_algorithms_enabled()
    assert not ember.is_deterministic_algorithms_warn_only_enabled()


def test_use_deterministic_algorithms_warn_only(restore):
    ember.use_deterministic_algorithms(True, warn_only=True)
    assert ember.are_deterministic_algorithms_enabled()
    assert ember.is_deterministic_algorithms_warn_only_enabled()
    assert ember.get_deterministic_debug_mode() == 1


def test_use_deterministic_algorithms_non_bool_raises():
    with pytest.raises(TypeError, match="must be bool, not int"):
        ember.use_deterministic_algorithms(1)


def test_use_deterministic_algorithms_warn_only_is_keyword():
    with pytest.raises(TypeError):
        ember.use_deterministic_algorithms(False, True)


@needs_torch
@pytest.mark.parametrize("mode", ["default", "warn", "error", 0, 1, 2])
def test_set_deterministic_debug_mode_matches_torch(mode, restore):
    ember.set_deterministic_debug_mode(mode)
    torch.set_deterministic_debug_mode(mode)
    try:
        assert ember.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode()
        assert (ember.is_deterministic_algorithms_warn_only_enabled() ==
                torch.is_deterministic_algorithms_warn_only_enabled())
    finally:
        torch.set_deterministic_debug_mode(0)


@pytest.mark.parametrize("mode, error", [("x", RuntimeError), (3, RuntimeError),
                                         (None, TypeError), (1.0, TypeError)])
def test_set_deterministic_debug_mode_bad_value_raises(mode, error):
    with pytest.raises(error):
        ember.set_deterministic_debug_mode(mode)


def test_float32_matmul_precision_default_highest():
    assert ember.get_float32_matmul_precision() == "highest"


@pytest.mark.parametrize("precision", ["high", "medium", "highest"])
def test_set_float32_matmul_precision_valid(precision, restore):
    ember.set_float32_matmul_precision(precision)
    assert ember.get_float32_matmul_precision() == precision


def test_set_float32_matmul_precision_unknown_warns_no_change(restore):
    with pytest.warns(UserWarning, match="has no effect"):
        ember.set_float32_matmul_precision("HIGH")
    assert ember.get_float32_matmul_precision() == "highest"


def test_set_float32_matmul_precision_non_str_raises():
    with pytest.raises(RuntimeError, match="expects a str"):
        ember.set_float32_matmul_precision(1)


def test_set_warn_always_roundtrip(restore):
    assert not ember.is_warn_always_enabled()
    ember.set_warn_always(True)
    assert ember.is_warn_always_enabled()


def test_set_warn_always_non_bool_raises():
    with pytest.raises(RuntimeError, match="expects a bool"):
        ember.set_warn_always(1)


def test_init_num_threads_returns_none():
    assert ember.init_num_threads() is None


@needs_torch
@pytest.mark.parametrize("name", ["inf", "nan", "pi", "e", "newaxis"])
def test_constant_matches_torch(name):
    e, t = getattr(ember, name), getattr(torch, name)
    assert repr(e) == repr(t)


def test_newaxis_inserts_dimension():
    assert tuple(ember.zeros(3)[:, ember.newaxis].shape) == (3, 1)


def test_manual_seed_returns_default_generator():
    g = ember.manual_seed(3)
    assert g is ember.default_generator and g.initial_seed() == 3


def test_settings_warning_free_on_valid_use(restore):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.set_float32_matmul_precision("high")
        ember.use_deterministic_algorithms(False)
