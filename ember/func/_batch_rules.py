"""The vmap mode and its batching rules.

NOTE [ vmap batching ]
``vmap`` pushes a ``VmapMode`` (level 20 of the dispatcher's stack, NOTE [ Dispatch ] in
ember/_dispatch.py). Every op call inside reaches ``VmapMode.dispatch``; when none of its
tensor arguments is batched (NOTE [ Batched tensors ] in ``_batch_tensor.py``) the call goes
on unchanged, else a *batching rule* computes the result on the physical tensors, whose
batch dims are always in front. Rules come from the op's class in the registry:

- element-wise ops (every ``ElementwiseOp``, plus ``where``/``masked_fill``/...): operands
  get size-1 dims for the levels they lack and for the logical rank they lack, then the op
  runs once and broadcasting does the rest; in-place forms write into the physical self;
- reductions and dim-wise ops (``sum``, ``softmax``, ``sort``, ``cumsum``...): dims shift by
  the number of batch dims (``dim=None`` reduces the logical dims only);
- views and shape ops: dims shift, target shapes get the batch sizes in front (results stay
  views of the physical tensor);
- ``matmul``/``mm``/``bmm``/``mv``/``dot``/``outer``/``addmm``/``linear``: one batched
  matmul (an unbatched weight stays a single GEMM operand);
- ``convolution``: the batch folds into N (unbatched weight) or into the groups (batched
  weight); a 2-D per-example weight gradient is one batched product of the examples'
  columns (``unfold``) with their output gradients; pooling and its backward ops fold the
  batch into N;
- ``cross_entropy_loss`` (and its backward) and ``nll_loss``: the batch folds into the rows,
  the reduction is then done per example;
- losses reducing an element-wise loss (binary cross entropy with and without logits, Huber,
  smooth L1, soft margin) and their backward ops: one call with ``reduction="none"`` on the
  operands at full batch size, then a per-example mean or sum (``_pointwise_loss``);
  backward formulas over operands of one shape (``tanh_backward``, ``glu_backward``...):
  every operand at full batch size (``_same_shape``); ``glu`` shifts its dim;
- linear algebra on the last two dims (``inv``, ``det``, ``eigh``, ``svd``...): NumPy maps
  over the leading dims; two-matrix ops (``solve_triangular``) get both operands at full
  batch size, ``linalg.cross`` broadcasts like an element-wise op with its dim shifted;
- indexing with basic indices and adjacent index tensors, ``gather``/``scatter``,
  ``cat``/``stack``, creation-like ops (``zeros_like``..., ``Tensor.new_zeros``...), the engine's
  ``_autograd_sum_to``/``_autograd_expand`` and reductions' ``_expand_back``;
- in ``_batch_rules_nn.py``: layer and batch norm (and their backward ops), embedding (and
  its backward), attention, mode padding, the selections (``kthvalue``/``median``/``mode``)
  and their values' gather/scatter, advanced indexing and ``index_put`` with index tensors
  batched or not (NOTE [ Batched advanced indices ]), ``take``/``put``/``take_along_dim``/
  ``index_*``, ``linalg.solve``, ``cdist``, the backward ops of views, ``repeat``,
  ``unfold``, ``diff`` and ``cumprod`` (NOTE [ Batch folded into rows or channels ]), and
  ops decomposed at the logical level into ops with rules (``trace``, ``vdot``, ``kron``,
  ``tensordot``, ``addr``);
- in ``_batch_rules_more.py``: the FFTs, the view scatters, ``scatter_reduce``,
  ``searchsorted``/``bucketize``, ``repeat_interleave``, ``addbmm``, the Cholesky and LU
  solvers, ``isin``, ``masked_select`` with an unbatched mask, and PyTorch's refusals for
  ops whose result's shape depends on the values (``unique``, ``unique_consecutive``).

``rule_names()`` lists the ops with a rule, ``fallback_names()`` the rest, which take the
fallback (`python tools/transform_rules.py` prints both, with the forward-mode counts).

An op without a rule runs once per example and the results are stacked (``_fallback``), with a
one-time performance warning naming the op, as PyTorch does. Random ops follow the
``randomness`` flag of the active levels (``_random``).

NOTE [ vmap and autograd ]
Design: autograd records at the *logical* level. When an op's logical inputs require grad
(a ``grad``/``vjp`` stand-in created inside vmap, batched or not), the mode records the op
with its logical inputs and logical (batched) outputs, exactly as the op would record
outside vmap. The backward formulas are ember ops, so when the engine runs them on batched
gradients they come back through this mode and are batched by the same rules: the
gradient of an *unbatched* parameter computed from a batched loss is batched, i.e. one
gradient per example. That is ``vmap(grad(loss), in_dims=(None, 0))(params, x)`` --
per-sample gradients -- with no lifting of the parameters and one batched op per formula
op. ``jacrev`` is ``vmap`` over the ``vjp`` of basis cotangents: the graph was recorded
outside vmap (plain tensors), the cotangents are batched, and the formulas mix both.
Physical computations record too when the physical tensors require grad (``vmap`` inside
``grad``): each level differentiates what it sees. Batched tensors saved by autograd are
re-made from their array, whose batch info is registered (NOTE [ Batched tensors ]).
In-place ops on batched tensors follow ``commit_inplace_result``: when autograd records at
the logical level, the op runs out of place (on a recorded copy of ``self``, which the
formulas save), its values are written into ``self``'s physical tensor and its history
becomes ``self``'s (``_inplace_with_grad``). Basic indexing marks its result a logical view
of its base (``_logical_view``), so a write into it rewrites the base's history
(``CopySlices``), as outside vmap. An op written in Python with no rule (no registry op to
record) runs per example on stand-ins whose gradients lead back to the logical inputs
(``_grad_stand_in``), so the fallback keeps the gradient.
Known limit: a tensor that requires grad at one vmap level loses that history when an
inner ``vmap`` takes it as a mapped input (``vmap(grad(vmap(f)))`` differentiates only
through the inner function's unmapped inputs).

NOTE [ Stand-ins private to a level ]
In ``vmap(grad(loss), in_dims=(None, 0))(params, x)`` the parameters' stand-ins (made by
``grad`` inside the vmap level) are unbatched tensors requiring grad, so a rule's physical
steps with them (the batched ``linear``) would record a physical graph beside the logical
one -- a graph no one reads: only the inner ``grad`` asks for the stand-ins' gradients, and
it reads the logical graph. ``grad`` tags such private stand-ins with the level
(``mark_private``); a call whose arguments requiring grad are all private stand-ins of the
dispatching level or batched over physical tensors without history, with no other mode on
the stack, runs its rule with grad mode off (``_quiet``, for the rules in ``_QUIET``, which
make no views and take no logical steps), and only the logical record is made. Anything
else (an outer ``grad``, a tensor requiring grad from outside, nested levels) records both,
as before.

NOTE [ Plain physical steps ]
A rule's steps on physical tensors are ember ops, each a trip through the dispatcher
(~5-15 us): a rule built of ten of them costs more than the batched kernel it wraps on
per-example sizes. Where nothing can observe those steps -- no mode left on the stack (no
outer vmap level, no dual level, no user mode) and no physical operand requiring grad (the
usual case: autograd records at the logical level) -- the hot rules (cross entropy and its
backward) reshape and reduce the NumPy arrays directly and wrap the results (``_plain``).
Otherwise they take the same steps as ember ops, so that outer levels batch them and
autograd records them.
"""

from __future__ import annotations

import math
import threading
import warnings

import numpy as np

from .. import _dispatch
from .._core.tensor import Tensor, wrap
from .._ops._elementwise import ElementwiseOp, _tensor_args, promote
from ._batch_kernels import outer_rows
from ._batch_tensor import _registry, level_node, levels_state, link, make_batched

__all__ = ["VmapMode"]


_NO_LEVELS = frozenset()


class _Tls(threading.local):
    mode = None
    #: the vmap levels the dispatching vmap mode must leave batched (NOTE [ Dual levels
    #: inside vmap ])
    outer = _NO_LEVELS


_tls = _Tls()


class _logical:
    """Inside a rule: run ember ops at the logical level again, with the vmap mode that is
    dispatching pushed back (for rules that decompose an op into others)."""

    def __enter__(self):
        self.prev = _dispatch.state.modes
        _dispatch.state.modes = self.prev + (_tls.mode,)

    def __exit__(self, *exc):
        _dispatch.state.modes = self.prev


class _NoRule(Exception):
    """Raised by a rule that does not cover this call: the per-example fallback runs."""


