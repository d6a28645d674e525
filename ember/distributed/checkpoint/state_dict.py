"""``get_state_dict`` / ``set_state_dict``: model and optimizer state dicts keyed by the
parameters' names, the same for a plain, DDP-wrapped, compiled or ``fully_shard`` model.

NOTE [ Canonical state dicts ]
A DDP model's ``state_dict()`` says ``module.fc.weight``, a compiled one's
``_orig_mod.fc.weight``, and an optimizer's ``state_dict()`` numbers parameters 0, 1, ...
in the order of its groups. These helpers give every entry its canonical name (the wrapper
attributes dropped: ``fc.weight``) and key the optimizer's state and groups by those names,
so a checkpoint written from one arrangement loads into another. For a ``fully_shard``
model (NOTE [ fully_shard ]) the entries are this rank's shards, or, with
``StateDictOptions(full_state_dict=True)``, whole tensors gathered from every rank (a
collective: call on every rank); ``set_*`` accepts either and keeps this rank's rows.
An optimizer that has not stepped yet has its state created first (one step with zero
gradients and a learning rate of 0), so a checkpoint can be loaded into it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["StateDictOptions", "get_model_state_dict", "get_optimizer_state_dict",
           "get_state_dict", "set_model_state_dict", "set_optimizer_state_dict",
           "set_state_dict"]

# the attributes a wrapper keeps the wrapped module under (DDP, DataParallel, compile,
# activation checkpointing)
_WRAPPER_ATTRS = ("module", "_orig_mod", "_checkpoint_wrapped_module", "_fsdp_wrapped_module")


@dataclass
class StateDictOptions:
    """How ``get_*_state_dict`` / ``set_*_state_dict`` treat the state.

    Args:
        full_state_dict (bool): whole tensors for a ``fully_shard`` model, gathered from
            every rank. Default: False (this rank's shards).
        cpu_offload (bool): copy the values to the CPU; with ``full_state_dict`` only rank 0
            keeps them (the other ranks get empty dicts). Default: False.
        ignore_frozen_params (bool): leave out parameters with ``requires_grad=False``.
            Default: False.
        keep_submodule_prefixes (bool): with ``submodules``, keep their names in the keys.
            Default: True.
        strict (bool): ``set_model_state_dict`` raises on missing or unexpected keys.
            Default: True.
        broadcast_from_rank0 (bool): ``set_*`` take the values rank 0 was given (the other
            ranks may pass empty dicts); needs ``full_state_dict``. Default: False.
        flatten_optimizer_state_dict (bool): the optimizer state dict as one flat dict of
            ``"state.<fqn>.<name>"`` and ``"param_groups.<fqn>.<name>"`` entries. Default:
            False.
        dsd_fqn_modifiers (str): accepted for compatibility.

    Example::

        >>> from ember.distributed.checkpoint.state_dict import StateDictOptions
        >>> StateDictOptions(full_state_dict=True).strict
        True
    """

    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False
    flatten_optimizer_state_dict: bool = False
    dsd_fqn_modifiers: str = "_fqn_modifiers"


# -- names ------------------------------------------------------------------------------------

def _is_wrapper(parent, attr: str) -> bool:
    if attr not in _WRAPPER_ATTRS:
        return False
    if attr != "module":
        return True
    from ...nn.parallel import DataParallel, DistributedDataParallel

    return isinstance(parent, (DataParallel, DistributedDataParallel))


def _canonical(model, key: str) -> str:
    """``key`` (a state-dict or parameter name of ``model``) without wrapper attributes."""
    out, node = [], model
    for part in key.split("."):
        child = getattr(node, "_modules", {}).get(part) if node is not None else None
        if not (child is not None and _is_wrapper(node, part)):
            out.append(part)
        node = child
    return ".".join(out)


def _param_names(model) -> dict:
    """id(parameter) -> canonical name (the first name of a shared parameter)."""
    names = {}
    for name, p in model.named_parameters():
        names.setdefault(id(p), _canonical(model, name))
    return names


def _verify(options: StateDictOptions | None) -> StateDictOptions:
    options = StateDictOptions() if options is None else options
    if options.broadcast_from_rank0 and not options.full_state_dict:
        raise ValueError("full_state_dict must be True when broadcast_from_rank0 is True.")
    return options


def _rank() -> int:
    from .. import get_rank, is_initialized

    return get_rank() if is_initialized() else 0


def _broadcast(value):
    """Rank 0's ``value`` on every rank (no-op without a process group)."""
    from .. import broadcast_object_list, is_initialized

    if not is_initialized():
        return value
    box = [value if _rank() == 0 else None]
    broadcast_object_list(box, src=0)
    return box[0]


# -- fully_shard parameters -------------------------------------------------------------------

def _shard_infos(model) -> dict:
    """id(shard parameter) -> its ``_ParamInfo`` for every ``fully_shard`` unit in ``model``."""
    from ..fsdp import FSDPModule

    out = {}
    for m in model.modules():
        if isinstance(m, FSDPModule):
            for info in m._fsdp_state.infos:
                shard = getattr(info, "shard", None) if m._fsdp_state.gathered else None
                out[id(shard if shard is not None else info.owner._parameters[info.name])] = info
    return out


def _local_rows(info, value):
    """This rank's rows of a whole value (one shaped like the full parameter)."""
    tp = getattr(info, "tp", None)
    if tp is not None:  # 2-D (FSDP + TP): this rank's piece of the whole, laid out as it
        from ..tensor._api import DTensor
        from ..tensor._redistribute import local_layout

        size, offsets = local_layout(tp.shape, tp.root, tp.placements)
        piece = value.detach()
        for d, (n, o) in enumerate(zip(size, offsets)):
            piece = piece.narrow(d, o, n)
        return DTensor._make(piece.clone(), tp.root, tp.placements, tp.shape)
    lo, hi = info.local_rows(info.rank)
    rows = value.detach().reshape((info.rows,) + info.shape[1:])[lo:hi].clone()
    if info.shape and getattr(info, "mesh", None) is not None:
        from ..tensor._api import DTensor
        from ..tensor.placement_types import Shard

        # laid out as the parameter: a DTensor, Shard(0)
        return DTensor._make(rows, info.mesh, (Shard(0),), info.shape)
    return rows


def _matches_full(info, value, shard) -> bool:
    local = getattr(shard, "_local_tensor", shard)
    tp = getattr(info, "tp", None)
    whole = info.shape if tp is None else tp.shape
    return (hasattr(value, "shape") and not hasattr(type(value), "_local_tensor")
            and tuple(value.shape) == whole and tuple(value.shape) != tuple(local.shape))


# -- the model --------------------------------------------------------------------------------

def _submodule_prefixes(model, submodules) -> list:
    wanted = {id(m) for m in submodules}
    return [_canonical(model, name) for name, m in model.named_modules() if id(m) in wanted]


def get_model_state_dict(model, *, submodules=None, options: StateDictOptions | None = None
                         ) -> dict:
    """The model's state dict under canonical names (see NOTE [ Canonical state dicts ]).

    Args:
        model (nn.Module): the model (plain, DDP, compiled or ``fully_shard``).
        submodules (set of nn.Module, optional): only these submodules' entries.
        options (StateDictOptions, optional): see ``StateDictOptions``.

    Returns:
        dict: canonical name -> tensor (detached; shares memory with the model unless
        gathered or offloaded).

    Raises:
        ValueError: ``broadcast_from_rank0`` without ``full_state_dict``.

    Example::

        >>> from ember.distributed.checkpoint.state_dict import get_model_state_dict
        >>> m = ember.nn.Sequential(ember.nn.Linear(2, 1))
        >>> list(get_model_state_dict(m))
        ['0.weight', '0.bias']
    """
    from ... import Tensor

    options = _verify(options)
    infos = _shard_infos(model)
    if options.full_state_dict and infos:
        from ..fsdp import full_state_dict

        raw = full_state_dict(model)
    else:
        raw = {k: v.detach() if isinstance(v, Tensor) else v
               for k, v in model.state_dict().items()}
    sd = {_canonical(model, k): v for k, v in raw.items()}
    if options.ignore_frozen_params:
        frozen = {_canonical(model, n) for n, p in model.named_parameters()
                  if not p.requires_grad}
        sd = {k: v for k, v in sd.items() if k not in frozen}
    if submodules is not None:
        picked = {}
        for prefix in _submodule_prefixes(model, submodules):
            for k, v in sd.items():
                if prefix == "" or k.startswith(prefix + "."):
                    name = k if options.keep_submodule_prefixes or not prefix else \
                        k[len(prefix) + 1:]
                    picked[name] = v
        sd = picked
    if options.cpu_offload:
        if options.full_state_dict and _rank() != 0:
            return {}
        sd = {k: v.cpu() if isinstance(v, Tensor) else v for k, v in sd.items()}
    return sd


def set_model_state_dict(model, model_state_dict: dict, *,
                         options: StateDictOptions | None = None):
    """Load a canonical state dict (as ``get_model_state_dict`` gives) into ``model``.

    For a ``fully_shard`` model each entry may be this rank's shard or the whole tensor (this
    rank keeps its rows).

    Args:
        model (nn.Module): the model.
        model_state_dict (dict): canonical name -> value.
        options (StateDictOptions, optional): ``strict`` and ``broadcast_from_rank0`` apply.

    Returns:
        _IncompatibleKeys: the missing and unexpected (canonical) keys.

    Raises:
        RuntimeError: ``strict`` and keys are missing or unexpected.

    Example::

        >>> from ember.distributed.checkpoint.state_dict import *
        >>> a, b = ember.nn.Linear(2, 1), ember.nn.Linear(2, 1)
        >>> set_model_state_dict(b, get_model_state_dict(a))
        <All keys matched successfully>
    """
    from ...nn.modules.module import _IncompatibleKeys

    options = _verify(options)
    if options.broadcast_from_rank0:
        model_state_dict = _broadcast(model_state_dict)
    infos = _shard_infos(model)
    shards = {id(p): p for p in model.parameters()}
    real = {}
    for name, value in model.state_dict(keep_vars=True).items():
        real[_canonical(model, name)] = (name, value)
    mapped = {}
    for key, value in model_state_dict.items():
        if key not in real:  # passed on under its own name: reported as unexpected
            mapped[key] = value
            continue
        name, current = real[key]
        info = infos.get(id(current)) if id(current) in shards else None
        if info is not None and _matches_full(info, value, current):
            value = _local_rows(info, value)
        mapped[name] = value
    keys = model.load_state_dict(mapped, strict=options.strict)
    return _IncompatibleKeys([_canonical(model, k) for k in keys.missing_keys],
                             [_canonical(model, k) for k in keys.unexpected_keys])


# -- the optimizer ----------------------------------------------------------------------------

def _optimizers(optimizers) -> list:
    from ...optim import Optimizer

    return [optimizers] if isinstance(optimizers, Optimizer) else list(optimizers)


def _init_state(optim) -> None:
    """Create an optimizer's state by one step with zero gradients and lr 0 (the
    parameters do not move; their gradients are restored afterwards)."""
    from ... import no_grad, zeros_like

    if optim.state:
        return
    params = [p for g in optim.param_groups for p in g["params"] if p.requires_grad]
    saved_grads = [p.grad for p in params]
    saved_lrs = [g["lr"] for g in optim.param_groups]
    with no_grad():
        for p in params:
            p.grad = zeros_like(p)
        for g in optim.param_groups:
            g["lr"] = 0.0 if not hasattr(g["lr"], "fill_") else g["lr"].clone().fill_(0.0)
        try:
            optim.step()
        finally:
            for g, lr in zip(optim.param_groups, saved_lrs):
                g["lr"] = lr
            for p, grad in zip(params, saved_grads):
                p.grad = grad


# PyTorch's private name for it, which the FSDP2 example imports
_init_optim_state = _init_state


def _fqn(names, p) -> str:
    if id(p) not in names:
        raise KeyError("get_optimizer_state_dict: the optimizer holds a parameter that is "
                       "not a parameter of the model")
    return names[id(p)]


def get_optimizer_state_dict(model, optimizers, *, submodules=None,
                             options: StateDictOptions | None = None) -> dict:
    """The optimizers' state dict keyed by parameter names: ``{"state": {fqn: {...}},
    "param_groups": [{..., "params": [fqn, ...]}]}`` (see NOTE [ Canonical state dicts ]).

    Args:
        model (nn.Module): the model the optimizers update.
        optimizers (Optimizer or iterable of Optimizer): one or several optimizers (their
            groups are listed one after another).
        submodules (set of nn.Module, optional): only these submodules' parameters.
        options (StateDictOptions, optional): see ``StateDictOptions``.

    Returns:
        dict

    Raises:
        KeyError: an optimizer holds a parameter the model does not have.

    Example::

        >>> from ember.distributed.checkpoint.state_dict import get_optimizer_state_dict
        >>> m = ember.nn.Linear(2, 1)
        >>> osd = get_optimizer_state_dict(m, ember.optim.SGD(m.parameters(), lr=0.1))
        >>> osd["param_groups"][0]["params"]
        ['weight', 'bias']
    """
    from ... import Tensor
    from ..fsdp._fully_shard import register_shard_like

    options = _verify(options)
    names = _param_names(model)
    infos = _shard_infos(model)
    keep = None
    if submodules is not None:
        keep = {id(p) for m in submodules for p in m.parameters()}
    state, groups = {}, []
    for optim in _optimizers(optimizers):
        _init_state(optim)
        for group in optim.param_groups:
            params = [p for p in group["params"] if keep is None or id(p) in keep]
            if options.ignore_frozen_params:
                params = [p for p in params if p.requires_grad]
            for p in params:
                if p not in optim.state:
                    continue
                entry = {}
                for k, v in optim.state[p].items():
                    info = infos.get(id(p))
                    if isinstance(v, Tensor):
                        v = v.detach()
                        if info is not None and v.dim() and tuple(v.shape) == tuple(p.shape):
                            if options.full_state_dict:
                                v = (v.full_tensor() if getattr(info, "tp", None) is not None
                                     else info.gather(v))
                            else:  # checkpointed as the parameter's shard is
                                register_shard_like(v, info)
                    entry[k] = v
                state[_fqn(names, p)] = entry
            if params:
                groups.append({**{k: v for k, v in group.items() if k != "params"},
                               "params": [_fqn(names, p) for p in params]})
    osd = {"state": state, "param_groups": groups}
    if options.cpu_offload:
        if options.full_state_dict and _rank() != 0:
            return {}
        from ...utils._pytree import tree_map

        osd = tree_map(lambda v: v.cpu() if isinstance(v, Tensor) else v, osd)
    if options.flatten_optimizer_state_dict:
        osd = _flatten_optim(osd)
    return osd


def _flatten_optim(osd: dict) -> dict:
    flat = {}
    for fqn, entry in osd["state"].items():
        for k, v in entry.items():
            flat[f"state.{fqn}.{k}"] = v
    for group in osd["param_groups"]:
        for fqn in group["params"]:
            for k, v in group.items():
                if k != "params":
                    flat[f"param_groups.{fqn}.{k}"] = v
    return flat


def _unflatten_optim(flat: dict, fqns: list) -> dict:
    """The nested form of a flattened optimizer state dict, given the parameter names."""
    state: dict = {}
    hypers: dict = {}
    by_length = sorted(fqns, key=len, reverse=True)  # "a.b" before "a"
    for key, v in flat.items():
        section, _, rest = key.partition(".")
        fqn = next((f for f in by_length if rest.startswith(f + ".")), None)
        if fqn is None or section not in ("state", "param_groups"):
            raise KeyError(f"set_optimizer_state_dict: unexpected key {key!r} in a flattened "
                           "optimizer state dict")
        target = state if section == "state" else hypers
        target.setdefault(fqn, {})[rest[len(fqn) + 1:]] = v
    return {"state": state, "param_groups": [{**h, "params": [f]} for f, h in hypers.items()]}


def set_optimizer_state_dict(model, optimizers, optim_state_dict: dict, *,
                             options: StateDictOptions | None = None) -> None:
    """Load an optimizer state dict keyed by parameter names (as
    ``get_optimizer_state_dict`` gives, nested or flattened) into the optimizers.

    Each optimizer group takes the hyper-parameters of the saved group that holds its first
    parameter; for a ``fully_shard`` model whole state tensors are cut to this rank's rows.

    Args:
        model (nn.Module): the model the optimizers update.
        optimizers (Optimizer or iterable of Optimizer): the optimizers.
        optim_state_dict (dict): the state to load.
        options (StateDictOptions, optional): ``broadcast_from_rank0`` applies.

    Returns:
        None

    Raises:
        ValueError: the saved groups do not cover an optimizer's groups.

    Example::

        >>> from ember.distributed.checkpoint.state_dict import *
        >>> m = ember.nn.Linear(2, 1); opt = ember.optim.SGD(m.parameters(), lr=0.1)
        >>> osd = get_optimizer_state_dict(m, opt); osd["param_groups"][0]["lr"] = 0.5
        >>> set_optimizer_state_dict(m, opt, osd); opt.param_groups[0]["lr"]
        0.5
    """
    from ... import Tensor

    options = _verify(options)
    if options.broadcast_from_rank0:
        optim_state_dict = _broadcast(optim_state_dict)
    names = _param_names(model)
    infos = _shard_infos(model)
    optims = _optimizers(optimizers)
    if optim_state_dict and "state" not in optim_state_dict:
        fqns = [_fqn(names, p) for o in optims for g in o.param_groups for p in g["params"]]
        optim_state_dict = _unflatten_optim(optim_state_dict, fqns)
    saved_state = optim_state_dict.get("state", {})
    saved_groups = optim_state_dict.get("param_groups", [])
    for optim in optims:
        _init_state(optim)
        own = optim.state_dict()
        groups, state = [], {}
        for group, own_group in zip(optim.param_groups, own["param_groups"]):
            fqns = [_fqn(names, p) for p in group["params"]]
            saved = next((g for g in saved_groups if fqns and fqns[0] in g["params"]), None)
            if saved is None:
                raise ValueError("set_optimizer_state_dict: no saved parameter group holds "
                                 f"{fqns[0] if fqns else 'an empty group'}")
            groups.append({**{k: v for k, v in saved.items() if k != "params"},
                           "params": own_group["params"]})
            for p, fqn, number in zip(group["params"], fqns, own_group["params"]):
                if fqn in saved_state:
                    entry = dict(saved_state[fqn])
                    info = infos.get(id(p))
                    if info is not None:
                        entry = {k: _local_rows(info, v) if isinstance(v, Tensor)
                                 and _matches_full(info, v, p) else v
                                 for k, v in entry.items()}
                    state[number] = entry
        optim.load_state_dict({"state": state, "param_groups": groups})


# -- both -------------------------------------------------------------------------------------

def get_state_dict(model, optimizers, *, submodules=None,
                   options: StateDictOptions | None = None) -> tuple[dict, dict]:
    """``(get_model_state_dict(model), get_optimizer_state_dict(model, optimizers))``.

    Args:
        model (nn.Module): the model.
        optimizers (Optimizer or iterable of Optimizer): its optimizers.
        submodules (set of nn.Module, optional): only these submodules.
        options (StateDictOptions, optional): see ``StateDictOptions``.

    Returns:
        (dict, dict)

    Example::

        >>> import tempfile, ember.distributed.checkpoint as dcp
        >>> from ember.distributed.checkpoint.state_dict import get_state_dict
        >>> m = ember.nn.Linear(2, 1); opt = ember.optim.Adam(m.parameters())
        >>> msd, osd = get_state_dict(m, opt)
        >>> _ = dcp.save({"model": msd, "optim": osd}, checkpoint_id=tempfile.mkdtemp())
        >>> sorted(osd["state"])
        ['bias', 'weight']
    """
    return (get_model_state_dict(model, submodules=submodules, options=options),
            get_optimizer_state_dict(model, optimizers, submodules=submodules, options=options))


def set_state_dict(model, optimizers, *, model_state_dict: dict, optim_state_dict: dict,
                   options: StateDictOptions | None = None) -> Any:
    """``set_model_state_dict`` then ``set_optimizer_state_dict``.

    Args:
        model (nn.Module): the model.
        optimizers (Optimizer or iterable of Optimizer): its optimizers.
        model_state_dict (dict): the model's canonical state dict.
        optim_state_dict (dict): the optimizers' state dict keyed by parameter names.
        options (StateDictOptions, optional): see ``StateDictOptions``.

    Returns:
        _IncompatibleKeys: the model's missing and unexpected keys.

    Example::

        >>> from ember.distributed.checkpoint.state_dict import *
        >>> m = ember.nn.Linear(2, 1); opt = ember.optim.Adam(m.parameters())
        >>> msd, osd = get_state_dict(m, opt)
        >>> set_state_dict(m, opt, model_state_dict=msd, optim_state_dict=osd)
        <All keys matched successfully>
    """
    keys = set_model_state_dict(model, model_state_dict, options=options)
    set_optimizer_state_dict(model, optimizers, optim_state_dict, options=options)
    return keys
