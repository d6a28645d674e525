"""The flat path of an optimizer step: small parameters updated together, in few array ops.

NOTE [ Flat optimizer step ]
Every elementwise optimizer (SGD, Adam and the rest) has a functional update on lists of
tensors, run parameter by parameter: about ten ops each, so a model of a hundred small
tensors pays a thousand dispatches of Python overhead per step. The update is elementwise,
so running it on a concatenation of parameters gives the same numbers bit for bit. The flat
path cuts each group into buckets, runs of consecutive parameters of at most _BUCKET_NUMEL
elements together, and runs the functional update once per bucket:

- each state entry the size of its parameter (``exp_avg``, ``momentum_buffer``...) lives in
  one flat buffer per bucket; ``optimizer.state[p][key]`` is a view of its slice, so
  state_dict, in-place edits and checkpoints see the same values as before, and a state
  entry replaced from outside (load_state_dict) is noticed and copied in again;
- scalar entries (``step``, NAdam's ``mu_product``) are views of one array of one value per
  parameter, and the update runs on a single scalar when they all agree (otherwise that
  bucket runs per parameter);
- gradients and parameters are concatenated (one array call each), and each parameter takes
  back its slice after the update.

Why buckets rather than one buffer per group: one pass of each op over a whole model's
buffers streams them from memory ten times, where the per-parameter loop keeps each
parameter's arrays in cache through all ten ops. Measured on two cores: 100 tensors of 100
elements, AdamW 3.4 -> 0.6 ms a step; of 4,000 elements 4.4 -> 2.2 ms; one buffer for a
GPT's 3.2M parameters was 50% slower than the loop, buckets of 32K elements are even with it.
A parameter larger than a bucket runs alone on its own tensors, exactly as in the loop.

``foreach=False`` always runs the loop; groups that mix dtypes or devices, complex or
sparse gradients, ``differentiable=True`` and CuPy parameters (one fused kernel each already,
NOTE [ Fused optimizer kernels on CUDA ]) do too.
"""

from __future__ import annotations

from .. import _dispatch
from .._core.tensor import Tensor, wrap

# parameters are updated together up to this many elements (NOTE above)
_BUCKET_NUMEL = 1 << 15


def apply_update(optimizer, group, params, grads, columns, keys, update, **hparams):
    """Run ``update(params, grads, *columns, **hparams)`` for one group, flat where it pays
    (NOTE [ Flat optimizer step ]); state entries the update created (a first momentum
    buffer) are stored in ``optimizer.state``."""
    if not params:
        return
    if _flat_eligible(optimizer, group, params, grads):
        _flat_update(optimizer, group, params, grads, columns, keys, update, hparams)
    elif any(p.is_complex() for p in params):
        _update_as_real(params, grads, columns, update, hparams)
    else:
        update(params, grads, *columns, **hparams)
    for key, column in zip(keys, columns):
        for p, value in zip(params, column):
            if value is not None:
                optimizer.state[p][key] = value


def _update_as_real(params, grads, columns, update, hparams):
    """Run the update on real views of complex parameters, gradients and state.

    NOTE [ Complex parameters in optimizers ]
    PyTorch's optimizers treat a complex parameter as a pair of real ones: the update runs
    on ``view_as_real`` of the parameter, its gradient and its state, so Adam's second
    moment is kept per real and imaginary part (not as ``|g|**2``) and its state entries
    stay complex tensors (views of the same memory). Updating the complex tensors
    directly gives other numbers, and ops such as ``maximum`` (amsgrad) or ``sign``
    (Rprop) have no complex meaning. State an update creates (a first momentum buffer,
    Adagrad's sum) comes back real and is stored as its complex view.
    """
    from .. import view_as_complex, view_as_real

    def real(t):
        return view_as_real(t) if t is not None and t.is_complex() else t

    real_columns = [[real(v) for v in column] for column in columns]
    given = [list(column) for column in real_columns]
    update([real(p) for p in params], [real(g) for g in grads], *real_columns, **hparams)
    for column, out, before in zip(columns, real_columns, given):
        for i, (p, value) in enumerate(zip(params, out)):
            if value is before[i]:
                continue  # updated in place, through its view
            if value is not None and p.is_complex() and value.dim() == p.dim() + 1:
                value = view_as_complex(value)
            column[i] = value


def _flat_eligible(optimizer, group, params, grads):
    foreach = group.get("foreach")
    if foreach is False or group.get("differentiable") or len(params) < 2:
        return False
    # what depends only on which parameters these are (each listed once, none a DTensor) is
    # checked once per list (NOTE [ Flat step per-step cost ]); an entry holds its
    # parameters, so no other tensor can take one of their ids while it stands
    ids = tuple(map(id, params))
    checked = optimizer.__dict__.setdefault("_flat_checked", {})
    entry = checked.get(ids)
    if entry is None:
        if len(checked) >= 64:
            checked.clear()
        entry = checked[ids] = (tuple(params), len(set(ids)) == len(ids) and not any(
            type(p) is not Tensor and hasattr(type(p), "_local_tensor") for p in params))
    verdict = entry[1]
    if not verdict:
        # a parameter listed twice is updated twice, one after the other; DTensor parameters
        # keep their state as DTensors laid out as them
        return False
    first = params[0]._data
    kind, dt = type(first), first.dtype
    if dt.kind != "f" or kind.__module__.startswith("cupy"):
        # on a GPU each parameter's update is one fused kernel already (NOTE [ Fused
        # optimizer kernels on CUDA ]): concatenating and copying back would only add
        # passes over memory and host time
        return False
    for p, g in zip(params, grads):
        pd, gd = p._data, g._data
        if type(pd) is not kind or pd.dtype != dt or type(gd) is not kind or \
                gd.dtype != dt or (type(g) is not Tensor and g.is_sparse):
            return False
    return True


