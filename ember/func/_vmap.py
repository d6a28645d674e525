"""``vmap``: map a function over a batch dimension of its inputs.

NOTE [ vmap as a per-example loop ]
PyTorch's vmap runs ``func`` once on batched tensors, each op applying its batching rule;
ops without a rule fall back to running once per batch element and stacking. ember has no
batching rules yet (they will be modes on the dispatcher), so every call takes that
fallback: the inputs are unbound along their ``in_dims``, ``func`` runs once per element and
the outputs are stacked along their ``out_dims``. Results, errors for malformed ``in_dims`` /
``out_dims`` and gradients through it are PyTorch's; the cost is that of a Python loop.

Differences that follow from the loop:

- ``randomness``: ``"error"`` raises when ``func`` draws from the default generator;
  ``"same"`` replays the generator state for every element (each element sees the same
  numbers); ``"different"`` lets the draws follow one another. Values therefore differ from
  PyTorch's, which draws one batched tensor.
- ``out_dims=None`` for an output: PyTorch knows whether the output is batched; the loop
  returns the first element's output when all elements produced equal tensors, and raises
  PyTorch's error otherwise.
- Data-dependent Python control flow (``if x.sum() > 0``, ``.item()``) works per element
  instead of raising.
- A batch of size 0 runs ``func`` once on zeros of one element's shape to learn the output
  shapes.
"""

from __future__ import annotations

import functools

from .._core.tensor import Tensor
from ..utils._pytree import LeafSpec, tree_flatten, tree_unflatten

__all__ = ["vmap"]


def _name(func):
    return getattr(func, "__name__", repr(func))


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

    ember runs ``func`` once per batch element and stacks the results (see NOTE [ vmap as a
    per-example loop ]): the results are PyTorch's, not its speed.

    Args:
        func (callable): takes tensors (or nested lists/tuples/dicts of them) and returns
            tensors or nested structures of them.
        in_dims (int, None or tuple): per positional argument, the dimension to map over
            (None: pass the argument unchanged to every call). A nested tuple/dict matching an
            argument's structure gives one entry per tensor; an int applies to everything
            below it. Keyword arguments are never mapped. Default: 0.
        out_dims (int, None or tuple): where the batch dimension goes in each output (None:
            the output does not depend on the batch). Default: 0.
        randomness (str): ``"error"`` (random ops raise), ``"different"`` or ``"same"``
            (every element sees the same random numbers). Default: ``"error"``.
        chunk_size (int, optional): accepted for PyTorch compatibility (PyTorch's memory
            knob); must be positive. Default: None.

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
        return _vmap_call(func, in_dims, out_dims, randomness, args, kwargs)

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
    batch = sizes[0]
    per_leaf = []
    for x, d in zip(leaves, dims):
        if d is None:
            per_leaf.append(x)
        elif batch == 0:
            # NOTE [ vmap as a per-example loop ]: one call on zeros to learn output shapes
            shape = list(x.shape)
            del shape[d % x.dim()]
            per_leaf.append([x.new_zeros(shape)])
        else:
            per_leaf.append(list(x.unbind(d)))
    return batch, dims, per_leaf, spec


def _vmap_call(func, in_dims, out_dims, randomness, args, kwargs):
    from .._core.generator import default_generator

    batch, dims, per_leaf, spec = _split_inputs(func, in_dims, args)
    name = _name(func)
    if not isinstance(out_dims, (int, tuple, list)) and out_dims is not None or \
            isinstance(out_dims, bool):
        raise ValueError(
            f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a "
            "python collection of ints representing where in the outputs the vmapped "
            "dimension should appear.")
    state = None if randomness == "different" else default_generator.get_state()
    results = []
    for i in range(max(batch, 1)):
        if randomness == "same" and i:
            default_generator.set_state(state)
        sample = [x if d is None else x[i] for x, d in zip(per_leaf, dims)]
        results.append(tree_flatten(func(*tree_unflatten(sample, spec), **kwargs)))
        if randomness == "error" and not _same_state(state, default_generator.get_state()):
            default_generator.set_state(state)
            raise RuntimeError(
                "vmap: called random operation while in randomness error mode. Please either "
                "use the 'same' or 'different' randomness flags on vmap or perform the "
                "randomness operation out of vmap")
    return _stack_outputs(func, out_dims, results, batch)


def _same_state(a, b):
    return bool((a == b).all())


def _stack_outputs(func, out_dims, results, batch):
    from .. import equal, stack

    name = _name(func)
    out_spec = results[0][1]
    flat_dims = _broadcast_flatten(out_dims, out_spec)
    if flat_dims is None:
        raise ValueError(
            f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible "
            f"with the structure of `outputs`. out_dims has structure "
            f"{tree_flatten(out_dims)[1]} but outputs has structure {out_spec}.")
    outs = []
    for k, d in enumerate(flat_dims):
        values = [leaves[k] for leaves, _ in results]
        first = values[0]
        if d is None:
            if isinstance(first, Tensor) and not all(
                    isinstance(v, Tensor) and v.shape == first.shape and equal(v, first)
                    for v in values[1:]):
                raise ValueError(
                    f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim "
                    "is None")
            outs.append(first)
            continue
        if not isinstance(first, Tensor):
            raise ValueError(
                f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                f"{type(first)}. Did you mean to set out_dims= to None for output?")
        out = stack(values, d)
        outs.append(out.narrow(d, 0, 0) if batch == 0 else out)
    return tree_unflatten(outs, out_spec) if not isinstance(out_spec, LeafSpec) else outs[0]
