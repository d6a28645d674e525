"""``vmap``: map a function over a batch dimension of its inputs.

NOTE [ vmap levels ]
``vmap(func)(*args)`` makes one *level*: a fresh level id, pushed with its batch size and
``randomness`` on the thread's level stack, and a ``VmapMode`` pushed on the dispatcher's
stack. Mapped inputs become batched tensors of that level (their mapped dim moved behind
the batch dims of outer levels: NOTE [ Batched tensors ] in ``_batch_tensor.py``), ``func``
runs once -- every op inside is batched by its rule (NOTE [ vmap batching ] in
``_batch_rules.py``) -- and each output leaves the level with its batch dim moved to its
``out_dims`` entry (an output that does not depend on the batch is expanded to it).
Nested ``vmap`` calls make nested levels; ``grad``/``vjp`` compose with it through autograd
recorded at the logical level (NOTE [ vmap and autograd ]).

``chunk_size`` splits the batch into chunks that run one after the other; ``out_dims=None``
for an output that is batched raises PyTorch's error.
"""

from __future__ import annotations

import bisect
import functools

from .. import _C_functorch, _dispatch
from .._core.tensor import Tensor
from ..utils._pytree import LeafSpec, tree_flatten, tree_unflatten
from . import _batch_rules_nn  # noqa: F401  (adds the nn/selection rules to the op rules)
from . import _batch_rules_more  # noqa: F401  (and the FFT, scatter, solver... rules)
from ._batch_rules import _NO_LEVELS, VmapMode, info_at, outer_levels
from ._batch_tensor import level_node, levels_state, link, make_batched, new_level_id

__all__ = ["vmap"]


def _name(func):
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


def _broadcast_flatten(dims, spec):
    """Flatten ``dims`` (an int/None, or a tree whose nodes match ``spec``'s, down to any
    prefix of it) into one entry per leaf of ``spec``; None when they do not match."""
    if not isinstance(dims, (tuple, list, dict)):
        return [dims] * spec.num_leaves
    if spec.is_leaf() or spec.type is not type(dims):
        return None
    if isinstance(dims, dict):
        if set(dims) != set(spec.context):
            return None
        children = [dims[k] for k in spec.context]
    else:
        children = list(dims)
    if len(children) != len(spec.children_specs):
        return None
    out = []
    for child, child_spec in zip(children, spec.children_specs):
        flat = _broadcast_flatten(child, child_spec)
        if flat is None:
            return None
        out.extend(flat)
    return out


def _check_randomness(randomness):
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. Got "
            f"{randomness}")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """Vectorize ``func`` over a batch dimension: ``vmap(func)(x)`` stacks ``func(x[i])``.

    ``func`` runs once on batched tensors; each op applies its batching rule (NOTE [ vmap
    batching ] in ember/func/_batch_rules.py), and ops without one run per example.

    Args:
        func (callable): takes tensors (or nested lists/tuples/dicts of them) and returns
            tensors or nested structures of them.
        in_dims (int, None or tuple): per positional argument, the dimension to map over
            (None: pass the argument unchanged to every call). A nested tuple/dict matching an
            argument's structure gives one entry per tensor; an int applies to everything
            below it. Keyword arguments are never mapped. Default: 0.
        out_dims (int, None or tuple): where the batch dimension goes in each output (None:
            the output does not depend on the batch). Default: 0.
        randomness (str): ``"error"`` (random ops raise), ``"different"`` (each example
            draws its own numbers) or ``"same"`` (every example sees the same numbers).
            Default: ``"error"``.
        chunk_size (int, optional): run the batch in chunks of this many examples (less
            memory at once); must be positive. Default: None (one chunk).

    Returns:
        The vectorized function.

    Example:
        >>> import ember
        >>> vmap(ember.dot)(ember.ones(2, 3), ember.ones(2, 3))
        tensor([3., 3.])
        >>> vmap(lambda x, y: x * y, in_dims=(0, None))(ember.tensor([1., 2.]), ember.tensor(3.))
        tensor([3., 6.])
    """
    _check_randomness(randomness)
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return _vmap_call(func, in_dims, out_dims, randomness, args, kwargs, chunk_size)

    return wrapped


