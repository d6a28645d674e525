"""The collective behind the model averagers: average a list of parameters over a group
with one all-reduce of a flat buffer.

NOTE [ Averaged parameters share one buffer ]
As in PyTorch, ``average_parameters`` concatenates the parameters into one flat tensor,
divides it by the group size, all-reduces it (SUM) and then points every parameter's
``.data`` at its slice of that flat tensor. The parameters keep their identity (an
optimizer holding them still updates them) but after an averaging step they are views of
one shared buffer, and the buffer costs as much memory as the parameters.
"""

from __future__ import annotations

__all__ = ["average_parameters", "average_parameters_or_parameter_groups",
           "get_params_to_average"]


def average_parameters(params, process_group):
    """Replace each parameter with its mean over the ranks of ``process_group``.

    Args:
        params: an iterable of parameters (consumed once).
        process_group: the group to average over (None: the default group). A rank outside
            the group does nothing.

    Returns:
        None; the parameters' ``.data`` are replaced in place (see NOTE [ Averaged
        parameters share one buffer ]).

    Raises:
        ValueError: ``params`` is empty (nothing to concatenate).

    Example::

        >>> average_parameters(iter(model.parameters()), None)  # doctest: +SKIP
    """
    from .... import cat
    from .... import distributed as dist
    from ..._group import GroupMember

    group = process_group if process_group is not None else dist.group.WORLD
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    params = list(params)
    flat = cat([p.data.reshape(-1) for p in params])
    flat /= dist.get_world_size(group)
    dist.all_reduce(flat, group=group)
    at = 0
    for p in params:
        n = p.numel()
        p.data = flat[at:at + n].view_as(p).type_as(p)
        at += n


def get_params_to_average(params) -> list:
    """The parameters worth averaging: those that have a gradient.

    Args:
        params: parameters of a model, or parameter groups of an optimizer (dicts with a
            ``"params"`` list).

    Returns:
        list of the parameters whose ``.grad`` is not None, in order.

    Raises:
        NotImplementedError: an entry is neither a ``Parameter`` nor a dict.

    Example::

        >>> p = ember.nn.Parameter(ember.ones(2)); p.grad = ember.ones(2)
        >>> len(get_params_to_average([p, ember.nn.Parameter(ember.ones(1))]))
        1
    """
    from ....nn import Parameter

    out = []
    for entry in params:
        if isinstance(entry, Parameter):
            candidates = [entry]
        elif isinstance(entry, dict):
            candidates = entry["params"]
        else:
            raise NotImplementedError(f"Parameter input of type {type(entry)} is not supported")
        out.extend(p for p in candidates if p.grad is not None)
    return out


def average_parameters_or_parameter_groups(params, process_group) -> None:
    """Average the parameters (or an optimizer's parameter groups) that have gradients.

    Args:
        params: parameters of a model, or parameter groups of an optimizer.
        process_group: the group to average over (None: the default group).

    Example::

        >>> average_parameters_or_parameter_groups(opt.param_groups, None)  # doctest: +SKIP
    """
    average_parameters(iter(get_params_to_average(params)), process_group)