# NOTE [ Flat step per-step cost ]
# At a hundred small parameters the flat step's own bookkeeping is most of its time, so it
# is kept to one pass over the parameters for the checks that can change between steps
# (arrays' types and dtypes, sparse gradients), with the checks that cannot (duplicates,
# DTensors) made once per parameter list; concatenation flattens in the one array call
# (``axis=None``: C order, as ``reshape(-1)``), and the copy back reads each parameter's
# slice of the updated buffer, bumping its version counter inline.


class _Bucket:
    """A run of consecutive parameters updated together, and its flat state buffers."""

    def __init__(self, params, lo, hi):
        self.lo, self.hi = lo, hi
        self.shapes = [tuple(p.shape) for p in params[lo:hi]]
        self.offsets = [0]
        for p in params[lo:hi]:
            self.offsets.append(self.offsets[-1] + p._data.size)
        self.buffers = {}  # key -> (flat tensor, [per-parameter view tensors])

    def views(self, flat, scalar):
        if scalar:
            return [flat[i] for i in range(len(self.shapes))]
        o = self.offsets
        return [flat[o[i]:o[i + 1]].view(shape) for i, shape in enumerate(self.shapes)]


def _buckets(params):
    """Consecutive runs of parameters of at most _BUCKET_NUMEL elements in all; a larger
    parameter is a run of its own."""
    out, lo, size = [], 0, 0
    for i, p in enumerate(params):
        n = p._data.size
        if i > lo and size + n > _BUCKET_NUMEL:
            out.append(_Bucket(params, lo, i))
            lo, size = i, 0
        size += n
    out.append(_Bucket(params, lo, len(params)))
    return out


def _concat(xp, tensors):
    return xp.concatenate([t._data for t in tensors], axis=None)


def _flat_update(optimizer, group, params, grads, columns, keys, update, hparams):
    # one layout per group position: replaced groups (load_state_dict) reuse the slot
    cache = optimizer.__dict__.setdefault("_flat_layouts", {})
    slot = next(i for i, g in enumerate(optimizer.param_groups) if g is group)
    ids = [id(p) for p in params]
    layout = cache.get(slot)
    if layout is None or layout[0] != ids:
        layout = cache[slot] = (ids, _buckets(params))
    xp = _dispatch.xp_of(params[0]._data)
    for bucket in layout[1]:
        lo, hi = bucket.lo, bucket.hi
        cols = [column[lo:hi] for column in columns]
        if hi - lo == 1 or not _bucket_update(xp, bucket, params[lo:hi], grads[lo:hi], cols,
                                              keys, update, hparams):
            update(params[lo:hi], grads[lo:hi], *cols, **hparams)
        for column, col in zip(columns, cols):
            column[lo:hi] = col


def _bucket_update(xp, bucket, params, grads, columns, keys, update, hparams):
    """One bucket's update on its concatenation; False (having changed nothing the
    per-parameter update would see differently) when its state does not allow it."""
    # (the arrays' ndim: ``dim()`` is a public call per tensor, and this path reads the
    # arrays anyway)
    if all(p._data.ndim == 0 for p in params):
        # per-element state and per-parameter scalars look alike here: run the loop
        return False
    args = []
    for key, column in zip(keys, columns):
        present = [v is not None for v in column]
        if not any(present):
            args.append(None)
            continue
        if not all(present):
            return False
        if all(v._data.shape == p._data.shape for v, p in zip(column, params)):
            scalar = False
        elif all(v._data.ndim == 0 for v in column):
            scalar = True
        else:
            return False
        flat, views = bucket.buffers.get(key, (None, None))
        if views is None or any(v is not w for v, w in zip(column, views)):
            # a state column may live elsewhere than the parameters ('step' stays on the
            # CPU for CUDA parameters, as in PyTorch)
            flat = wrap(_concat(_dispatch.xp_of(column[0]._data), column))
            views = bucket.views(flat, scalar)
            bucket.buffers[key] = (flat, views)
            column[:] = views
        if scalar:
            values = flat._data
            if values.min() != values.max():  # parameters at different steps
                return False
            args.append(wrap(values[:1].reshape(()).copy()))
        else:
            args.append(flat)
    flat_p = wrap(_concat(xp, params))
    lists = [[a] for a in args]
    update([flat_p], [wrap(_concat(xp, grads))], *lists, **hparams)
    for i, (key, column) in enumerate(zip(keys, columns)):
        out = lists[i][0]
        if out is None:
            continue
        if out._data.ndim == 0:
            flat = bucket.buffers[key][0]
            flat._data[...] = out._data
            flat._bump()
        elif out is not args[i]:  # created by the update (a first momentum buffer)
            views = bucket.views(out, False)
            bucket.buffers[key] = (out, views)
            column[:] = views
    o = bucket.offsets
    data = flat_p._data
    lo = 0
    for i, p in enumerate(params):
        hi = o[i + 1]
        pd = p._data
        pd[...] = data[lo:hi] if pd.ndim == 1 else data[lo:hi].reshape(pd.shape)
        lo = hi
        vc = p._vc
        if vc is None:
            p._bump()
        else:
            vc[0] += 1
    return True