def _split_inputs(func, in_dims, args):
    """Each mapped input unbound along its dim: ``(batch_size, per_leaf)`` where
    ``per_leaf[k]`` is a list of slices for a mapped leaf, or the leaf itself."""
    name = _name(func)
    if not isinstance(in_dims, (int, tuple)) and in_dims is not None:
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or "
            f"a (potentially nested) tuple matching the structure of inputs, got: "
            f"{type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(
            f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
            "trying to vmap over a function with no inputs. The latter is unsupported.")
    leaves, spec = tree_flatten(args)
    dims = _broadcast_flatten(in_dims, spec)
    if dims is None:
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with "
            f"the structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but "
            f"inputs has structure {spec}.")
    sizes = []
    for x, d in zip(leaves, dims):
        if d is None:
            continue
        if not isinstance(d, int) or isinstance(d, bool):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input "
                "but in_dim must be either an integer dimension or None.")
        if not isinstance(x, Tensor):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input "
                f"but the input is of type {type(x)}. We cannot vmap over non-Tensor "
                "arguments, please use None as the respective in_dim")
        n = x.dim()
        if not -n <= d < n:
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some "
                f"input, but that input is a Tensor of dimensionality {n} so expected in_dim "
                f"to satisfy -{n} <= in_dim < {n}.")
        sizes.append(x.shape[d])
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if len(set(sizes)) != 1:
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {sizes} for the mapped dimension")
    return sizes[0], dims, leaves, spec


def _add_level(x, d, level, batch=None, outer=_NO_LEVELS):
    """Logical ``x`` as a batched tensor of ``level`` mapped over its dim ``d`` (NOTE [ vmap
    levels ]); a history ``x`` has at an outer level carries over (NOTE [ vmap and
    autograd ]). The levels ``outer`` stay inside the physical tensor (NOTE [ Dual levels
    inside vmap ] in ember/autograd/_forward.py)."""
    inf = info_at(x, outer)
    if inf is None:
        # mapped over dim 0: the input itself is the physical tensor (no movedim to record)
        return make_batched(x if d % max(x.dim(), 1) == 0 else x.movedim(d, 0), (level,))
    phys, levels = inf
    k = len(levels)
    n = phys.dim() - k
    i = bisect.bisect(levels, level)
    src = k + d % n
    y = make_batched(phys if src == i else phys.movedim(src, i),
                     levels[:i] + (level,) + levels[i:])
    if x._rg and not y._rg and _dispatch.state.grad_enabled:
        size = phys.shape[k + d % n]
        link(y, level_node("VmapIncomingBackward0", x,
                           lambda g: _remove_level("vmap", g, level, d, size, outer)))
    return y


def _remove_level(func, x, level, out_dim, batch, outer=_NO_LEVELS):
    """Output ``x`` of the level's ``func`` with the level's batch dim at ``out_dim``."""
    name = func if isinstance(func, str) else _name(func)
    inf = info_at(x, outer)
    if inf is None or level not in inf[1]:
        if out_dim is None:
            return x
        n = x.dim()
        d = _out_dim(name, out_dim, n + 1)
        shape = list(x.shape)
        shape.insert(d, batch)
        return x.unsqueeze(d).expand(shape)
    if out_dim is None:
        raise ValueError(
            f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
    phys, levels = inf
    k = len(levels)
    i = levels.index(level)
    d = _out_dim(name, out_dim, phys.dim() - k + 1)
    rest = levels[:i] + levels[i + 1:]
    y = make_batched(phys.movedim(i, k - 1 + d), rest)
    # NOTE [ Leaving a level inside another ]: an output still batched over outer levels
    # takes the level's logical history even where its physical tensor has one of its own.
    # That physical graph (recorded because some operand, such as a captured parameter,
    # requires grad) reaches only the physical leaves; the outer level's leaves -- stand-ins
    # of a transform at that level, as in vmap(jacrev(jacrev(f))) -- are logical there, and
    # only the logical graph leads to them.
    if x._rg and (rest or not y._rg) and _dispatch.state.grad_enabled:
        link(y, level_node("VmapOutgoingBackward0", x,
                           lambda g: _add_level(g, d, level, outer=outer)))
    return y


def _out_dim(name, d, n):
    if not isinstance(d, int) or isinstance(d, bool):
        raise ValueError(
            f"vmap({name}, ..., out_dims=...): `out_dims` must be an int, None or a python "
            "collection of ints representing where in the outputs the vmapped dimension "
            "should appear.")
    if not -n <= d < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got "
            f"{d})")
    return d % n


