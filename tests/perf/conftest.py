"""Fixtures of the kernel tests."""

import os

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


def blas_rows_exact():
    """Whether this machine's BLAS gives a float32 product's rows the same bits however many
    rows one call takes. OpenBLAS's SkylakeX kernels do for blocks of 64 rows and more; its
    Haswell kernels (``OPENBLAS_CORETYPE=Haswell``, which caps it at AVX2) round by the row
    count, so a product split over threads or pieces agrees with the whole to rounding only.

    Example::

        >>> isinstance(blas_rows_exact(), bool)
        True
    """
    if not _rows_exact:
        import numpy as np

        rng = np.random.default_rng(0)
        a = rng.standard_normal((513, 300)).astype(np.float32)
        b = rng.standard_normal((300, 257)).astype(np.float32)
        whole = a @ b
        _rows_exact.append(all((a[:k] @ b == whole[:k]).all() for k in (64, 100, 256)))
    return _rows_exact[0]


_rows_exact = []


def assert_same_bits_or_close(actual, desired, rtol=1e-5, atol=1e-5):
    """``actual`` bit for bit ``desired`` where the BLAS's row blocks are exact
    (:func:`blas_rows_exact`), else equal to float rounding.

    Example::

        >>> import numpy as np
        >>> assert_same_bits_or_close(np.ones(2), np.ones(2))
    """
    import numpy as np

    if blas_rows_exact():
        assert np.asarray(actual).tobytes() == np.asarray(desired).tobytes()
    else:
        np.testing.assert_allclose(actual, desired, rtol=rtol, atol=atol)


@pytest.fixture
def pool_on(numba_backend):
    """The numba backend with numba's pool switched on (the default since session 23;
    ``EMBER_NATIVE_SPLIT=0`` turns it off), whatever the environment says; skips where numba
    runs on its workqueue layer, which cannot take split work."""
    from ember import _kernels

    old, before = os.environ.get("EMBER_NATIVE_SPLIT"), list(_kernels._pool)
    os.environ["EMBER_NATIVE_SPLIT"] = "1"
    _kernels._pool.clear()
    try:
        if _kernels._pool_drivers() is None:
            pytest.skip("numba's pool cannot take split work here")
        yield
    finally:
        if old is None:
            del os.environ["EMBER_NATIVE_SPLIT"]
        else:
            os.environ["EMBER_NATIVE_SPLIT"] = old
        _kernels._pool[:] = before


@pytest.fixture
def two_threads(monkeypatch):
    """Two threads, the load check off, the BLAS workers idle, restored afterwards."""
    import ember
    from ember import _parallel

    old = ember.get_num_threads()
    monkeypatch.setattr(_parallel, "contended", lambda: False)
    monkeypatch.setattr(_parallel, "_polling_until", [0.0])
    ember.set_num_threads(2)
    yield
    ember.set_num_threads(old)
