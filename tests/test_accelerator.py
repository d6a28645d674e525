"""ember.accelerator, ember.mps, ember.xpu without such devices, vs a CPU-only PyTorch."""

import pytest

import ember

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH or torch.cuda.is_available()
                                 or ember.cuda.is_available(), reason="needs CPU-only setups")


def _same(call):
    ours = eval(call, {"torch": ember})
    theirs = eval(call, {"torch": torch})
    return ours == theirs


def _same_error(call):
    with pytest.raises(Exception) as theirs:  # noqa: PT011
        eval(call, {"torch": torch})
    with pytest.raises(Exception) as ours:  # noqa: PT011
        eval(call, {"torch": ember})
    return type(ours.value) is type(theirs.value)


@needs_torch
@pytest.mark.parametrize("call", [
    "torch.accelerator.is_available()", "torch.accelerator.current_accelerator()",
    "torch.accelerator.device_count()", "torch.mps.is_available()", "torch.mps.device_count()",
    "torch.mps.manual_seed(0)", "torch.xpu.is_available()", "torch.xpu.device_count()",
    "torch.xpu.manual_seed_all(0)", "torch.xpu.empty_cache()", "torch.xpu.memory_allocated()",
    "torch.xpu.is_bf16_supported()", "torch.xpu.get_rng_state_all()"])
def test_accelerator_query_matches_torch(call):
    assert _same(call)


@needs_torch
@pytest.mark.parametrize("call", [
    "torch.accelerator.current_device_index()", "torch.accelerator.synchronize()",
    "torch.accelerator.empty_cache()", "torch.accelerator.memory_allocated()",
    "torch.accelerator.get_memory_info()", "torch.mps.synchronize()", "torch.mps.seed()",
    "torch.mps.empty_cache()", "torch.xpu.current_device()", "torch.xpu.get_device_name()",
    "torch.xpu.synchronize()", "torch.xpu.Stream()"])
def test_accelerator_error_type_matches_torch(call):
    assert _same_error(call)


def test_accelerator_error_message_names_missing_device():
    with pytest.raises(RuntimeError, match="none is available"):
        ember.accelerator.current_device_index()


def test_accelerator_device_index_none_does_nothing():
    with ember.accelerator.device_index(None):
        pass