class _Done:
    """A rule's result that is already the logical output (recorded where needed)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _E():
    import ember

    return ember


def _plain(*tensors):
    """Whether steps on these physical tensors may run on their NumPy arrays (NOTE [ Plain
    physical steps ]): no mode on the stack, none requiring grad (None entries ignored)."""
    st = _dispatch.state
    if st.modes:
        return False
    for t in tensors:
        if t is not None and ((t._rg and st.grad_enabled) or type(t._data) is not np.ndarray):
            return False
    return True


# --------------------------------------------------------------------------------------------
# physical helpers


def _info(x):
    if isinstance(x, Tensor):
        d = x._data
        e = _registry.get(id(d))
        if e is not None and e[0]() is d:
            outer = _tls.outer
            if outer:
                return _cut(e[1], outer)
            return e[1]
    return None


def info_at(x, outer):
    """``_info(x)`` as a vmap level leaving ``outer`` batched sees it."""
    prev = _tls.outer
    _tls.outer = outer
    try:
        return _info(x)
    finally:
        _tls.outer = prev


def outer_levels():
    """The vmap levels that a vmap level entered now must leave batched: those entered
    before the newest dual level inside vmap on this thread's stack (NOTE [ Dual levels
    inside vmap ] in ember/autograd/_forward.py)."""
    from ..autograd._forward import DualLevel

    modes = _dispatch.state.modes
    last = -1
    for i, m in enumerate(modes):
        if isinstance(m, DualLevel):
            last = i
    if last < 0:
        return _NO_LEVELS
    return frozenset(m.level_id for m in modes[:last] if isinstance(m, VmapMode))


def widened(x, like):
    """A new tensor with ``x``'s values, batched over the levels of ``x`` and of ``like``
    (every example a copy of ``x``'s), contiguous and writable: a tangent that a batched
    value is about to be written into (NOTE [ Dual levels inside vmap ])."""
    from ._batch_tensor import batch_info

    xi, li = batch_info(x), batch_info(like)
    target = _union([xi, li])
    sizes = _sizes(target, [xi, li])
    if xi is None:
        p = x.expand(tuple(sizes) + tuple(x.shape))
    else:
        p = _align(xi[0], xi[1], target)
        p = p.expand(tuple(sizes) + tuple(p.shape[len(target):]))
    return make_batched(p.clone(memory_format=_E().contiguous_format), target)


def _cut(inf, outer):
    """``inf`` as the vmap level dispatching sees it when a dual level lies between it and
    the levels ``outer`` (NOTE [ Dual levels inside vmap ]): those levels stay batched inside
    the physical tensor (a batched tensor of theirs), None when they are all it has."""
    phys, levels = inf
    if outer.isdisjoint(levels):
        return inf
    keep = [i for i, lv in enumerate(levels) if lv in outer]
    if len(keep) == len(levels):
        return None
    rest = [i for i, lv in enumerate(levels) if lv not in outer]
    if keep != list(range(len(keep))):
        order = keep + rest
        phys = phys.permute(order + list(range(len(levels), phys.dim())))
    return make_batched(phys, tuple(levels[i] for i in keep)), tuple(levels[i] for i in rest)


def _sizes(levels, infos=()):
    """Batch sizes of ``levels``: read off the operands' physical shapes (a backward pass
    may run after an inner level has left the stack), else from the active stack."""
    table = {}
    for inf in infos:
        if inf is not None:
            shape = inf[0].shape
            for i, lv in enumerate(inf[1]):
                table[lv] = shape[i]
    if len(table) < len(levels):
        for lv, n, _ in levels_state.stack:
            table.setdefault(lv, n)
    return tuple(table[lv] for lv in levels)


def _union(infos):
    s = set()
    for inf in infos:
        if inf is not None:
            s.update(inf[1])
    return tuple(sorted(s))


def _align(phys, levels, target):
    """``phys`` (batch dims of ``levels`` in front) with size-1 dims for the levels of
    ``target`` it lacks."""
    if levels == target:
        return phys
    j = 0
    for i, lv in enumerate(target):
        if j < len(levels) and levels[j] == lv:
            j += 1
        else:
            phys = phys.unsqueeze(i)
    return phys


def _full(x, target, sizes):
    """Logical ``x`` (batched or not) as a physical tensor with every level of ``target``
    present at full size."""
    inf = _info(x)
    if inf is None:
        return x.expand(tuple(sizes) + tuple(x.shape))
    phys, levels = inf
    p = _align(phys, levels, target)
    if levels != target:
        p = p.expand(tuple(sizes) + tuple(p.shape[len(target):]))
    return p


def _pad(p, k, nd, rank):
    """Insert ``rank - nd`` size-1 dims after the ``k`` batch dims of ``p``."""
    if nd >= rank:
        return p
    return p.reshape(tuple(p.shape[:k]) + (1,) * (rank - nd) + tuple(p.shape[k:]))


def _wrap(d, n):
    """Wrap dim ``d`` against ``n`` logical dims (n >= 1)."""
    if d < 0:
        d += n
    if not 0 <= d < n:
        raise _NoRule
    return d


def _shift(dim, nd, k):
    if dim is None:
        return None
    if isinstance(dim, (tuple, list)):
        return tuple(_wrap(d, max(nd, 1)) + k for d in dim)
    return _wrap(dim, max(nd, 1)) + k


def _one(args):
    """The single batched first input: (phys, levels, k, logical ndim)."""
    inf = _info(args[0])
    if inf is None:
        raise _NoRule
    for a in args[1:]:
        if _info(a) is not None:
            raise _NoRule
    phys, levels = inf
    k = len(levels)
    return phys, levels, k, phys.dim() - k


# --------------------------------------------------------------------------------------------
# rules: each takes (handle, args, kwargs) and returns (physical result, levels) or _Done


def _elementwise(handle, args, kwargs):
    if kwargs and kwargs.get("out") is not None:
        raise _NoRule
    infos = [_info(a) for a in args]
    # the common case first: every batched operand at the same levels and of the largest
    # logical rank (n-d), the others unbatched tensors of no larger rank or numbers -- the
    # physical operands then broadcast as they are
    lv = None
    rank = batched_rank = -1
    for a, inf in zip(args, infos):
        if inf is not None:
            nd = a._data.ndim
            if lv is None:
                lv, batched_rank = inf[1], nd
            elif inf[1] != lv or nd != batched_rank:
                break
        elif isinstance(a, Tensor) and a._data.ndim > rank:
            rank = a._data.ndim
    else:
        if batched_rank > 0 and rank <= batched_rank:
            phys = [a if inf is None else inf[0] for a, inf in zip(args, infos)]
            res = _outer_product(handle, phys, kwargs)
            return (handle(*phys, **kwargs) if res is None else res), lv
    lv = _union(infos)
    k = len(lv)
    rank = 0
    zero_batched = False
    for a, inf in zip(args, infos):
        if isinstance(a, Tensor):
            nd = a._data.ndim
            rank = max(rank, nd)
            if inf is not None and nd == 0:
                zero_batched = True
    compute = None
    if zero_batched and isinstance(handle.op, ElementwiseOp):
        # a logical 0-d operand becomes physically n-d: it must not take part in promotion
        # as a dimensioned tensor, so it is cast to the logical compute dtype first
        compute, result, _ = promote(handle.op, args)
    phys = []
    for a, inf in zip(args, infos):
        if inf is None:
            phys.append(a)
        else:
            p, levels = inf
            p = _align(p, levels, lv)
            if compute is not None and a._data.ndim == 0 and p.dtype is not compute:
                p = p.to(compute)
            phys.append(_pad(p, k, p.dim() - k, rank))
    res = _outer_product(handle, phys, kwargs)
    if res is None:
        res = handle(*phys, **kwargs)
    if compute is not None and res.dtype is not result:
        res = res.to(result)
    return res, lv


def _outer_product(handle, phys, kwargs, force=False):
    """``a * b`` shaped ``[..., n, 1] * [..., 1, m]`` (a batch of outer products, as the
    weight gradient of a per-example ``linear`` is) by a compiled loop or ``einsum`` (NOTE
    [ Batched outer products ] in _batch_kernels.py); None when the call is not that
    (``force``: the caller is ``outer``'s rule, not ``mul``'s)."""
    if not force and handle.op.name != "mul" or kwargs or len(phys) != 2:
        return None
    a, b = phys
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        return None
    sa, sb = a.shape, b.shape
    if len(sa) < 3 or len(sa) != len(sb) or sa[-1] != 1 or sb[-2] != 1 or \
            sa[:-2] != sb[:-2] or a.dtype is not b.dtype or \
            not a.dtype.is_floating_point or math.prod(sa) * sb[-1] < (1 << 16):
        return None
    a, b = a.squeeze(-1), b.squeeze(-2)
    arr = outer_rows(a, b)
    if arr is not None:
        return wrap(arr)
    return _E().einsum("...i,...j->...ij", a, b)



def _elementwise_inplace(handle, args, kwargs):
    self = args[0]
    inf = _info(self)
    lv = _union([_info(a) for a in args])
    if inf is None or inf[1] != lv:
        raise RuntimeError(
            "vmap: inplace arithmetic(self, *extra_args) is not possible because there exists "
            "a Tensor `other` in extra_args that has more elements than `self`. This happened "
            "due to `other` being vmapped over but `self` not being vmapped over in a vmap. "
            "Please try to use out-of-place operators instead of inplace arithmetic. If said "
            "operator is being called inside the PyTorch framework, please file a bug report "
            "instead.")
    sp = inf[0]
    k = len(lv)
    rank = sp.dim() - k
    phys = [sp]
    for a in args[1:]:
        ai = _info(a)
        if ai is None:
            phys.append(a)
        else:
            p = _align(ai[0], ai[1], lv)
            phys.append(_pad(p, k, p.dim() - k, rank))
    handle(*phys, **kwargs)
    return _Done(self)


def _unary_map(handle, args, kwargs):
    """Ops indifferent to leading dims (clone, casts, gelu, tril...)."""
    phys, levels, k, nd = _one(args)
    if kwargs.get("out") is not None:
        raise _NoRule
    return handle(phys, *args[1:], **kwargs), levels


def _last2(handle, args, kwargs):
    phys, levels, k, nd = _one(args)
    if nd < 2:
        raise _NoRule
    return handle(phys, *args[1:], **kwargs), levels


def _reduction(handle, args, kwargs):
    phys, levels, k, nd = _one(args)
    kw = dict(kwargs)
    if kw.get("out") is not None:
        raise _NoRule
    dim = kw.get("dim")
    keep = kw.get("keepdim", False)
    reshape_back = None
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0 and
                       handle.op.name in ("sum", "mean", "nansum", "nanmean")):
        # the whole logical tensor: flatten it into one dim after the batch dims
        sizes = tuple(phys.shape[:k])
        phys = phys.reshape(sizes + (-1,)) if nd else phys.reshape(sizes + (1,))
        dim = k if handle.op.name in _INT_DIM else (k,)
        if keep:
            reshape_back = sizes + (1,) * nd
    else:
        dim = _shift(dim, nd, k)
    kw["dim"] = dim
    if "shape" in kw:
        kw["shape"] = tuple(phys.shape)
    res = handle(phys, *args[1:], **kw)
    if reshape_back is not None:
        if isinstance(res, tuple):
            res = tuple(r.reshape(reshape_back) for r in res)
        else:
            res = res.reshape(reshape_back)
    return res, levels


_INT_DIM = {"max.dim", "kthvalue", "median", "mode"}


def _dimwise(handle, args, kwargs):
    phys, levels, k, nd = _one(args)
    kw = dict(kwargs)
    if kw.get("out") is not None or nd == 0:
        raise _NoRule
    for key in ("dim", "dims", "dimension"):
        if key in kw:
            if kw[key] is None:
                raise _NoRule
            kw[key] = _shift(kw[key], nd, k)
    if "dim0" in kw:
        kw["dim0"] = _shift(kw["dim0"], nd, k)
        kw["dim1"] = _shift(kw["dim1"], nd, k)
    if "shape" in kw:
        raise _NoRule
    if "in_shape" in kw:
        kw["in_shape"] = tuple(phys.shape)
    return handle(phys, *args[1:], **kw), levels


def _repeat(handle, args, kwargs):
    phys, levels, k, nd = _one(args)
    reps = tuple(kwargs["repeats"])
    p = _pad(phys, k, nd, len(reps))
    return handle(p, repeats=(1,) * k + reps, in_shape=tuple(p.shape)), levels


def _constant_pad(handle, args, kwargs):
    phys, levels, k, nd = _one(args)
    kw = dict(kwargs)
    pads = tuple(kw["pads"])
    if len(pads) != nd:
        raise _NoRule
    kw["pads"] = ((0, 0),) * k + pads
    return handle(phys, *args[1:], **kw), levels


def _diagonal(handle, args, kwargs):
    phys, levels, k, nd = _one(args)
    kw = dict(kwargs)
    n = nd + 1 if handle.op.name == "diag_embed" else nd
    if n < 2:
        raise _NoRule
    kw["dim1"] = _wrap(kw["dim1"], n) + k
    kw["dim2"] = _wrap(kw["dim2"], n) + k
    if "in_shape" in kw:
        kw["in_shape"] = tuple(phys.shape)
    return handle(phys, *args[1:], **kw), levels


# -- views and shape ops


def _view(handle, args, kwargs):
    phys, levels, k, nd = _one(args)
    shape = tuple(kwargs["shape"])
    return phys.reshape(tuple(phys.shape[:k]) + shape), levels


def _squeeze(handle, args, kwargs):
    phys, levels, k, nd = _one(args)
    # ``dims``: the logical dims to remove, already resolved by ``squeeze`` (size 1 each)
    dims = tuple(d + k for d in kwargs.get("dims", ()))
    if not dims:
        return phys.view(tuple(phys.shape)), levels
    return phys.squeeze(dims), levels


def _unsqueeze(handle, args, kwargs):
    phys, levels, k, nd = _one(args)
    return phys.unsqueeze(_wrap(kwargs["dim"], nd + 1) + k), levels


def _permute(handle, args, kwargs):
    phys, levels, k, nd = _one(args)
    dims = tuple(range(k)) + tuple(_wrap(d, max(nd, 1)) + k for d in kwargs["dims"])
    if nd == 0:
        return phys.view(tuple(phys.shape)), levels
    return phys.permute(dims), levels


def _transpose(handle, args, kwargs):
    phys, levels, k, nd = _one(args)
    if nd == 0:
        return phys.view(tuple(phys.shape)), levels
    return phys.transpose(_wrap(kwargs["dim0"], nd) + k, _wrap(kwargs["dim1"], nd) + k), levels


def _expand(handle, args, kwargs):
    phys, levels, k, nd = _one(args)
    shape = tuple(kwargs["shape"])
    p = _pad(phys, k, nd, len(shape))
    return p.expand(tuple(phys.shape[:k]) + shape), levels


def _narrow(handle, args, kwargs):
    phys, levels, k, nd = _one(args)
    kw = dict(kwargs)
    kw["dim"] = _shift(kw["dim"], nd, k)
    if "in_shape" in kw:
        kw["in_shape"] = tuple(phys.shape)
    return handle(phys, *args[1:], **kw), levels


def _view_scatter(handle, args, kwargs):
    """The gradient of ``narrow``/``select``/``diagonal``: zeros of the input's shape with
    the batch dims in front, the view's dims shifted past them."""
    phys, levels, k, nd = _one(args)
    in_shape = tuple(phys.shape[:k]) + tuple(kwargs["in_shape"])
    n = len(kwargs["in_shape"])
    vparams = dict(kwargs["vparams"], in_shape=in_shape)
    for key in ("dim", "dim1", "dim2"):
        if key in vparams:
            vparams[key] = _wrap(vparams[key], max(n, 1)) + k
    return handle(phys, in_shape=in_shape, view=kwargs["view"], vparams=vparams), levels


