"""Regressions found by running public-style PyTorch programs (tests/compat/
test_research_repos_6.py) unchanged under ``python -m ember.compat.run``: each test is a
minimal program of our own that reproduces one failure, checked against torch where torch is
installed."""

import pytest

import ember

try:
    import torch
    HAS_TORCH = True
except ImportError:  # pragma: no cover
    torch = None
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


# -- removing weight_norm's parametrization under no_grad leaves a buffer (locuslab TCN) --

def _removed_weight(lib, no_grad, frozen):
    conv = lib.nn.utils.parametrizations.weight_norm(lib.nn.Conv1d(2, 3, 2))
    if frozen:
        conv.requires_grad_(False)
    if no_grad:
        with lib.no_grad():
            lib.nn.utils.parametrize.remove_parametrizations(conv, "weight")
    else:
        lib.nn.utils.parametrize.remove_parametrizations(conv, "weight")
    return (type(conv.weight).__name__, conv.weight.requires_grad,
            sorted(n for n, _ in conv.named_parameters()),
            sorted(n for n, _ in conv.named_buffers()))


@pytest.mark.parametrize("no_grad", [False, True])
@pytest.mark.parametrize("frozen", [False, True])
def test_remove_multi_tensor_parametrization_follows_grad_mode(no_grad, frozen):
    got = _removed_weight(ember, no_grad, frozen)
    kept = not no_grad and not frozen
    assert got == (("Parameter", True, ["bias", "weight"], []) if kept
                   else ("Tensor", False, ["bias"], ["weight"]))
    if HAS_TORCH:
        assert got == _removed_weight(torch, no_grad, frozen)
