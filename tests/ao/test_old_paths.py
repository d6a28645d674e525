"""The old module paths torch keeps for quantization (torch.nn.quantized, .dynamic,
torch.nn.intrinsic, torch.nn.qat): the same classes as under ember.ao.nn."""

import importlib

import pytest

import ember

torch = pytest.importorskip("torch")

_PATHS = {
    "nn.quantized": "ao.nn.quantized",
    "nn.quantized.dynamic": "ao.nn.quantized.dynamic",
    "nn.intrinsic": "ao.nn.intrinsic",
    "nn.intrinsic.qat": "ao.nn.intrinsic.qat",
    "nn.intrinsic.quantized": "ao.nn.intrinsic.quantized",
    "nn.qat": "ao.nn.qat",
}


@pytest.mark.parametrize("old", list(_PATHS))
def test_old_quantization_path_reexports_ao_classes(old):
    alias = importlib.import_module(f"ember.{old}")
    new = importlib.import_module(f"ember.{_PATHS[old]}")
    assert alias.__all__
    for name in alias.__all__:
        assert getattr(alias, name) is getattr(new, name)


@pytest.mark.parametrize("old", list(_PATHS))
def test_old_quantization_path_has_what_torch_old_path_has_of_ao(old):
    # every class torch's old path offers that ember.ao.nn has is reachable the old way
    alias = importlib.import_module(f"ember.{old}")
    new = importlib.import_module(f"ember.{_PATHS[old]}")
    theirs = importlib.import_module(f"torch.{old}")
    shared = [n for n in new.__all__ if hasattr(theirs, n)]
    assert shared and all(hasattr(alias, n) for n in shared)


def test_old_paths_are_attributes_of_nn_like_torch():
    for name in ("quantized", "intrinsic", "qat"):
        assert hasattr(torch.nn, name) and hasattr(ember.nn, name)
    assert ember.nn.quantized.dynamic.Linear is ember.ao.nn.quantized.dynamic.Linear
    assert not hasattr(ember.nn, "no_such_module")