def _split(handle, args, kwargs):
    phys, levels, k, nd = _one(args)
    kw = dict(kwargs)
    kw["dim"] = _shift(kw["dim"], nd, k)
    if any(key not in ("dim", "bounds", "in_shape") for key in kw):
        raise _NoRule
    if "in_shape" in kw:
        kw["in_shape"] = tuple(phys.shape)
    return handle(phys, *args[1:], **kw), levels


def _matrix_pair(handle, args, kwargs):
    """Two matrix operands whose leading dims broadcast (``solve_triangular``, the block
    matrix of ``matrix_exp``'s derivative): both at full batch size and the same rank."""
    a, b = args
    if a.dim() < 2 or b.dim() < 2 or kwargs.get("out") is not None:
        raise _NoRule
    infos = [_info(a), _info(b)]
    lv = _union(infos)
    sizes = _sizes(lv, infos)
    k = len(lv)
    rank = max(a.dim(), b.dim())
    pa = _pad(_full(a, lv, sizes), k, a.dim(), rank)
    pb = _pad(_full(b, lv, sizes), k, b.dim(), rank)
    return handle(pa, pb, **kwargs), lv


def _cross(handle, args, kwargs):
    """``linalg.cross``: broadcast like an element-wise op, ``dim`` shifted."""
    a, b = args
    infos = [_info(a), _info(b)]
    lv = _union(infos)
    sizes = _sizes(lv, infos)
    k = len(lv)
    rank = max(a.dim(), b.dim())
    pa = _pad(_full(a, lv, sizes), k, a.dim(), rank)
    pb = _pad(_full(b, lv, sizes), k, b.dim(), rank)
    return handle(pa, pb, dim=_wrap(kwargs["dim"], rank) + k), lv


def _split_backward(handle, args, kwargs):
    """The gradient of ``split``: every piece at full batch size, dims shifted."""
    infos = [_info(a) for a in args]
    lv = _union(infos)
    sizes = _sizes(lv, infos)
    n = len(kwargs["in_shape"])
    kw = dict(kwargs, dim=_wrap(kwargs["dim"], n) + len(lv),
              in_shape=tuple(sizes) + tuple(kwargs["in_shape"]))
    return handle(*[_full(a, lv, sizes) for a in args], **kw), lv


def _cat(handle, args, kwargs):
    infos = [_info(a) for a in args]
    lv = _union(infos)
    sizes = _sizes(lv, infos)
    k = len(lv)
    kw = dict(kwargs)
    if kw.get("out") is not None:
        raise _NoRule
    nd = max(a.dim() for a in args)
    phys = [_full(a, lv, sizes) for a in args if not (a.dim() == 1 and a.shape[0] == 0
                                                    and nd > 1)]
    d = _wrap(kw["dim"], nd + (handle.op.name == "stack"))
    E = _E()
    if handle.op.name == "stack":
        return E.stack(phys, d + k), lv
    return E.cat(phys, d + k), lv


# -- matmul family


def _logical_matmul(a, b):
    """``matmul`` of logical operands on their physical tensors."""
    E = _E()
    ia, ib = _info(a), _info(b)
    lv = _union([ia, ib])
    k = len(lv)
    na, nb = a.dim(), b.dim()
    if na == 0 or nb == 0:
        raise _NoRule
    pa = a if ia is None else _align(ia[0], ia[1], lv)
    pb = b if ib is None else _align(ib[0], ib[1], lv)
    if na == 1:
        pa = pa.unsqueeze(-2)
    if nb == 1:
        pb = pb.unsqueeze(-1)
    ra, rb = max(na, 2), max(nb, 2)
    rank = max(ra, rb)
    if ia is not None:
        pa = _pad(pa, k, ra, rank)
    elif ib is not None and ra < rank:
        pass  # an unbatched operand broadcasts from the right by itself
    if ib is not None:
        pb = _pad(pb, k, rb, rank)
    if ia is None and ib is not None and ra > rb:
        pass
    res = None
    if pa.shape[-1] == 1 and ia is not None and ib is not None:
        # a contraction of size 1 is a batch of outer products: the weight gradient of a
        # per-example linear on a batch of one row (NOTE [ Batched outer products ])
        res = _outer_product(None, (pa, pb), {}, force=True)
    if res is None:
        res = E.matmul(pa, pb)
    if na == 1:
        res = res.squeeze(-2)
    if nb == 1:
        res = res.squeeze(-1)
    return res, lv


def _matmul(handle, args, kwargs):
    if kwargs.get("out") is not None or len(args) != 2:
        raise _NoRule
    return _logical_matmul(args[0], args[1])


def _outer(handle, args, kwargs):
    a, b = args
    ia, ib = _info(a), _info(b)
    lv = _union([ia, ib])
    pa = a if ia is None else _align(ia[0], ia[1], lv)
    pb = b if ib is None else _align(ib[0], ib[1], lv)
    if pa.dim() == pb.dim() == len(lv) + 1 and pa.shape[:-1] == pb.shape[:-1] and \
            pa.shape[-1] * pb.shape[-1] * math.prod(pa.shape[:-1]) >= (1 << 16):
        # both batched over every level: the compiled outer products straight from the rows
        # (no size-1 dims added and removed again on the way)
        arr = outer_rows(pa, pb)
        if arr is not None:
            return wrap(arr), lv
    pa, pb = pa.unsqueeze(-1), pb.unsqueeze(-2)
    res = _outer_product(handle, (pa, pb), {}, force=True)
    return (pa * pb if res is None else res), lv


def _addmm(handle, args, kwargs):
    inp, m1, m2 = args
    beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
    prod, lv = _logical_matmul(m1, m2)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod, lv
    ii = _info(inp)
    if ii is not None:
        lv2 = _union([ii, (None, lv)])
        prod = _align(prod, lv, lv2)
        k = len(lv2)
        pi = _pad(_align(ii[0], ii[1], lv2), k, inp.dim(), prod.dim() - k)
        lv = lv2
    else:
        pi = inp
    return (pi * beta if beta != 1 else pi) + prod, lv


def _linear(handle, args, kwargs):
    x, w, b = args
    ix, iw, ib = _info(x), _info(w), _info(b) if b is not None else None
    if iw is None and ix is not None and x.dim() >= 1:
        lv = ix[1]
        bias = b
        if ib is not None:
            bias = None
        res = handle(ix[0], w, bias)
        if ib is not None:
            k = len(lv)
            lv2 = _union([ix, ib])
            res = _align(res, lv, lv2) + _pad(_align(ib[0], ib[1], lv2), len(lv2), 1,
                                               x.dim())
            lv = lv2
        return res, lv
    if w.dim() != 2:
        raise _NoRule
    if ix is None and iw is not None and x.dim() >= 1:
        # one input, a weight per example (model ensembling): the weights stacked as the
        # rows of one weight, one GEMM, its columns then split per example
        lv = iw[1]
        k = len(lv)
        pw = iw[0]
        lead = x.dim() - 1
        res = handle(x, pw.reshape((-1, w.shape[1])), None)
        res = res.reshape(tuple(x.shape[:-1]) + tuple(pw.shape[:k + 1]))
        res = res.permute(tuple(range(lead, lead + k)) + tuple(range(lead)) + (lead + k,))
    else:
        wt = w.t() if iw is None else make_batched(iw[0].transpose(-1, -2), iw[1])
        res, lv = _logical_matmul(x, wt)
    if b is not None:
        k = len(lv)
        if ib is None:
            res = res + b
        else:
            lv2 = _union([(None, lv), ib])
            res = _align(res, lv, lv2) + _pad(_align(ib[0], ib[1], lv2), len(lv2), 1,
                                               res.dim() - k)
            lv = lv2
    return res, lv


# -- convolution


def _convolution(handle, args, kwargs):
    x, w, b = args
    ix, iw, ib = _info(x), _info(w), _info(b) if b is not None else None
    kw = dict(kwargs)
    if kw.get("out") is not None or kw.get("transposed"):
        raise _NoRule
    spatial = w.dim() - 2
    unbatched = x.dim() == spatial + 1
    if iw is None and ib is None:
        phys, lv = ix
        k = len(lv)
        sizes = tuple(phys.shape[:k])
        p = phys.reshape((-1,) + tuple(phys.shape[k + (0 if unbatched else 1):])) \
            if unbatched else phys.reshape((-1,) + tuple(phys.shape[k + 1:]))
        res = handle(p, w, b, **kw)
        if unbatched:
            return res.reshape(sizes + tuple(res.shape[1:])), lv
        return res.reshape(sizes + (x.shape[0],) + tuple(res.shape[1:])), lv
    # batched weight: the batch folds into the groups
    lv = _union([ix, iw, ib])
    sizes = _sizes(lv, [ix, iw, ib])
    k = len(lv)
    n = math.prod(sizes)
    px = _full(x, lv, sizes)
    if unbatched:
        px = px.unsqueeze(k)
    px = px.reshape((n,) + tuple(px.shape[k:]))           # [n, N, C, ...]
    N, C = px.shape[1], px.shape[2]
    px = px.movedim(0, 1).reshape((N, n * C) + tuple(px.shape[3:]))
    pw = _full(w, lv, sizes).reshape((n,) + tuple(w.shape))
    O = w.shape[0]
    pw = pw.reshape((n * O,) + tuple(w.shape[1:]))
    pb = None
    if b is not None:
        pb = _full(b, lv, sizes).reshape((n * O,))
    kw["groups"] = kw.get("groups", 1) * n
    res = handle(px, pw, pb, **kw)                           # [N, n*O, ...]
    res = res.reshape((N, n, O) + tuple(res.shape[2:])).movedim(1, 0)
    if unbatched:
        res = res.squeeze(1)
    return res.reshape(sizes + tuple(res.shape[1:])), lv


# -- losses


def _ce_rows(x, target, weight, ignore_index, also=None):
    """Physical (inputs [n*N, C, ...], targets [n*N, ...], levels, sizes, N-shape), batched
    over the levels of ``x``, ``target`` and ``also`` (the incoming gradient)."""
    ix, it = _info(x), _info(target)
    infos = [ix, it] if also is None else [ix, it, _info(also)]
    lv = _union(infos)
    sizes = _sizes(lv, infos)
    px = _full(x, lv, sizes)
    pt = _full(target, lv, sizes)
    k = len(lv)
    xs = (-1,) + tuple(px.shape[k + 1:])
    ts = (-1,) + tuple(pt.shape[k + 1:])
    if _plain(px, pt):
        return (wrap(px._data.reshape(xs)), wrap(pt._data.reshape(ts)), pt, lv, sizes)
    return px.reshape(xs), pt.reshape(ts), pt, lv, sizes


def _ce_denominator(pt, weight, ignore_index, k, zero_to_one=True):
    """Per example, the weight of its counted targets: a mean's divisor. An example with
    none gives 0 (its mean is NaN, as torch's) or, for a gradient, 1 (its gradient is 0)."""
    valid = pt != ignore_index
    if weight is None:
        w = valid.to(_E().float32)
    else:
        w = weight[pt.masked_fill(~valid, 0)] * valid
    total = w.reshape(tuple(pt.shape[:k]) + (-1,)).sum(-1)
    return total + (total == 0) if zero_to_one else total


def _ce_denominator_array(pt, weight, ignore_index, k, dtype, zero_to_one=True):
    """``_ce_denominator`` on the arrays (NOTE [ Plain physical steps ]), in ``dtype``."""
    t = pt._data
    valid = t != ignore_index
    if weight is None:
        total = valid.reshape(t.shape[:k] + (-1,)).sum(-1, dtype=np.float32)
    else:
        w = weight._data[np.where(valid, t, 0)] * valid
        total = w.reshape(t.shape[:k] + (-1,)).sum(-1)
    if zero_to_one:
        total = total + (total == 0)
    return total.astype(dtype, copy=False)


