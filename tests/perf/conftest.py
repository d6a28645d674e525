"""Fixtures of the kernel tests."""

import pytest


@pytest.fixture
def numba_backend():
    """ember's compiled kernels for the test (skips without numba), the backend restored
    afterwards."""
    pytest.importorskip("numba")
    from ember import _kernels

    old = _kernels.set_backend("numba")
    yield
    _kernels.set_backend(old)
