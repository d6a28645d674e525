"""Helpers shared by the optimizer implementations."""

from __future__ import annotations


def closure_loss(closure):
    """Evaluate ``closure`` with gradients enabled (steps themselves run under no_grad)."""
    if closure is None:
        return None
    from ..autograd.grad_mode import enable_grad

    with enable_grad():
        return closure()


def check_range(name, value, low=0.0, high=None, *, low_open=False, high_open=True):
    """PyTorch's 'Invalid <name>: <value>' ValueError for out-of-range hyper-parameters."""
    bad = value < low or (low_open and value == low)
    if high is not None:
        bad = bad or value > high or (high_open and value == high)
    if bad:
        raise ValueError(f"Invalid {name}: {value}")


def state_step(state):
    """The 'step' entry (a float32 0-dim tensor, as PyTorch keeps it)."""
    from .. import tensor

    if "step" not in state:
        state["step"] = tensor(0.0)
    return state["step"]