def _cross_entropy(handle, args, kwargs):
    x, target, weight = args
    if _info(weight) is not None or x.dim() < 2:
        raise _NoRule
    red, ign = kwargs["reduction"], kwargs["ignore_index"]
    fx, ft, pt, lv, sizes = _ce_rows(x, target, weight, ign)
    k = len(lv)
    loss, probs = handle(fx, ft, weight, reduction="none", ignore_index=ign)
    if _plain(loss, probs, weight) and loss._data.dtype.itemsize >= 4:
        la = loss._data.reshape(sizes + tuple(target.shape))
        if red != "none":
            la = la.reshape(sizes + (-1,)).sum(-1)
            if red == "mean":
                with np.errstate(invalid="ignore", divide="ignore"):
                    la = la / _ce_denominator_array(pt, weight, ign, k, la.dtype, False)
        return (wrap(la), wrap(probs._data.reshape(sizes + tuple(x.shape)))), lv
    loss = loss.reshape(sizes + tuple(target.shape))
    probs = probs.reshape(sizes + tuple(x.shape))
    if red != "none":
        loss = loss.reshape(sizes + (-1,)).sum(-1)
        if red == "mean":
            loss = loss / _ce_denominator(pt, weight, ign, k, False).to(loss.dtype)
    return (loss, probs), lv


def _cross_entropy_backward(handle, args, kwargs):
    g, probs, target, weight = args
    if _info(weight) is not None or probs.dim() < 2:
        raise _NoRule
    red, ign = kwargs["reduction"], kwargs["ignore_index"]
    fx, ft, pt, lv, sizes = _ce_rows(probs, target, weight, ign, also=g)
    k = len(lv)
    ig = _info(g)
    if red != "none" and (ig is None or ig[1] == lv) and g._data.dtype.itemsize >= 4 and \
            _plain(g if ig is None else ig[0], pt, weight):
        # the per-example gradient spread over the example's rows, on the arrays
        ga = np.broadcast_to(g._data if ig is None else ig[0]._data, sizes)
        if red == "mean":
            ga = ga / _ce_denominator_array(pt, weight, ign, k, ga.dtype)
        ga = np.broadcast_to(ga.reshape(sizes + (1,) * target.dim()),
                             sizes + tuple(target.shape)).reshape(-1)
        res = handle(wrap(ga), fx, ft, weight, reduction="none", ignore_index=ign)
        if _plain(res):
            return wrap(res._data.reshape(sizes + tuple(probs.shape))), lv
        return res.reshape(sizes + tuple(probs.shape)), lv
    pg = g if ig is None else _align(ig[0], ig[1], lv)
    if red == "none":
        pg = _full(g, lv, sizes) if ig is None else pg.expand(sizes + tuple(target.shape))
    else:
        if ig is None:
            pg = g.expand(sizes)
        else:
            pg = pg.expand(sizes)
        if red == "mean":
            pg = pg / _ce_denominator(pt, weight, ign, k).to(pg.dtype)
        pg = pg.reshape(sizes + (1,) * target.dim()).expand(sizes + tuple(target.shape))
    fg = pg.reshape(-1)
    res = handle(fg, fx, ft, weight, reduction="none", ignore_index=ign)
    return res.reshape(sizes + tuple(probs.shape)), lv


def _nll_loss(handle, args, kwargs):
    x, target, weight = args
    if _info(weight) is not None or kwargs.get("out") is not None:
        raise _NoRule
    red, ign = kwargs["reduction"], kwargs["ignore_index"]
    ix, it = _info(x), _info(target)
    lv = _union([ix, it])
    sizes = _sizes(lv, [ix, it])
    k = len(lv)
    px, pt = _full(x, lv, sizes), _full(target, lv, sizes)
    if x.dim() == 1:
        px, pt = px.unsqueeze(k), pt.unsqueeze(k)
    fx = px.reshape((-1,) + tuple(px.shape[k + 1:]))
    ft = pt.reshape((-1,) + tuple(pt.shape[k + 1:]))
    loss = handle(fx, ft, weight, reduction="none", ignore_index=ign)
    loss = loss.reshape(tuple(sizes) + tuple(pt.shape[k:]))
    if red == "none":
        return loss.reshape(tuple(sizes) + tuple(target.shape)), lv
    loss = loss.reshape(tuple(sizes) + (-1,)).sum(-1)
    if red == "mean":
        loss = loss / _ce_denominator(pt, weight, ign, k, False).to(loss.dtype)
    return loss, lv


def _gather(handle, args, kwargs):
    x, index = args
    infos = [_info(x), _info(index)]
    lv = _union(infos)
    sizes = _sizes(lv, infos)
    k = len(lv)
    nd = x.dim()
    if nd == 0 or index.dim() != nd or kwargs.get("out") is not None:
        raise _NoRule
    px, pi = _full(x, lv, sizes), _full(index, lv, sizes)
    kw = dict(kwargs, dim=_wrap(kwargs["dim"], nd) + k)
    if "shape" in kw:
        kw["shape"] = tuple(px.shape)
    return handle(px, pi, **kw), lv


def _scatter(handle, args, kwargs):
    x, index, src = args
    infos = [_info(x), _info(index), _info(src) if src is not None else None]
    lv = _union(infos)
    sizes = _sizes(lv, infos)
    k = len(lv)
    nd = x.dim()
    if nd == 0 or index.dim() != nd or kwargs.get("out") is not None or (
            src is not None and src.dim() != nd):
        raise _NoRule
    px, pi = _full(x, lv, sizes), _full(index, lv, sizes)
    ps = None if src is None else _full(src, lv, sizes)
    kw = dict(kwargs, dim=_wrap(kwargs["dim"], nd) + k)
    if kw.get("src_shape") is not None:
        kw["src_shape"] = tuple(ps.shape)
    return handle(px, pi, ps, **kw), lv


def _getitem_backward(handle, args, kwargs):
    """The gradient of ``x[idx]`` (basic indices): scattered behind the batch dims."""
    phys, levels, k, nd = _one(args)
    idx = kwargs["idx"]
    if not isinstance(idx, tuple) or any(isinstance(i, Tensor) or isinstance(i, list)
                                         for i in idx):
        raise _NoRule
    return handle(phys, idx=(slice(None),) * k + idx,
                  shape=tuple(phys.shape[:k]) + tuple(kwargs["shape"])), levels


def _getitem_op(handle, args, kwargs):
    """The ``_getitem`` op called directly (basic indices; the gradient of
    ``_getitem_backward`` calls it): indexes the physical tensor behind the batch dims."""
    phys, levels, k, nd = _one(args)
    idx = kwargs["idx"]
    if not isinstance(idx, tuple) or any(isinstance(i, Tensor) or isinstance(i, list)
                                         for i in idx):
        raise _NoRule
    return handle(phys, idx=(slice(None),) * k + idx, shape=tuple(phys.shape)), levels


def _index_select(handle, args, kwargs):
    x, index = args
    if _info(index) is not None or kwargs.get("out") is not None or x.dim() == 0:
        raise _NoRule
    phys, levels = _info(x)
    k = len(levels)
    kw = dict(kwargs, dim=_wrap(kwargs["dim"], x.dim()) + k)
    if "shape" in kw:
        kw["shape"] = tuple(phys.shape)
    return handle(phys, index, **kw), levels


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _einsum(handle, args, kwargs):
    """``einsum``: every batched operand gets one fresh letter per level in front, and so
    does the output."""
    eq = kwargs["eq"].replace(" ", "")
    if "->" not in eq:
        raise _NoRule
    lhs, rhs = eq.split("->")
    ins = lhs.split(",")
    if len(ins) != len(args):
        raise _NoRule
    infos = [_info(a) for a in args]
    lv = _union(infos)
    sizes = _sizes(lv, infos)
    fresh = [c for c in _LETTERS if c not in eq][:len(lv)]
    if len(fresh) < len(lv):
        raise _NoRule
    pre = "".join(fresh)
    terms, phys = [], []
    for a, spec, inf in zip(args, ins, infos):
        if inf is None:
            terms.append(spec)
            phys.append(a)
        else:
            terms.append(pre + spec)
            phys.append(_full(a, lv, sizes))
    kw = dict(kwargs, eq=",".join(terms) + "->" + pre + rhs)
    return handle(*phys, **kw), lv


def _mse_loss(handle, args, kwargs):
    a, b = args
    red = kwargs.get("reduction", "mean")
    with _logical():
        d = (a - b) ** 2
        if red != "none":
            d = d.sum() if red == "sum" else d.mean()
    return _Done(d)


def _same_shape(handle, args, kwargs):
    """Ops over tensors of one logical shape that may not broadcast (the backward formulas
    ``tanh_backward``, ``glu_backward``...): every tensor at full batch size, a ``dim``
    shifted past the batch dims."""
    infos = [_info(a) for a in args]
    lv = _union(infos)
    sizes = _sizes(lv, infos)
    phys = tuple(_full(a, lv, sizes) if isinstance(a, Tensor) else a for a in args)
    kw = kwargs
    if kwargs.get("dim") is not None:
        kw = dict(kwargs, dim=_shift(kwargs["dim"], args[0].dim(), len(lv)))
    return handle(*phys, **kw), lv


def _pointwise_loss(handle, args, kwargs):
    """Losses that reduce an element-wise loss (binary cross entropy with or without logits,
    Huber, smooth L1, soft margin) and their backward ops ``(grad, input, target, ...)``:
    the element-wise operands at full batch size and their common logical shape, the
    weights broadcasting against them, then one call with ``reduction="none"``; a mean or
    sum is then taken per example (a backward op's per-example gradient is spread over the
    example's elements, divided by its size for a mean)."""
    red = kwargs.get("reduction", "mean")
    if red not in ("none", "mean", "sum") or kwargs.get("out") is not None:
        raise _NoRule
    n_ew = 3 if handle.op.name.endswith("_backward") else 2
    infos = [_info(a) if isinstance(a, Tensor) else None for a in args]
    lv = _union(infos)
    sizes = _sizes(lv, infos)
    k = len(lv)
    shape = tuple(_E().broadcast_shapes(*(tuple(a.shape) for a in args[:n_ew])))
    rank = len(shape)
    phys = []
    for i, (a, inf) in enumerate(zip(args, infos)):
        if not isinstance(a, Tensor):
            phys.append(a)
        elif i < n_ew:
            p = _full(a, lv, sizes)
            if n_ew == 3 and i == 0 and red == "mean":
                p = p / max(math.prod(shape), 1)
            p = _pad(p, k, a.dim(), rank)
            phys.append(p.expand(sizes + shape))
        elif inf is None:
            phys.append(a)  # a weight broadcasts from the trailing dims
        else:
            phys.append(_pad(_align(inf[0], inf[1], lv), k, a.dim(), rank))
    res = handle(*phys, **dict(kwargs, reduction="none"))
    if n_ew == 2 and red != "none":
        flat = res.reshape(sizes + (-1,))
        res = flat.sum(-1) if red == "sum" else flat.mean(-1)
    return res, lv


# -- the engine's ops


def _sum_to(handle, args, kwargs):
    phys, levels, k, nd = _one(args)
    shape = tuple(kwargs["shape"])
    logical = tuple(phys.shape[k:])
    lead = nd - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape)
                                      if n == 1 and logical[i + lead] != 1)
    p = phys.sum(tuple(a + k for a in axes), keepdim=True) if axes else phys
    return p.reshape(tuple(phys.shape[:k]) + shape), levels


def _expand_back(handle, args, kwargs):
    """The backward of a reduction: the reduced gradient broadcast back to ``shape``."""
    phys, levels, k, nd = _one(args)
    shape = tuple(kwargs["shape"])
    dim, keep = kwargs.get("dim"), kwargs.get("keepdim", False)
    n = len(shape)
    if dim is None:
        p = phys.reshape(tuple(phys.shape[:k]) + (1,) * n)
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        p = phys
        if not keep:
            for d in sorted(d % max(n, 1) for d in dims):
                p = p.unsqueeze(k + d)
    return p.expand(tuple(phys.shape[:k]) + shape).contiguous(), levels


