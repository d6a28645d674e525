"""ember.mtia answers as a PyTorch built without MTIA, compared with torch.mtia."""

from __future__ import annotations

import doctest

import pytest

import ember
import ember.mtia

torch = pytest.importorskip("torch")

QUIET = ["is_available", "device_count", "is_initialized", "is_fbcode", "is_prod",
         "memory_allocated", "max_memory_allocated", "memory_stats", "get_rng_state_all",
         "reset_peak_memory_stats"]
RAISING = ["current_device", "current_stream", "synchronize", "empty_cache", "snapshot",
           "get_device_capability", "init", "initial_seed", "get_rng_state", "MTIAGraph"]


@pytest.mark.parametrize("name", QUIET)
def test_mtia_query_matches_torch(name):
    assert getattr(ember.mtia, name)() == getattr(torch.mtia, name)()


@pytest.mark.parametrize("name", RAISING)
def test_mtia_device_call_raises_like_torch(name):
    with pytest.raises(Exception) as theirs:
        getattr(torch.mtia, name)()
    with pytest.raises(type(theirs.value)) as ours:
        getattr(ember.mtia, name)()
    assert str(ours.value) == str(theirs.value)


def test_mtia_seeding_does_nothing():
    assert ember.mtia.manual_seed(0) is None and ember.mtia.manual_seed_all(0) is None


def test_mtia_public_names_match_torch():
    import inspect

    theirs = {n for n in dir(torch.mtia) if not n.startswith("_")
              and not inspect.ismodule(getattr(torch.mtia, n))
              and getattr(getattr(torch.mtia, n), "__module__", "").startswith("torch")}
    missing = theirs - set(dir(ember.mtia))
    assert missing <= {"Tensor"}, missing


def test_mtia_docstring_examples_pass():
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in doctest.DocTestFinder().find(ember.mtia):
        test.globs["ember"] = ember
        assert not runner.run(test, out=lambda s: None).failed, test.name
