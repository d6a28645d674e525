"""Fixtures of the kernel tests."""

import pytest


@pytest.fixture
def numba_backend():
    """ember's compiled kernels for the test (skips without numba), the backend restored
    afterwards; yields the kernel module."""
    pytest.importorskip("numba")
    from ember import _kernels

    old = _kernels.set_backend("numba")
    yield _kernels._load()
    _kernels.set_backend(old)


@pytest.fixture
def numpy_backend():
    """ember's NumPy kernels for the test, the backend restored afterwards."""
    from ember import _kernels

    old = _kernels.set_backend("numpy")
    yield
    _kernels.set_backend(old)


@pytest.fixture
def threads(monkeypatch):
    """Two threads on a machine taken as quiet, and a record of the splits
    (``tests.conftest.spy_thread_splits``)."""
    import ember
    from tests.conftest import spy_thread_splits

    before = ember.get_num_threads()
    ember.set_num_threads(2)
    seen = spy_thread_splits(monkeypatch)
    yield seen
    ember.set_num_threads(before)