def _pool(handle, args, kwargs):
    """Pooling and its backward ops: the batch dims fold into the first logical dim (N, or
    C for an unbatched input), which keeps every operand's layout class."""
    kw = dict(kwargs)
    if kw.get("out") is not None:
        raise _NoRule
    infos = [_info(a) for a in args]
    lv = _union(infos)
    sizes = _sizes(lv, infos)
    n = math.prod(sizes)
    folded = []
    for a in args:
        if not isinstance(a, Tensor):
            folded.append(a)
            continue
        if a.dim() < 2:
            raise _NoRule
        p = _full(a, lv, sizes)
        folded.append(p.reshape((-1,) + tuple(p.shape[len(lv) + 1:])))
    if "input_shape" in kw:
        ishape = tuple(kw["input_shape"])
        kw["input_shape"] = (n * ishape[0],) + ishape[1:]
    res = handle(*folded, **kw)

    def back(r):
        return r.reshape(tuple(sizes) + (-1,) + tuple(r.shape[1:]))

    if isinstance(res, tuple):
        return tuple(back(r) for r in res), lv
    return back(res), lv


# -- convolution's backward ops (NOTE [ vmap batching ]: the batch folds into N or groups)


def _fold_channels(p, k):
    """Physical ``[n..., N, C, *sp]`` (k batch dims) as ``[N, n*C, *sp]``."""
    p = p.reshape((-1,) + tuple(p.shape[k:]))
    n, N, C = p.shape[0], p.shape[1], p.shape[2]
    return p.movedim(0, 1).reshape((N, n * C) + tuple(p.shape[3:]))


def _conv_weight_grad(handle, args, kwargs):
    x, g = args
    kw = dict(kwargs)
    wshape = tuple(kw["weight_shape"])
    if x.dim() != len(wshape) or g.dim() != len(wshape):
        raise _NoRule
    infos = [_info(x), _info(g)]
    lv = _union(infos)
    sizes = _sizes(lv, infos)
    k = len(lv)
    n = math.prod(sizes)
    if len(wshape) == 4 and kw.get("groups", 1) == 1 and x.dim() == 4 and \
            x.dtype in (_E().float32, _E().float64) and g.dtype is x.dtype:
        return _conv2d_weight_grad_columns(x, g, kw, lv, sizes), lv
    px = _fold_channels(_full(x, lv, sizes), k)
    pg = _fold_channels(_full(g, lv, sizes), k)
    kw["weight_shape"] = (n * wshape[0],) + wshape[1:]
    kw["groups"] = kw.get("groups", 1) * n
    res = handle(px, pg, **kw)
    return res.reshape(tuple(sizes) + wshape), lv


def _conv2d_weight_grad_columns(x, g, kw, lv, sizes):
    """Per-example weight gradients of a 2-D convolution (one group) as one batched
    product: the columns of every example's images (``unfold``) against its output
    gradient, ``[n, O, N*L] @ [n, N*L, C*kh*kw]`` -- one call, where folding the examples
    into the groups runs one small GEMM per example."""
    E = _E()
    wshape = tuple(kw["weight_shape"])
    n = math.prod(sizes)
    O, C = wshape[0], wshape[1]
    N = x.shape[0]
    px = _full(x, lv, sizes).reshape((n * N,) + tuple(x.shape[1:]))
    cols = E.nn.functional.unfold(px, wshape[2:], dilation=kw["dilation"],
                                  padding=kw["padding"], stride=kw["stride"])
    L = cols.shape[-1]
    pg = _full(g, lv, sizes).reshape((n, N, O, L))
    cols = cols.reshape((n, N, C * wshape[2] * wshape[3], L))
    if N != 1:
        pg = pg.movedim(1, 2)
        cols = cols.movedim(1, 2)
    gw = E.matmul(pg.reshape((n, O, N * L)), cols.reshape((n, -1, N * L)).transpose(-1, -2))
    return gw.reshape(tuple(sizes) + wshape)


def _conv_input_grad(handle, args, kwargs):
    g, w = args
    kw = dict(kwargs)
    ishape = tuple(kw["input_shape"])
    if g.dim() != w.dim() or len(ishape) != w.dim():
        raise _NoRule
    ig, iw = _info(g), _info(w)
    lv = _union([ig, iw])
    sizes = _sizes(lv, [ig, iw])
    k = len(lv)
    n = math.prod(sizes)
    if iw is None:
        pg = _full(g, lv, sizes)
        pg = pg.reshape((-1,) + tuple(pg.shape[k + 1:]))
        kw["input_shape"] = (n * ishape[0],) + ishape[1:]
        res = handle(pg, w, **kw)
        return res.reshape(tuple(sizes) + ishape), lv
    pg = _fold_channels(_full(g, lv, sizes), k)
    pw = _full(w, lv, sizes)
    pw = pw.reshape((n * w.shape[0],) + tuple(w.shape[1:]))
    kw["input_shape"] = (ishape[0], n * ishape[1]) + ishape[2:]
    kw["groups"] = kw.get("groups", 1) * n
    res = handle(pg, pw, **kw)                                 # [N, n*C, *sp]
    res = res.reshape((ishape[0], n) + ishape[1:]).movedim(1, 0)
    return res.reshape(tuple(sizes) + ishape), lv


def _conv_backward(handle, args, kwargs):
    """Both adjoints at once: the two separate adjoint ops, each batched."""
    from .._ops import nn_conv

    g, x, w = args
    p = dict(kwargs, groups=1)
    gx, lvx = _conv_input_grad(_dispatch._apply_handle(nn_conv.conv_input_grad_op, False),
                               (g, w), dict(p, input_shape=tuple(x.shape)))
    gw, lvw = _conv_weight_grad(_dispatch._apply_handle(nn_conv.conv_weight_grad_op, False),
                                (x, g), dict(p, weight_shape=tuple(w.shape)))
    lv = _union([(None, lvx), (None, lvw)])
    sizes = _sizes(lv, [(gx, lvx), (gw, lvw)])
    return (_full(make_batched(gx, lvx), lv, sizes), _full(make_batched(gw, lvw), lv, sizes)), lv


def _autograd_expand(handle, args, kwargs):
    phys, levels, k, nd = _one(args)
    shape = tuple(kwargs["shape"])
    p = _pad(phys, k, nd, len(shape))
    return p.expand(tuple(phys.shape[:k]) + shape).contiguous(), levels


# -- indexing


def _logical_view(x, out, op, params, idx=0, multi=False):
    """Make batched ``out`` (``op(x, **params)``, a view) a view of ``x`` at the logical
    level, as ``_dispatch._wrap_views`` does outside vmap: same root and version counter,
    and the chain of view ops from the root, so that an in-place write into ``out`` rewrites
    the root's history (``CopySlices``, NOTE [ In-place ops and autograd ])."""
    root = x if x._base is None else x._base
    vc = root._vc
    if vc is None:
        vc = root._vc = [0]
    x._vc = vc
    chain = ()
    if x._base is not None:
        vm = getattr(x, "_view_meta", None)
        chain = None if vm is None or vm[0] is None else vm[0]
    out._base = root
    out._vc = vc
    out._view_meta = [None if chain is None else chain + ((op, params, idx, None),), vc[0],
                      multi]


def _view_of_input(op, args, kwargs, out):
    """Make the batched result of a view op (``transpose``, ``select``, ``unfold``,
    ``diagonal``, ``view``...) a logical view of its input, as ``_getitem`` makes its
    result, so that an in-place write into it rewrites the base's history: without it
    ``vmap(grad(f))`` of an ``f`` writing into ``r.t()[0]`` or ``r.diagonal()`` lost the
    write's derivative. Only where the physical result shares the input's memory (a rule
    may copy) and the op has one tensor input (the replay chain holds no others). The
    outputs of ``split`` / ``unbind`` / ``chunk`` are marked as several views of one call,
    which an in-place write refuses, as outside vmap."""
    if op is None or getattr(op, "view_of", None) is None or len(args) <= op.view_of:
        return
    base = args[op.view_of]
    if not isinstance(base, Tensor) or any(isinstance(a, Tensor) and a is not base
                                           for a in args):
        return
    ib = _info(base)
    if ib is None:
        return
    outs = out if type(out) is tuple else (out,)
    multi = type(out) is tuple and op.multi_output_view
    for i, o in enumerate(outs):
        io = None if o is None else _info(o)
        if io is not None and np.may_share_memory(ib[0]._data, io[0]._data):
            _logical_view(base, o, op, kwargs, i, multi)


def _index_stand_in(t, stand_ins):
    """A 1-dim integer tensor that ``_parse_index`` classifies as an advanced index where
    batched 0-dim ``t`` goes (``stand_ins`` maps it back to ``t``); ``t`` when not integer."""
    if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype is _E().bool:
        return t
    s = _E().zeros(1, dtype=t.dtype, device=t.device)
    stand_ins[id(s)] = t
    return s


def _getitem(handle, args, kwargs):
    """``x[idx]``: basic indices index the physical tensor behind the batch dims; index
    tensors go through the ``_index`` op (itself batched); autograd records the logical
    steps (``_getitem`` is an entrance, not an op)."""
    from .._ops import indexing as _ix

    x, idx = args
    ix = _info(x)
    tp = type(idx)
    if ix is None:
        key = None  # only index tensors are batched: the advanced path below
    elif tp is int or tp is slice:
        key = (idx, Ellipsis)
    elif idx is None or idx is Ellipsis or (tp is tuple and _ix._all_basic(idx)):
        key = idx if tp is not tuple else idx if Ellipsis in idx else idx + (Ellipsis,)
        if tp is not tuple:
            key = (key,)
    else:
        key = None
    if key is not None:
        phys, levels = ix
        k = len(levels)
        try:
            out = make_batched(phys[(slice(None),) * k + key], levels)
        except IndexError:
            raise _NoRule from None
        params = {"idx": key, "shape": tuple(x._data.shape)}
        if x._rg and _dispatch.record is not None and _dispatch.state.grad_enabled:
            _dispatch.record(_ix.getitem_op, (x,), params, out)
        _logical_view(x, out, _ix.getitem_op, params)
        return _Done(out)
    # a batched 0-dim integer index differs per example: an advanced index (of no dims), not
    # the int that an unbatched one is (its logical data holds one example's value only)
    stand_ins = {}
    if isinstance(idx, Tensor) and _info(idx) is not None and idx.dim() == 0:
        idx = _index_stand_in(idx, stand_ins)
    elif tp is tuple:
        idx = tuple(_index_stand_in(i, stand_ins) if isinstance(i, Tensor)
                    and _info(i) is not None and i.dim() == 0 else i for i in idx)
    basic, is_trivial, spec, tensors = _ix._parse_index(x, idx)
    if stand_ins:
        tensors = tuple(stand_ins.get(id(t), t) for t in tensors)
    if any(_info(t) is not None and t.dtype is _E().bool for t in tensors):
        raise _NoRule  # a mask per example: the selected count is the data's
    with _logical():
        t = x if (is_trivial and spec is not None) else x[basic]
        if spec is None:
            return _Done(t)
        return _Done(_dispatch.apply(_ix.index_op, (t,) + tuple(tensors),
                                     {"spec": spec, "shape": tuple(t._data.shape)}))


def _setitem(handle, args, kwargs):
    """``x[idx] = v`` with basic indices: ``copy_`` (or ``fill_``) into the batched view
    ``x[idx]``, which writes into the physical tensor behind the batch dims."""
    from .._ops import indexing as _ix

    self, idx, value = args[0], args[1], args[2]
    tp = type(idx)
    if not (tp is int or tp is slice or idx is None or idx is Ellipsis
            or (tp is tuple and _ix._all_basic(idx))):
        raise _NoRule
    if _info(self) is None or self._rg or (isinstance(value, Tensor) and value._rg):
        raise _NoRule
    with _logical():
        target = self[idx]
        if isinstance(value, Tensor):
            target.copy_(value)
        else:
            target.fill_(value)
    return _Done(self)


# -- creation-like


