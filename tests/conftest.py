import importlib.util

import numpy as np
import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