def _vmap_call(func, in_dims, out_dims, randomness, args, kwargs, chunk_size=None):
    batch, dims, leaves, spec = _split_inputs(func, in_dims, args)
    name = _name(func)
    if not isinstance(out_dims, (int, tuple, list)) and out_dims is not None or \
            isinstance(out_dims, bool):
        raise ValueError(
            f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a "
            "python collection of ints representing where in the outputs the vmapped "
            "dimension should appear.")
    if chunk_size is not None and chunk_size < batch:
        return _chunked(func, dims, out_dims, randomness, leaves, spec, kwargs, batch,
                        chunk_size)
    return _run_level(func, dims, out_dims, randomness, leaves, spec, kwargs, batch)


def _run_level(func, dims, out_dims, randomness, leaves, spec, kwargs, batch):
    level = new_level_id()
    outer = outer_levels()
    mapped = [x if d is None else _add_level(x, d, level, outer=outer)
              for x, d in zip(leaves, dims)]
    stack = levels_state.stack
    stack.append((level, batch, randomness))
    mode = VmapMode()
    mode.level_id = level
    mode.outer = outer
    _dispatch.push_mode(mode)
    try:
        with _C_functorch.layer("vmap", level):  # NOTE [ Transform layers ]
            out = func(*tree_unflatten(mapped, spec), **kwargs)
    finally:
        _dispatch.pop_mode(mode)
        stack.pop()
    return _unwrap_outputs(func, out_dims, out, level, batch, outer)


def _unwrap_outputs(func, out_dims, out, level, batch, outer=_NO_LEVELS):
    name = _name(func)
    out_leaves, out_spec = tree_flatten(out)
    flat_dims = _broadcast_flatten(out_dims, out_spec)
    if flat_dims is None:
        raise ValueError(
            f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible "
            f"with the structure of `outputs`. out_dims has structure "
            f"{tree_flatten(out_dims)[1]} but outputs has structure {out_spec}.")
    res = []
    for x, d in zip(out_leaves, flat_dims):
        if not isinstance(x, Tensor):
            if d is None:
                res.append(x)
                continue
            raise ValueError(
                f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(x)}. "
                "Did you mean to set out_dims= to None for output?")
        res.append(_remove_level(func, x, level, d, batch, outer))
    return tree_unflatten(res, out_spec) if not isinstance(out_spec, LeafSpec) else res[0]


def _chunked(func, dims, out_dims, randomness, leaves, spec, kwargs, batch, chunk_size):
    from .. import cat

    parts = []
    for start in range(0, batch, chunk_size):
        n = min(chunk_size, batch - start)
        chunk = [x if d is None else x.narrow(d, start, n) for x, d in zip(leaves, dims)]
        parts.append(_run_level(func, dims, out_dims, randomness, chunk, spec, kwargs, n))
    flats = [tree_flatten(p) for p in parts]
    out_spec = flats[0][1]
    flat_dims = _broadcast_flatten(out_dims, out_spec)
    res = []
    for k, d in enumerate(flat_dims):
        vals = [f[0][k] for f in flats]
        res.append(vals[0] if d is None or not isinstance(vals[0], Tensor) else cat(vals, d))
    return tree_unflatten(res, out_spec) if not isinstance(out_spec, LeafSpec) else res[0]