def _like(handle, args, kwargs):
    phys, levels, k, nd = _one(args)
    if handle.overloadpacket.__name__ == "empty_like":
        lv = _with_different(levels)
        if lv != levels:  # NOTE [ Uninitialised tensors under different randomness ]
            return handle(_full(args[0], lv, _sizes(lv, [(phys, levels)])), *args[1:],
                          **kwargs), lv
    return handle(phys, *args[1:], **kwargs), levels


def _with_different(levels):
    """``levels`` and the active levels asking for different randomness, in order."""
    diff = [lv for lv, _, r in levels_state.stack if r == "different"]
    if not diff or set(diff) <= set(levels):
        return levels
    return tuple(sorted(set(levels) | set(diff)))


#: the keyword options of ``Tensor.new_*`` other than the size
_NEW_OPTIONS = ("dtype", "device", "requires_grad", "layout", "pin_memory")


def _new_factory(handle, args, kwargs):
    """``self.new_zeros(size)``, ``new_ones``, ``new_empty``, ``new_full(size, value)`` on a
    batched ``self``: a tensor of the logical ``size`` batched like ``self``, as PyTorch's
    rule makes it (so a dropout mask made from its input draws per example under
    ``randomness="different"``)."""
    from .._ops.creation import as_shape, size_arg

    phys, levels, k, nd = _one(args[:1])
    name = handle.overloadpacket.__name__
    rest = dict(kwargs)
    opts = {n: rest.pop(n) for n in _NEW_OPTIONS if n in rest}
    lead = tuple(phys.shape[:k])
    if name == "new_empty":  # NOTE [ Uninitialised tensors under different randomness ]
        wider = _with_different(levels)
        if wider != levels:
            lead, levels = tuple(_sizes(wider, [(phys, levels)])), wider
    if name == "new_full":
        pos = list(args[1:])
        size = rest.pop("size") if "size" in rest else pos.pop(0) if pos else None
        value = rest.pop("fill_value") if "fill_value" in rest else pos.pop(0) if pos else None
        if rest or pos or size is None or value is None or isinstance(size, int) or \
                not hasattr(size, "__iter__"):
            raise _NoRule  # the per-example call raises the op's own error
        return handle(phys, lead + tuple(as_shape((size,), name)), value, **opts), levels
    return handle(phys, *(lead + tuple(size_arg(name, args[1:], rest))), **opts), levels


def _copy_(handle, args, kwargs):
    self, src = args[0], args[1]
    return _elementwise_inplace(handle, (self, src), kwargs)


def _copy_op(handle, args, kwargs):
    """``_copy`` (``copy_``'s out-of-place op: ``src`` cast and broadcast to ``dst``)."""
    dst, src = args
    infos = [_info(dst), _info(src)]
    lv = _union(infos)
    sizes = _sizes(lv, infos)
    k = len(lv)
    pd = _full(dst, lv, sizes)
    ps = _pad(_full(src, lv, sizes), k, src.dim(), dst.dim())
    return handle(pd, ps, **kwargs), lv


def _fill_(handle, args, kwargs):
    self = args[0]
    inf = _info(self)
    values = [_info(a) for a in args[1:] if _info(a) is not None]
    if values and (inf is None or not set(values[0][1]) <= set(inf[1])):
        name = handle.overloadpacket.__name__
        raise RuntimeError(
            f"vmap: {name}(self, *extra_args) is not possible because there exists a Tensor "
            "`other` in extra_args that has more elements than `self`. This happened due to "
            "`other` being vmapped over but `self` not being vmapped over in a vmap. Please "
            f"try to use out-of-place operators instead of {name}. If said operator is being "
            "called inside the PyTorch framework, please file a bug report instead.")
    if inf is None:
        raise _NoRule
    if not values:
        handle(inf[0], *args[1:], **kwargs)
        return _Done(self)
    # a value per example (a 0-d tensor): written through the physical self, broadcast from
    # the example's batch dims
    v, lv = args[1], inf[1]
    inf[0].copy_(_pad(_align(values[0][0], values[0][1], lv), len(lv), v.dim(), self.dim()))
    return _Done(self)


def _equal(handle, args, kwargs):
    from ._batch_tensor import _BOOL_ERROR

    raise RuntimeError(_BOOL_ERROR)


def _as_strided(handle, args, kwargs):
    # each example's sizes, strides and offset count from its own start, as in PyTorch's
    # vmap: example i's view starts i batch strides after example 0's
    phys, levels, k, nd = _one(args)
    kw = dict(kwargs)
    kw["size"] = tuple(phys.shape[:k]) + tuple(kw["size"])
    kw["stride"] = tuple(phys.stride()[:k]) + tuple(kw["stride"])
    kw["in_geometry"] = (tuple(phys.shape), tuple(phys.stride()), phys.storage_offset())
    return handle(phys, **kw), levels


# --------------------------------------------------------------------------------------------
# the rule table

_OP_RULES = {
    # reductions
    **{n: _reduction for n in (
        "sum", "nansum", "mean", "nanmean", "prod", "amax", "argmax", "all", "logsumexp",
        "linalg_vector_norm", "var", "max.dim", "count_nonzero")},
    # dim-wise
    **{n: _dimwise for n in (
        "softmax", "log_softmax", "cumsum", "_rcumsum", "cumprod", "logcumsumexp", "cummax",
        "sort",
        "topk", "flip", "select", "unbind", "unfold")},
    "narrow": _narrow, "_view_scatter": _view_scatter,
    "split": _split, "_split_backward": _split_backward,
    "linalg_solve_triangular": _matrix_pair, "_matrix_exp_block": _matrix_pair,
    "linalg_cross": _cross,
    "diagonal": _diagonal, "diag_embed": _diagonal,
    # shape-indifferent
    **{n: _unary_map for n in (
        "clone", "_to_copy", "alias", "real", "imag", "gelu", "view_as_real",
        "view_as_complex", "frexp", "_to_device")},
    "tril": _last2, "triu": _last2,
    # linear algebra on the last two dims (NumPy's linalg maps over leading dims)
    **{n: _last2 for n in (
        "linalg_inv", "linalg_inv_ex", "linalg_det", "linalg_slogdet", "logdet",
        "linalg_cholesky", "linalg_eigh", "linalg_eigvalsh", "linalg_eig", "linalg_eigvals",
        "linalg_svd", "linalg_svdvals", "linalg_qr", "linalg_pinv", "linalg_matrix_exp")},
    "repeat": _repeat, "constant_pad_nd": _constant_pad, "diff": _dimwise, "roll": _dimwise,
    # broadcasting non-ElementwiseOp ops
    "where": _elementwise, "masked_fill": _elementwise, "isclose": _elementwise,
    "complex": _elementwise, "polar": _elementwise,
    # views
    "view": _view, "_reshape_copy": _view, "squeeze": _squeeze, "unsqueeze": _unsqueeze,
    "permute": _permute, "transpose": _transpose, "expand": _expand,
    "as_strided": _as_strided,
    "cat": _cat, "stack": _cat,
    # linear algebra and nn
    "matmul": _matmul, "outer": _outer, "addmm": _addmm, "linear": _linear,
    "convolution": _convolution,
    "cross_entropy_loss": _cross_entropy,
    "cross_entropy_loss_backward": _cross_entropy_backward,
    "mse_loss": _mse_loss,
    "nll_loss": _nll_loss,
    "gather": _gather, "scatter": _scatter, "scatter_add": _scatter,
    "_getitem_backward": _getitem_backward, "_getitem": _getitem_op, "_copy": _copy_op,
    "index_select": _index_select,
    "einsum": _einsum,
    "_autograd_sum_to": _sum_to, "_autograd_expand": _autograd_expand,
    "_expand_back": _expand_back,
    **{n: _pool for n in (
        "max_pool", "avg_pool", "adaptive_avg_pool", "adaptive_max_pool", "max_pool_backward",
        "avg_pool_backward", "adaptive_avg_pool_backward")},
    "convolution_weight_grad": _conv_weight_grad,
    "convolution_input_grad": _conv_input_grad,
    "convolution_backward": _conv_backward,
    "threshold_backward": _elementwise,
    # backward formulas over operands of one shape, glu and its backward
    **{n: _same_shape for n in (
        "tanh_backward", "sigmoid_backward", "silu_backward", "gelu_tanh_backward",
        "gelu_backward", "glu_backward")},
    "glu": _dimwise,
    # losses reducing an element-wise loss, and their backward ops
    **{n: _pointwise_loss for n in (
        "binary_cross_entropy", "binary_cross_entropy_backward",
        "binary_cross_entropy_with_logits", "huber_loss", "smooth_l1_loss",
        "soft_margin_loss", "soft_margin_loss_backward")},
}

_ENTRANCE_RULES = {
    "index": _getitem,
    "zeros_like": _like, "ones_like": _like, "empty_like": _like, "full_like": _like,
    "new_zeros": _new_factory, "new_ones": _new_factory, "new_empty": _new_factory,
    "new_full": _new_factory,
    "copy_": _copy_, "fill_": _fill_, "zero_": _fill_, "setitem_": _setitem,
    "equal": _equal,
}

_RANDOM = frozenset((
    "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
    "normal", "bernoulli", "multinomial", "poisson", "uniform_", "normal_", "bernoulli_",
    "random_", "exponential_", "geometric_", "log_normal_", "cauchy_"))

#: rules that only compute on physical tensors and make no views (no ``_logical()`` steps,
#: no ``_Done``): safe to run without recording (NOTE [ Stand-ins private to a level ])
_QUIET = frozenset((
    _elementwise, _reduction, _matmul, _outer, _addmm, _linear, _convolution, _cross_entropy,
    _cross_entropy_backward, _nll_loss, _pointwise_loss, _same_shape, _pool))

# the nn/selection/attention rules live beside (they use the helpers above) and add
# themselves to ``_OP_RULES`` and ``_QUIET`` when ``_vmap`` imports them


def _quiet(handle, args, kwargs, level):
    """Whether the physical steps of this call need no recording (NOTE [ Stand-ins private
    to a level ]): grad mode on, no other mode on the stack, not in place, and every
    argument requiring grad either batched over a physical tensor that does not, or an
    unbatched stand-in private to ``level``."""
    st = _dispatch.state
    if not st.grad_enabled or st.modes or handle.is_inplace:
        return False
    for a in args:
        if type(a) in (tuple, list):
            for b in a:
                if isinstance(b, Tensor) and b._rg and not _private_to(b, level):
                    return False
        elif isinstance(a, Tensor) and a._rg and not _private_to(a, level):
            return False
    for v in kwargs.values():
        if isinstance(v, Tensor) and v._rg and not _private_to(v, level):
            return False
    return True


def _private_to(t, level):
    inf = _info(t)
    if inf is not None:
        return not inf[0]._rg
    return t.__dict__.get("_vmap_private") == level


def mark_private(t):
    """Tag stand-in ``t``, made by a grad transform inside the innermost vmap level, as
    private to that level (NOTE [ Stand-ins private to a level ]); nothing outside vmap.

    Args:
        t (Tensor): a fresh leaf requiring grad that only the transform differentiates.

    Returns:
        None

    Example::

        >>> import ember
        >>> mark_private(ember.zeros(1))  # outside vmap: nothing to tag
    """
    stack = levels_state.stack
    if stack:
        t.__dict__["_vmap_private"] = stack[-1][0]


_rule_cache: dict = {}


def _rule_for(handle):
    r = _rule_cache.get(handle)
    if r is None:
        op = handle.op
        if getattr(op, "is_builtin", True) is False:
            # a custom op: its rule from ember.library.register_vmap, read at each call
            from ._batch_function import library_rule

            return library_rule
        if isinstance(op, ElementwiseOp):
            r = _elementwise_inplace if handle.is_inplace else _elementwise
        elif op is not None and not handle.is_inplace:
            r = _OP_RULES.get(op.name)
        else:
            r = _ENTRANCE_RULES.get(handle.overloadpacket.__name__)
        if r is None:
            r = _fallback
        _rule_cache[handle] = r
    return r


