"""Custom ``autograd.Function`` under ``vmap``: its ``vmap`` staticmethod, or
``generate_vmap_rule = True``.

NOTE [ autograd.Function under vmap ]
``Function.apply`` asks ``vmap_apply`` (installed into ember/autograd/function.py) first
whenever a mode is on. When an argument is batched:

- a Function without ``setup_context`` (``forward(ctx, ...)``) raises PyTorch's error: the
  transforms need forward and context set-up apart;
- with a ``vmap`` staticmethod, ``vmap(info, in_dims, *args)`` runs for the innermost level:
  each argument batched at that level arrives with the level's batch dim at dim 0 (its
  ``in_dims`` entry 0, else None), ``info`` carries ``batch_size`` and ``randomness``; it
  returns ``(outputs, out_dims)``, and the outputs become batched tensors of the level again;
- with ``generate_vmap_rule = True``, ``forward`` runs on the batched tensors (its ops are
  batched by their rules);
- otherwise PyTorch's error.

Either way ``setup_context`` then sees the logical inputs and outputs, and the backward node
is recorded at the logical level, so ``backward`` runs on batched gradients through the
vmap mode (NOTE [ vmap and autograd ] in ``_batch_rules.py``).
"""

from __future__ import annotations

from collections import namedtuple

from .. import _C_functorch
from .._core.tensor import Tensor
from ._batch_rules import _info, _tls
from ._batch_tensor import levels_state

__all__ = ["VmapInfo", "vmap_apply", "library_rule"]

#: what a ``vmap`` staticmethod receives: the level's batch size and randomness flag
VmapInfo = namedtuple("VmapInfo", ["batch_size", "randomness"])


def _batched(x):
    return isinstance(x, Tensor) and _info(x) is not None


def vmap_apply(cls, args, kwargs):
    """``cls.apply(*args, **kwargs)`` when some argument is batched, else NotImplemented."""
    if not levels_state.stack or not any(_batched(a) for a in args):
        return NotImplemented
    from ..autograd import function as _function

    custom_setup = cls.setup_context is not _function.Function.setup_context and \
        "setup_context" in _function._own_attrs(cls)
    if not custom_setup:
        raise RuntimeError(
            "In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, "
            "jacrev, ...), it must override the setup_context staticmethod. For more details, "
            "please see https://pytorch.org/docs/main/notes/extending.func.html")
    has_rule = "vmap" in _function._own_attrs(cls)
    if not has_rule:
        if getattr(cls, "generate_vmap_rule", False):
            return cls._apply_ctx(args, kwargs, beneath_transforms=False)[1]
        raise RuntimeError(
            f"You tried to vmap over {cls.__name__}, but it does not have vmap support. Please "
            "override and implement the vmap staticmethod or set generate_vmap_rule=True. For "
            "more details, please see https://pytorch.org/docs/main/notes/extending.func.html")
    return _with_rule(cls, args, kwargs, _function)


def _split_level(args, level, size):
    """``(args, in_dims)`` for a rule of ``level``: each argument batched at that level with
    the level's batch dim moved to dim 0 (in_dim 0), the others as given (in_dim None)."""
    from ._vmap import _remove_level

    phys_args, in_dims = [], []
    for a in args:
        inf = _info(a) if isinstance(a, Tensor) else None
        if inf is not None and level in inf[1]:
            phys_args.append(_remove_level("vmap", a, level, 0, size, _tls.outer))
            in_dims.append(0)
        else:
            phys_args.append(a)
            in_dims.append(None)
    return phys_args, in_dims


def _with_rule(cls, args, kwargs, _function):
    from .._dispatch import state
    from ._vmap import _add_level

    level, size, randomness = levels_state.stack[-1]
    phys_args, in_dims = _split_level(args, level, size)
    bw_cls = cls._backward_cls
    ctx = object.__new__(bw_cls)
    is_tensor = tuple(isinstance(a, Tensor) for a in args)
    needs = tuple(t and a._rg for t, a in zip(is_tensor, args))
    ctx.needs_input_grad = needs
    ctx._input_is_tensor = is_tensor
    recording = state.grad_enabled and any(needs)
    prev = state.grad_enabled
    state.grad_enabled = False
    try:
        # the rule runs at the levels outside this one, as library_rule's (a Function it
        # applies to tensors batched at enclosing levels goes to their rules), and beneath
        # this level's transform layer: NOTE [ Transform layers ]
        entry = levels_state.stack.pop()
        try:
            with _C_functorch.below("vmap", level):
                res = cls.vmap(VmapInfo(size, randomness), tuple(in_dims), *phys_args,
                               **kwargs)
        finally:
            levels_state.stack.append(entry)
        if not (isinstance(res, tuple) and len(res) == 2):
            raise RuntimeError(
                f"{cls.__name__}.vmap must return a tuple (outputs, out_dims)")
        out, out_dims = res
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        dims = (out_dims,) * len(outs) if not isinstance(out_dims, tuple) else out_dims
        if len(dims) != len(outs):
            raise ValueError(
                f"{cls.__name__}.vmap returned {len(outs)} outputs but {len(dims)} out_dims")
        outs = tuple(o if d is None or not isinstance(o, Tensor)
                     else _add_level(o, d, level, outer=_tls.outer) for o, d in zip(outs, dims))
    finally:
        state.grad_enabled = prev
    out = outs[0] if single else outs
    cls.setup_context(ctx, args, out)
    return _function._wrap_outputs(ctx, args, out, recording)


def library_rule(handle, args, kwargs):
    """The batching rule of a custom op (``ember.library``): the function registered with
    ``register_vmap``, called as a ``vmap`` staticmethod is (NOTE [ autograd.Function under
    vmap ]), else one call per example."""
    from ..library import vmap_rule
    from ._batch_rules import _Done, _fallback
    from ._vmap import _add_level

    fn = vmap_rule(handle.op)
    if fn is None:
        return _fallback(handle, args, kwargs)
    level, size, randomness = levels_state.stack[-1]
    phys_args, in_dims = _split_level(args, level, size)
    # the rule runs at the levels outside this one: the op called inside it is batched by
    # the enclosing vmaps only, as in PyTorch (the mode is pushed again for them)
    from .. import _dispatch
    mode = _tls.mode
    stack = levels_state.stack
    entry = stack.pop()
    _dispatch.push_mode(mode)
    try:
        res = fn(VmapInfo(size, randomness), tuple(in_dims), *phys_args, **kwargs)
    finally:
        _dispatch.pop_mode(mode)
        stack.append(entry)
    if not (isinstance(res, tuple) and len(res) == 2):
        raise RuntimeError(f"the vmap rule of {handle.op.name} must return a tuple (output, "
                           "out_dims)")
    out, out_dims = res
    single = not isinstance(out, (tuple, list))
    outs = (out,) if single else tuple(out)
    dims = (out_dims,) * len(outs) if not isinstance(out_dims, (tuple, list)) else out_dims
    if len(dims) != len(outs):
        raise ValueError(f"the vmap rule of {handle.op.name} returned {len(outs)} outputs but "
                         f"{len(dims)} out_dims")
    outs = tuple(o if d is None or not isinstance(o, Tensor)
                 else _add_level(o, d, level, outer=_tls.outer) for o, d in zip(outs, dims))
    return _Done(outs[0] if single else outs)
