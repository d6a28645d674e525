"""NOTE [ Deferred device checks ]: value checks on a device that runs ahead of the host are
raised at the next synchronisation, not at the op. Exercised on the NumPy-backed test device
registered as a deferring type (CUDA's arrays are, on a GPU)."""

import numpy as np
import pytest

import ember
from ember._core import checks
from ember.testing._test_device import TestDeviceArray, register_test_device


@pytest.fixture
def deferring():
    dev = register_test_device()
    checks.deferring_types.add(TestDeviceArray)
    try:
        yield dev
    finally:
        checks.deferring_types.discard(TestDeviceArray)
        checks._pending.clear()


def _dev_array(deferring, values):
    return ember.tensor(values).to(deferring)._data


def test_failed_check_raises_at_item_on_deferring_device(deferring):
    checks.check_range(_dev_array(deferring, [1, 7]), 0, 4, IndexError,
                       "index out of range in self")  # no host wait: nothing raised yet
    assert len(checks._pending) == 1
    with pytest.raises(IndexError, match="index out of range in self"):
        ember.ones(2).to(deferring).sum().item()
    assert not checks._pending


def test_failed_check_names_the_value_at_tolist(deferring):
    bad = _dev_array(deferring, [0, 9, 2])
    checks.check_range(bad, 0, 5, IndexError, lambda: f"Target {int(bad.max())} is out")
    with pytest.raises(IndexError, match="Target 9 is out"):
        ember.ones(3).to(deferring).tolist()


def test_embedding_and_cross_entropy_defer_their_checks(deferring):
    w = ember.randn(4, 3).to(deferring)
    ember.nn.functional.embedding(ember.tensor([0, 3]).to(deferring), w)
    ember.nn.functional.cross_entropy(ember.randn(2, 3).to(deferring),
                                      ember.tensor([0, 2]).to(deferring))
    assert len(checks._pending) == 2
    checks.raise_pending()  # every value in range
    assert not checks._pending


def test_same_check_is_merged_while_pending(deferring):
    w = ember.randn(4, 3).to(deferring)
    good = ember.tensor([0, 3]).to(deferring)
    for _ in range(100):
        ember.nn.functional.embedding(good, w)
    assert len(checks._pending) == 1
    checks.raise_pending()  # all in range: nothing raised
    assert not checks._pending


def test_cpu_checks_raise_at_once():
    w = ember.randn(4, 3)
    with pytest.raises(IndexError, match="index out of range in self"):
        ember.nn.functional.embedding(ember.tensor([4]), w)
    with pytest.raises(IndexError, match="Target -2 is out of bounds."):
        ember.nn.functional.cross_entropy(ember.randn(2, 3), ember.tensor([0, -2]))
    assert not checks._pending


def test_check_range_callable_message_only_built_on_failure():
    calls = []

    def message():
        calls.append(1)
        return "bad"

    checks.check_range(np.array([0, 1]), 0, 2, IndexError, message)
    assert not calls
    with pytest.raises(ValueError, match="bad"):
        checks.check_range(np.array([0, 2]), 0, 2, ValueError, message)