def rule_names():
    """The op names with a batching rule (element-wise ops counted by class)."""
    from .._ops._registry import ops

    names = {n for n, op in ops.items() if isinstance(op, ElementwiseOp)}
    names.update(n for n in _OP_RULES if n in ops)
    names.update(_ENTRANCE_RULES)
    return sorted(names)


def fallback_names():
    """The registry's ops without a batching rule: under ``vmap`` each runs once per example
    (``_fallback``), with a one-time performance warning.

    Returns:
        list[str]: sorted op names.

    Example::

        >>> "matmul" in fallback_names(), "sum" in fallback_names()
        (False, False)
    """
    from .._ops._registry import ops

    have = set(rule_names())
    return sorted(n for n, op in ops.items() if n not in have and op.is_builtin)


# --------------------------------------------------------------------------------------------
# the fallback: one call per example

_warned: set = set()


def _warn_fallback(handle):
    name = handle.overloadpacket.__name__
    if name in _warned:
        return
    _warned.add(name)
    warnings.warn(
        f"There is a performance drop because we have not yet implemented the batching rule "
        f"for aten::{name}. Please file us an issue on GitHub so that we can prioritize its "
        "implementation.", UserWarning, stacklevel=4)


def _fallback(handle, args, kwargs):
    _warn_fallback(handle)
    flat = list(args)
    nested = {}
    for j, a in enumerate(args):
        if type(a) in (tuple, list) and any(_info(b) is not None for b in a):
            nested[j] = True
    infos = []
    for j, a in enumerate(args):
        if j in nested:
            infos.extend(_info(b) for b in a)
        else:
            infos.append(_info(a))
    kinfos = [_info(v) for v in kwargs.values()]
    lv = _union(infos + kinfos)
    sizes = _sizes(lv, infos + kinfos)
    E = _E()
    inplace = handle.is_inplace

    # an op written in Python (no registry op to record at the logical level) computes
    # on stand-ins that lead the gradient back to its logical inputs
    stand_ins = handle.op is None and not inplace and _logical_grad(args, kwargs)

    def full(a):
        if stand_ins and isinstance(a, Tensor) and a._rg:
            return _grad_stand_in(a, lv, sizes)
        return _full(a, lv, sizes) if _info(a) is not None else None

    phys_args = [[full(b) for b in a] if j in nested else full(a) for j, a in enumerate(flat)]
    phys_kw = {key: full(v) for key, v in kwargs.items()}
    if inplace and (_info(args[0]) is None or _info(args[0])[1] != lv):
        raise RuntimeError(
            f"vmap: {handle.overloadpacket.__name__}(self, *extra_args) is not possible "
            "because self is not batched over every level its other arguments are.")
    empty = 0 in sizes
    results = []
    for ix in ([(0,) * len(sizes)] if empty else _ndindex(sizes)):
        def pick(a, p, ix=ix):
            if p is None:
                return a
            if empty:
                return E.zeros(tuple(p.shape[len(sizes):]), dtype=p.dtype)
            return p[ix]

        call_args = []
        for j, a in enumerate(flat):
            if j in nested:
                call_args.append(type(a)(pick(b, p) for b, p in zip(a, phys_args[j])))
            else:
                call_args.append(pick(a, phys_args[j]))
        call_kw = {key: pick(v, phys_kw[key]) for key, v in kwargs.items()}
        results.append(handle(*call_args, **call_kw))
    if inplace:
        return _Done(args[0])
    first = results[0]
    if isinstance(first, Tensor):
        out = E.stack(results, 0)
        if empty:
            out = out[:0]
        return out.reshape(tuple(sizes) + tuple(first.shape)), lv
    if type(first) is tuple or (isinstance(first, tuple) and all(
            isinstance(r, Tensor) for r in first)):
        outs = []
        for i in range(len(first)):
            if first[i] is None:  # an output not computed (a gradient nobody needs)
                outs.append(None)
                continue
            col = E.stack([r[i] for r in results], 0)
            if empty:
                col = col[:0]
            outs.append(col.reshape(tuple(sizes) + tuple(first[i].shape)))
        if type(first) is not tuple:
            return type(first)(*outs), lv
        return tuple(outs), lv
    if isinstance(first, list) and all(isinstance(r, Tensor) for r in first):
        return [E.stack([r[i] for r in results], 0).reshape(tuple(sizes) + tuple(first[i].shape))
                for i in range(len(first))], lv
    from ._batch_tensor import _BOOL_ERROR

    raise RuntimeError(_BOOL_ERROR)


def _logical_grad(args, kwargs):
    """Whether autograd records this call at the logical level: grad mode on and some
    tensor argument (or one inside a list argument) requiring grad."""
    if _dispatch.record is None or not _dispatch.state.grad_enabled:
        return False
    for a in args:
        if isinstance(a, Tensor):
            if a._rg:
                return True
        elif type(a) in (tuple, list):
            for b in a:
                if isinstance(b, Tensor) and b._rg:
                    return True
    for v in kwargs.values():
        if isinstance(v, Tensor) and v._rg:
            return True
    return False


def _with_levels(g, lv):
    """Physical gradient ``g`` (batch dims of ``lv`` in front, maybe itself batched over
    other levels) as the logical gradient batched over ``lv`` and ``g``'s own levels."""
    inf = _info(g)
    if inf is None:
        return make_batched(g, lv)
    gp, gl = inf
    allv = gl + tuple(lv)
    order = sorted(range(len(allv)), key=allv.__getitem__)
    gp = gp.permute(order + list(range(len(allv), gp.dim())))
    return make_batched(gp, tuple(allv[i] for i in order))


def _grad_stand_in(a, lv, sizes):
    """A plain physical tensor holding logical ``a`` at every level of ``lv`` (full batch
    sizes ``sizes``) whose gradient flows back into ``a``: the per-example fallback of an
    op written in Python computes on its slices, so autograd sees every step (NOTE [ vmap
    and autograd ]); ``a``'s gradient is batched over ``lv`` as a recorded op's would be."""
    inf = _info(a)
    have = () if inf is None else inf[1]
    p = _new_tensor(_full(a, lv, sizes)._data)
    p._vc = [0]
    link(p, level_node("VmapFallbackBackward0", a,
                       lambda g: _sum_ended_levels(_with_levels(g, lv), have)))
    return p


_INPLACE_ERROR = (
    "vmap: inplace arithmetic(self, *extra_args) is not possible because there exists a "
    "Tensor `other` in extra_args that has more elements than `self`. This happened due to "
    "`other` being vmapped over but `self` not being vmapped over in a vmap. Please try to "
    "use out-of-place operators instead of inplace arithmetic. If said operator is being "
    "called inside the PyTorch framework, please file a bug report instead.")


#: in-place ops that change a tensor's shape or strides, not its values
_METADATA_INPLACE = frozenset((
    "t_", "transpose_", "squeeze_", "unsqueeze_", "swapdims_", "swapaxes_", "resize_",
    "resize_as_", "as_strided_", "set_", "detach_", "requires_grad_"))
#: the in-place view ops whose body runs batched (``VmapMode._view_inplace``); as_strided_
#: keeps the per-example fallback, whose result PyTorch's vmap gives as well
_VIEW_INPLACE = frozenset((
    "t_", "transpose_", "squeeze_", "unsqueeze_", "swapdims_", "swapaxes_"))


def _inplace_with_grad(handle, args, kwargs, physical_write):
    """An in-place op on a batched tensor when autograd records at the logical level: the
    op runs out of place (batched, recorded), its values are written into ``self``'s
    physical tensor and its history becomes ``self``'s, as ``commit_inplace_result`` does
    outside vmap. Element-wise ops and ``copy_`` run batched; any other in-place op (a
    ``__setitem__``, ``index_put_``...) runs per example on copies, with autograd recording
    each one. When the physical tensor has a history of its own (an unbatched tensor
    requiring grad took part in computing it, or ``vmap`` runs inside ``grad``), the
    values are written by ``physical_write`` -- the op's own in-place path on the physical
    tensor, which records there too -- so that both graphs see the write. None for ops
    that change only shapes or strides (``t_``...): they keep their own path."""
    self = args[0]
    inf = _info(self)
    infos = [_info(a) for a in args] + [_info(v) for v in kwargs.values()]
    for a in args:
        if type(a) in (tuple, list):
            infos.extend(_info(b) for b in a)
    lv = _union(infos)
    if inf is None or inf[1] != lv:
        raise RuntimeError(_INPLACE_ERROR)
    phys, levels = inf
    name = handle.overloadpacket.__name__
    if name in _METADATA_INPLACE:
        return None
    if _dispatch.check_inplace is not None:
        _dispatch.check_inplace(self, name)
    op = handle.op
    if isinstance(op, ElementwiseOp) or (name == "copy_" and len(args) >= 2 and
                                         isinstance(args[1], Tensor)):
        with _logical():
            # the formulas save a copy of self (recorded: its gradient reaches self), not
            # self, which the write below overwrites
            own = self.clone()
            if _dispatch.carries_tangent is not None and _dispatch.carries_tangent(self):
                # a dual level above this one (``vmap(jvp(grad(f)))``) computed the new
                # tangent already; the formulas read the old one from the copy they save
                from ..autograd._forward import copy_tangents

                copy_tangents(self, own)
            rest = tuple(own if a is self else a for a in args[1:])
            if name == "copy_":
                from .._ops.conversion import copy_op

                r = _dispatch.apply(copy_op, (own, rest[0]), {})
            else:
                from .._ops._elementwise import elementwise

                r = elementwise(op, (own,) + rest, kwargs or None)
    elif name == "fill_" and len(args) == 2 and isinstance(args[1], Tensor):
        # a tensor value (per example or not): the registry's out-of-place fill, batched
        from .._ops.creation import fill_op

        with _logical():
            r = _dispatch.apply(fill_op, (self.clone(), args[1]), {})
    elif op is not None and op.is_builtin and _dispatch.carries_tangent is not None and any(
            isinstance(a, Tensor) and _dispatch.carries_tangent(a) for a in args):
        # a dual level above this one (``vmap(jvp(grad(f)))``): per-example copies carry no
        # tangents, so the op runs out of place at the logical level, batched and recorded
        # there, on a copy of self that keeps self's tangents
        from ..autograd._forward import copy_tangents

        with _logical():
            own = self.clone()
            copy_tangents(self, own)
            rest = tuple(own if a is self else a for a in args[1:])
            r = _dispatch.apply(op, (own,) + rest, dict(kwargs))
    else:
        r = _inplace_per_example(handle, args, kwargs, lv)
    if r.dtype is not self.dtype:
        from .._core import dtype as _dt

        if not _dt.can_cast(r.dtype, self.dtype):
            raise RuntimeError(
                f"{name}: result type {r.dtype.scalar_name} can't be cast to the desired "
                f"output type {self.dtype.scalar_name}")
        with _logical():
            r = r.to(self.dtype)
    if phys._rg:
        physical_write()
    else:
        ri = _info(r)
        pr = r if ri is None else _align(ri[0], ri[1], levels)
        if ri is None:
            pr = pr.expand(tuple(phys.shape[:len(levels)]) + tuple(pr.shape))
        phys._data[...] = pr._data
    self._bump()
    if r._grad_fn is not None and _dispatch.commit_inplace is not None:
        _dispatch.commit_inplace(self, r)
    if _dispatch.commit_tangent is not None:
        _dispatch.commit_tangent(self, r)
    return self


def _write_batched(self, r):
    """``_dispatch.write_batched``: ``commit_inplace_result`` writes ``r`` into ``self``
    when a dual level above this vmap decomposed a Python in-place op (``vmap(jvp(f))``
    with ``y.cumsum_(0)``: NOTE [ Dual levels inside vmap ] in ember/autograd/_forward.py),
    so it sees the logical tensor, whose array is a read-only view of one example. The
    values go into the physical tensor (as ``_inplace_with_grad`` writes them); False when
    ``self`` is not batched."""
    ri = _info(r)
    inf = _info(self)
    if inf is None:
        if ri is not None:
            raise RuntimeError(_INPLACE_ERROR)
        return False
    phys, levels = inf
    if ri is not None and not set(ri[1]) <= set(levels):
        raise RuntimeError(_INPLACE_ERROR)
    pr = r if ri is None else _align(ri[0], ri[1], levels)
    phys._data[...] = pr._data  # (an unbatched result broadcasts over the batch dims)
    return True


