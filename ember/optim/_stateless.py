"""Run an optimizer on borrowed parameters and state without disturbing its own."""

from __future__ import annotations

import contextlib
from collections import defaultdict

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _check_swap_in(optimizer, swapin_parameters, swapin_optim_state):
    """Validate the swap-in; return (state keyed by packed id, [(group, saved group,
    params)])."""
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = swapin_optim_state.get("state")
    groups = swapin_optim_state.get("param_groups")
    if not isinstance(state, dict):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be a dict.")
    if not isinstance(groups, (list, tuple)) or len(groups) != len(optimizer.param_groups):
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['param_groups'] to have one entry per "
            f"optimizer param group ({len(optimizer.param_groups)}).")
    flat = list(swapin_parameters.values())
    offset, seen, plan = 0, set(), []
    for live, saved in zip(optimizer.param_groups, groups):
        ids = list(saved["params"])
        if len(ids) != len(live["params"]):
            raise RuntimeError(
                f"{_NAME} requires each param group to keep its number of parameters: "
                f"got {len(ids)}, expected {len(live['params'])}.")
        if offset + len(ids) > len(flat):
            raise RuntimeError(
                f"{_NAME} requires the explicit parameter state to match "
                "optimizer.param_groups ordering.")
        plan.append((live, saved, flat[offset:offset + len(ids)]))
        offset += len(ids)
        seen.update(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['state'] to be keyed only by packed "
            f"parameter ids from param_groups[*]['params']; got extra keys {extra!r}.")
    return state, plan


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    """Inside the ``with`` block, ``optimizer`` works on the given parameters and state; on
    exit its own parameters, hyper-parameters and state come back.

    Unlike ``load_state_dict``, which keeps the parameters, this also swaps them, so a
    ``step()`` inside the block updates the tensors supplied. In-place edits of the
    supplied state tensors are seen by the caller; replacing an entry is not.

    Args:
        optimizer (Optimizer): the live optimizer; it must already have state.
        swapin_parameters (dict): name -> tensor, in the order of the optimizer's parameters
            (``model.named_parameters()`` order, usually).
        swapin_optim_state (dict): a ``state_dict()``-shaped dict: ``state`` keyed by packed
            parameter ids, ``param_groups`` one per optimizer group.

    Returns:
        A context manager.

    Example:
        >>> import ember
        >>> w = ember.nn.Parameter(ember.ones(2))
        >>> opt = ember.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> w.grad = ember.ones(2)
        >>> opt.step()
        >>> other = ember.zeros(2)
        >>> other.grad = ember.ones(2)
        >>> with swap_in_optimizer_params_and_state(opt, {"w": other}, opt.state_dict()):
        ...     opt.step()
        >>> other
        tensor([-0.1900, -0.1900])
    """
    state, plan = _check_swap_in(optimizer, swapin_parameters, swapin_optim_state)
    original_state = optimizer.state
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapped = defaultdict(dict)
        for live, saved, params in plan:
            live["params"] = params
            live.update({k: v for k, v in saved.items() if k != "params"})
            for p, packed_id in zip(params, saved["params"]):
                swapped[p] = dict(state.get(packed_id, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state
