import importlib.util

import numpy as np
import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def _device_types():
    from ember.testing import device_types

    return device_types()


@pytest.fixture(params=_device_types())
def device(request):
    """Each device type tests run on here (cpu, cuda when available, the NumPy-backed test
    device): a function-style test that takes ``device`` runs once per device type
    (ember/testing/_device_type.py)."""
    return request.param