_dispatch.write_batched = _write_batched


def _inplace_per_example(handle, args, kwargs, lv):
    """``handle`` (an in-place op) run on a copy of each example of ``self``, every tensor
    requiring grad entering through a stand-in (``_grad_stand_in``): the logical result."""
    _warn_fallback(handle)
    sizes = _sizes(lv, [_info(a) for a in args])
    E = _E()

    def phys_of(a, copy=False):
        if not isinstance(a, Tensor) or (_info(a) is None and not a._rg):
            return None
        if a._rg or copy:
            return _grad_stand_in(a, lv, sizes)
        return _full(a, lv, sizes)

    ps = [phys_of(a, copy=(j == 0)) for j, a in enumerate(args)]
    results = []
    for ix in _ndindex(sizes):
        call = [a if p is None else p[ix] for a, p in zip(args, ps)]
        call[0] = call[0].clone()
        handle(*call, **kwargs)
        results.append(call[0])
    out = E.stack(results, 0).reshape(tuple(sizes) + tuple(args[0].shape))
    return make_batched(out, lv)


def _ndindex(sizes):
    import itertools

    return itertools.product(*(range(n) for n in sizes))


# --------------------------------------------------------------------------------------------
# randomness


def _draw(handle, *args, **kwargs):
    """A random op's call on physical (or unbatched) tensors, for every level at once: the
    other levels' vmap modes are skipped, which would otherwise apply their randomness to it
    a second time (nested levels). Arguments still batched for an outer level (a dual level
    in between: NOTE [ Dual levels inside vmap ]) go through those modes as before."""
    if any(isinstance(a, Tensor) and id(a._data) in _registry for a in args):
        return handle(*args, **kwargs)
    st = _dispatch.state
    prev = st.modes
    st.modes = tuple(m for m in prev if not isinstance(m, VmapMode))
    try:
        return handle(*args, **kwargs)
    finally:
        st.modes = prev


def _random(handle, name, args, kwargs, batched):
    active = levels_state.stack
    if any(r == "error" for _, _, r in active):
        raise RuntimeError(
            "vmap: called random operation while in randomness error mode. Please either use "
            "the 'same' or 'different' randomness flags on vmap or perform the randomness "
            "operation out of vmap")
    diff = tuple(lv for lv, _, r in active if r == "different")
    if name.endswith("_") and handle.is_inplace:
        self = args[0]
        inf = _info(self)
        if not batched or (inf is not None and all(_info(a) is None for a in args[1:])):
            if inf is None:
                if diff:
                    raise RuntimeError(
                        "vmap: Cannot ask for different inplace randomness on an unbatched "
                        "tensor. This will appear like same randomness. If this is necessary "
                        "for your usage, please file an issue with functorch.")
                return handle(*args, **kwargs)
            phys, levels = inf
            k = len(levels)
            if diff and not set(diff) <= set(levels):
                raise RuntimeError(
                    "vmap: Cannot ask for different inplace randomness on an unbatched "
                    "tensor. This will appear like same randomness. If this is necessary "
                    "for your usage, please file an issue with functorch.")
            if set(levels) <= set(diff):
                _draw(handle, phys, *args[1:], **kwargs)
            else:
                # one draw per example of the levels asking for different numbers, copied
                # across the examples of the others (all of them under "same")
                one = phys[tuple(slice(None) if lv in diff else 0 for lv in levels)].clone()
                _draw(handle, one, *args[1:], **kwargs)
                keep = tuple(phys.shape[i] if lv in diff else 1 for i, lv in enumerate(levels))
                phys.copy_(one.reshape(keep + tuple(phys.shape[k:])).expand(phys.shape))
            return self
        raise _NoRule
    if not batched:
        if not diff:
            return handle(*args, **kwargs)
        sizes = _sizes(diff)
        E = _E()
        outs = [_draw(handle, *args, **kwargs) for _ in range(math.prod(sizes))]
        first = outs[0]
        return make_batched(E.stack(outs, 0).reshape(sizes + tuple(first.shape)), diff)
    if name.endswith("_like") and _info(args[0]) is not None:
        phys, levels = _info(args[0])
        k = len(levels)
        one = phys[(0,) * k]
        if diff:
            # one draw per example of the levels that ask for different numbers, the same
            # for every example of the others
            p = one.expand(tuple(_sizes(diff)) + tuple(one.shape))
            return make_batched(_draw(handle, p, *args[1:], **kwargs), diff)
        return _draw(handle, one, *args[1:], **kwargs)
    raise _NoRule


# NOTE [ Uninitialised tensors under different randomness ]
# PyTorch's dropout ops draw a mask per example under ``randomness="different"`` even for an
# input that is not batched (its vmap mode interposes on them). ember's dropout is composed of
# ops -- ``input.new_empty(shape)`` (``empty_like`` for element-wise dropout), then
# ``bernoulli_`` -- and an in-place random op on an unbatched tensor cannot draw per example
# (PyTorch's refusal, kept for such a call in user code). So while a level asks for different
# randomness, ``new_empty``/``empty_like`` of an unbatched tensor make a tensor batched over
# the levels that do: its contents are undefined either way, and the in-place random fill
# then draws per example. Writing into it otherwise works as into any batched tensor (where
# PyTorch would refuse a batched value written into its unbatched result).

_UNINITIALISED = frozenset(("new_empty", "empty_like"))


def _uninitialised(handle, args, kwargs):
    """``new_empty``/``empty_like`` of unbatched tensors under vmap (NOTE [ Uninitialised
    tensors under different randomness ])."""
    out = handle(*args, **kwargs)
    diff = tuple(lv for lv, _, r in levels_state.stack if r == "different")
    if not diff or not isinstance(out, Tensor) or id(out._data) in _registry:
        return out  # (batched already: by an outer level's mode, for every level at once)
    sizes = _sizes(diff)
    phys = out.new_empty(tuple(sizes) + tuple(out.shape))
    if out.requires_grad:
        phys.requires_grad_(True)
    return make_batched(phys, diff)


# --------------------------------------------------------------------------------------------
# the mode


def _is_batched_arg(a):
    if isinstance(a, Tensor):
        return id(a._data) in _registry and _info(a) is not None
    if type(a) in (tuple, list):
        for b in a:
            if isinstance(b, Tensor) and _info(b) is not None:
                return True
    return False


def _record(handle, args, kwargs, outputs, lv):
    """Record the op at the logical level (NOTE [ vmap and autograd ])."""
    op = handle.op
    if _dispatch.record is None or op is None or handle.is_inplace:
        return
    if isinstance(op, ElementwiseOp):
        tensors = [a for a in args if isinstance(a, Tensor)]
        if _dispatch.needs_grad(tensors):
            _dispatch.record(op, _proxies(_tensor_args(args), lv), kwargs or {}, outputs)
        return
    if not all(a is None or isinstance(a, Tensor) for a in args):
        return
    if _dispatch.needs_grad(args):
        _dispatch.record(op, _proxies(args, lv), kwargs, outputs)


def _proxies(inputs, lv):
    """``inputs`` where each one requiring grad but batched over fewer levels than ``lv``
    is replaced by an alias whose node sums its gradient over the levels that have ended
    by the time backward runs (an inner vmap's level, differentiated from outside it)."""
    out = None
    for i, t in enumerate(inputs):
        if t is None or not t._rg:
            continue
        inf = _info(t)
        have = () if inf is None else inf[1]
        if have == lv:
            continue
        if out is None:
            out = list(inputs)
        p = _new_tensor(t._data)
        vc = t._vc
        if vc is None:
            vc = t._vc = [0]
        p._vc = vc
        link(p, level_node("VmapUnbatchedInputBackward0", t,
                           lambda g, have=have: _sum_ended_levels(g, have)))
        out[i] = p
    return tuple(inputs) if out is None else tuple(out)


def _new_tensor(array):
    from .._core.tensor import wrap

    return wrap(array)


def _sum_ended_levels(g, have):
    """``g`` summed over its levels that are neither in ``have`` nor active any more."""
    inf = _info(g)
    if inf is None:
        return g
    gp, gl = inf
    active = {lv for lv, _, _ in levels_state.stack}
    dead = tuple(i for i, lv in enumerate(gl) if lv not in have and lv not in active)
    if not dead:
        return g
    rest = tuple(lv for i, lv in enumerate(gl) if i not in dead)
    return make_batched(gp.sum(dead), rest)


class VmapMode(_dispatch.Mode):
    """The mode ``vmap`` pushes: batches every op call on batched tensors (NOTE [ vmap
    batching ])."""

    level = 20
    #: a transform: backward's implicit seed stays the engine's own ones (``_make_grad``)
    _ember_transforms = True
    #: this level's id, and the levels it leaves batched (NOTE [ Dual levels inside vmap ])
    level_id = None
    outer = _NO_LEVELS

    def _view_inplace(self, handle, args, kwargs):
        """``y.t_()`` on a batched ``y``: the entrance's body runs with this level on the
        stack again, so the view op inside it is batched and ``y`` becomes its logical result
        (shape, history), as outside vmap."""
        fn = getattr(handle._run, "__wrapped__", None)
        if fn is None:
            return _fallback(handle, args, kwargs)
        saved = _dispatch.state.modes
        _dispatch.push_mode(self)
        try:
            return fn(*args, **kwargs)
        finally:
            _dispatch.pop_mode(self)
            _dispatch.state.modes = saved

    def dispatch(self, handle, args, kwargs):
        outer = self.outer
        if outer is not _tls.outer:
            prev = _tls.outer
            _tls.outer = outer
            try:
                return self.dispatch(handle, args, kwargs)
            finally:
                _tls.outer = prev
        batched = False
        for a in args:
            if _is_batched_arg(a):
                batched = True
                break
        if not batched and kwargs:
            for v in kwargs.values():
                if isinstance(v, Tensor) and _info(v) is not None:
                    batched = True
                    break
        name = handle.overloadpacket.__name__
        if name in _RANDOM:
            try:
                return _random(handle, name, args, kwargs, batched)
            except _NoRule:
                pass
        if not batched:
            if name in _UNINITIALISED:
                return _uninitialised(handle, args, kwargs)
            return handle(*args, **kwargs)
        if handle.is_inplace and name in _VIEW_INPLACE:
            return self._view_inplace(handle, args, kwargs)
        rule = _rule_for(handle)
        prev = _tls.mode
        _tls.mode = self
        try:
            if handle.is_inplace and _logical_grad(args, kwargs):
                def physical_write():
                    try:
                        rule(handle, args, kwargs)
                    except _NoRule:
                        _fallback(handle, args, kwargs)

                done = _inplace_with_grad(handle, args, kwargs, physical_write)
                if done is not None:
                    return done
            if rule in _QUIET and _quiet(handle, args, kwargs, self.level_id):
                # NOTE [ Stand-ins private to a level ]: only the logical record is needed
                st = _dispatch.state
                st.grad_enabled = False
                try:
                    res = rule(handle, args, kwargs)
                finally:
                    st.grad_enabled = True
            else:
                res = rule(handle, args, kwargs)
        except _NoRule:
            res = _fallback(handle, args, kwargs)
        finally:
            _tls.mode = prev
        if type(res) is _Done:
            return res.value
        phys, levels = res
        if isinstance(phys, Tensor):
            out = make_batched(phys, levels)
        elif type(phys) is tuple:
            out = tuple(None if p is None else make_batched(p, levels) for p in phys)
        elif isinstance(phys, tuple):  # a named tuple (sort, max.dim...)
            out = type(phys)(*(make_batched(p, levels) for p in phys))
        else:
            out = [make_batched(p, levels) for p in phys]
        if type(out) is tuple or isinstance(out, Tensor):
            _record(handle, args, kwargs, out, levels)
        if (type(out) is tuple or isinstance(out, Tensor)) and not handle.is_inplace:
            _view_of_input(handle.op, args, kwargs, out)
        return out
