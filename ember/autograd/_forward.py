"""Forward-mode AD: a dual level is a mode on the dispatcher's stack (level 30).

NOTE [ Forward-mode AD as a mode ]
Entering a dual level pushes a ``DualLevel`` mode (NOTE [ Dispatch ] in ember/_dispatch.py);
with no level entered nothing is pushed and the hot path is untouched. Tangents live on the
tensor, in its ``_tangent`` slot: a dict ``{DualLevel: tangent or None}`` (None says "no
tangent here, do not derive one from the base"). Tangents are ordinary tensors, so the
formulas computing them are recorded by reverse mode (forward-over-reverse: the jvp of a
gradient is a Hessian-vector product) and seen by enclosing dual levels (jvp of jvp).

The mode sees every op call ``(handle, args, kwargs)``. When no tensor argument carries a
tangent of this level it just runs ``handle``. Otherwise:

- a declared op (``handle.op``, reached through ``apply`` or the element-wise entrances):
  ``handle`` runs on the primals (this level popped, so enclosing levels see it) and the
  output tangents come from the op's rule, in this order of preference:
  ``op.linear`` or ``op.view_of`` (the op applied to the tangents, zeros where an input has
  none: a view's tangent is the same view of its base's tangent), ``op.jvp`` (a formula,
  NOTE [ Derivative formulas ] in ember/_ops/_registry.py), for element-wise ops the vjp
  evaluated at the tangent (NOTE [ Forward mode of element-wise ops ]), else the transpose
  of ``op.vjp`` (NOTE [ Forward mode from the vjp ]). A non-differentiable op gives zero
  tangents to its floating outputs, as PyTorch does (``floor``).
- an in-place form of a declared op: the out-of-place op gives the new tangent (its primal
  is computed once more, since the in-place write destroys the input the formula needs),
  then the in-place op runs and the tangent is written into the existing tangent in place,
  so views of the tensor see it (NOTE [ Tangents of views ]). For forward-over-reverse, the
  values autograd saved for the op's backward carry tangents too: the copy of the
  overwritten input gets a copy of its tangents (``copy_tangents``), and a saved result
  reads the written tensor's (``_retarget_saved_output``). Backward formulas with a fused
  kernel take their differentiable form when a saved value carries a tangent
  (``_dispatch.differentiable_formula``), with or without ``create_graph``, as in PyTorch.
- an entrance written in Python (``@entrance``: in-place protocol, composites) is
  decomposed: its wrapped function runs with this level pushed again, so the declared ops
  inside it are seen one by one; ``commit_inplace_result`` reports in-place commits through
  ``_dispatch.commit_tangent``.
- ``t[idx]``, ``copy_`` and ``t[idx] = v`` are linear and get their rule here.

NOTE [ Tangents of views ]
A view's tangent is the same view of its base's tangent: view ops are linear, so applying
them to the tangent gives exactly that view. A view made before its base had a tangent gets
one on first use, by replaying its view chain (``_view_meta``) on the base's tangent. An
in-place write on a view whose base has no tangent first gives the base a zero tangent.

NOTE [ Dual levels inside vmap ]
Transforms apply innermost first, so the mode stack must order vmap levels and dual levels
by nesting, not by kind. A dual level entered while a vmap is on the stack takes level 20,
vmap's: among equal levels the later push is consulted first, so it sees each call before
the vmaps around it and after those inside it. Such a level sees *logical* tensors (one
example of each enclosing vmap) whose tangents may be batched (``vmap(jvp)``: ``jacfwd``,
NOTE [ jacfwd by vmap ] in ember/func/_eager_transforms.py); the primal call and the tangent
formulas it runs go on down to those vmaps, which batch them. A level entered outside every
vmap keeps level 30, below all of them (``jvp(vmap(f))``): it sees the physical tensors, and
tangents live there.

A vmap entered inside such a dual level must not fold the vmap levels outside the dual level
into its physical tensors (ember's batched tensors keep every level in one physical tensor,
NOTE [ Batched tensors ] in ember/func/_batch_tensor.py): the dual level would then see
tensors that lost the tangents it gave their logical forms. So each vmap level records the
levels outside the newest dual level below it (``VmapMode.outer``); its rules see those levels
as part of an unbatched logical tensor, passed down as it is, and its physical tensors are
themselves batched tensors of those levels (nested, as PyTorch's are). ``vmap(hessian(f))``
is V0 (the user's vmap), V1 (jacfwd's basis), D (its dual level), V2 (jacrev's basis): V2
leaves V0 and V1 to D.

Writing a batched tangent into an unbatched one (``y = zeros(3); y[0] = x[1]`` under
``jacfwd``) first replaces the tangent of ``y``'s root by a batched copy (``_widen``).

NOTE [ Forward mode from the vjp ]
For an op without a jvp formula, the output tangent is derived exactly from the vjp: the
vjp ``u -> J^T u`` is linear in the cotangent ``u``, and the vjp of that map with cotangent
``x_dot`` is ``J x_dot``. So the vjp formula runs once on a zero cotangent requiring grad and
one backward pass through it gives the tangent (two reverse passes where a formula would be
one forward expression: correct, slower). For complex inputs this is exact for holomorphic
ops. The ops that use it are listed by ``fallback_ops()``.

NOTE [ Which rule each op uses ]
Of the 266 differentiable ops at the time of writing (``fallback_ops()`` gives the last
group live):

- 71 linear or view ops (``linear=True`` or ``view_of``): the op applied to the tangents:
  _as_strided_gather, _as_strided_scatter, _autograd_expand, _autograd_sum_to, _copy,
  _crop_flat, _diff_t, _expand_back, _fft_c2c, _fft_c2r, _fft_r2c, _fft_resize, _fft_roll,
  _getitem, _getitem_backward, _linalg_cat_last, _matrix_exp_block, _meshgrid_view,
  _pad_flat, _rcumsum, _rearrange, _repeat_backward, _repeat_interleave_backward,
  _reshape_copy, _split_backward, _to_copy, _to_device, _unfold_backward, _view_scatter,
  add, alias, as_strided, as_strided_scatter, cat, clone, cumsum, deg2rad, diag_embed,
  diagonal, diagonal_scatter, diff, expand, flip, imag, mean, narrow, neg, permute, rad2deg,
  real, repeat, repeat_interleave, roll, select, select_scatter, slice_scatter, split,
  squeeze, stack, sub, sum, transpose, tril, triu, unbind, unfold, unsafe_split, unsqueeze,
  view, view_as_complex, view_as_real.
- 96 with a ``jvp`` formula written from the math, beside their vjp (gathers, scatters and
  other ops linear in their data apply themselves to the tangents; ``lstm_layer``'s formula
  runs its steps' formulas in a dual level of its own; ``linalg_qr``'s and ``linalg_svd``'s
  cover real inputs in the reduced and square cases and take the transpose of the vjp
  otherwise):
  _combinations_backward, _index, _overwrite, _put_along, _take_along, _where_zero,
  adaptive_avg_pool, adaptive_avg_pool_backward, adaptive_max_pool, addbmm, addmm, addr,
  amax, avg_pool, avg_pool_backward, block_diag, cartesian_prod, cdist, col2im,
  combinations, complex, constant_pad_nd, convolution, convolution_input_grad,
  convolution_weight_grad, cross_entropy_loss, cumprod, einsum, embedding,
  embedding_backward, fill, fill_diagonal, frexp, gather, gelu, im2col, index_add,
  index_copy, index_fill, index_put, index_select, kron, linalg_cholesky, linalg_cross,
  linalg_det, linalg_eigh, linalg_eigvalsh, linalg_inv, linalg_inv_ex, linalg_matrix_exp,
  linalg_qr, linalg_slogdet, linalg_solve, linalg_solve_triangular, linalg_svd,
  linalg_svdvals, linalg_vector_norm, linear, log_softmax, logcumsumexp, logdet, logsumexp,
  lstm_cell, lstm_layer, lu_unpack, masked_fill, masked_scatter, masked_select, matmul,
  max_pool, max_pool_backward, max_pool_gather, mse_loss, nanmean, nansum,
  native_batch_norm, native_layer_norm, nll_loss, outer, pad, polar, prod, put,
  scaled_dot_product_attention, scatter, scatter_add, softmax, take, take_along_dim,
  tensordot, threshold_backward, trace, vander, var, vdot, where.
- 86 element-wise ops by the diagonal rule (NOTE [ Forward mode of element-wise ops ]; the
  transpose for complex dtypes):
  abs, acos, acosh, addcdiv, addcmul, angle, asin, asinh, atan, atan2, atanh, ceil, clamp,
  clamp_max, clamp_min, conj_physical, copysign, cos, cosh, digamma, div, div_trunc, erf,
  erfc, erfinv, exp, exp2, expm1, float_power, floor, floor_divide, fmax, fmin, fmod, frac,
  gelu_tanh, hypot, i0, igamma, igammac, lerp, lerp_scalar, lgamma, log, log10, log1p, log2,
  logaddexp, logaddexp2, logit, maximum, minimum, mul, mvlgamma, nan_to_num, nextafter,
  polygamma, pow, reciprocal, relu, remainder, round, round_decimals, rsqrt, sgn, sigmoid,
  sign, silu, sin, sinc, sinh, special_entr, special_erfcx, special_i0e, special_i1,
  special_i1e, special_log_ndtr, special_ndtr, special_ndtri, special_xlog1py, sqrt, square,
  tan, tanh, trunc, xlogy.
- 13 more with formulas written since: cholesky_inverse, cholesky_solve, ctc_loss (the
  kernel's gradient contracted with the tangent), linalg_eig, linalg_eigvals, linalg_lu,
  linalg_lu_factor, linalg_lu_solve, linalg_pinv, scatter_reduce (in ember ops only, so that
  vmap batches it); geqrf, linalg_ldl_factor_ex and linalg_ldl_solve raise torch's
  NotImplementedError, as they have no derivative in torch either.
- none by the transpose of the vjp (NOTE [ Forward mode from the vjp ]): it stays for ops
  declared later (custom ops with a vjp only); tests/func/test_jvp_rules.py keeps the list
  empty.
"""

from __future__ import annotations

import threading
import weakref

from .. import _dispatch
from .._core.tensor import Tensor, wrap

_state = _dispatch.state
_new = object.__new__


class _Levels(threading.local):
    #: the dual levels entered on this thread, outermost first
    stack = ()


levels = _Levels()


class DualLevel(_dispatch.Mode):
    """One dual level: a mode at level 30 holding no state but its identity (tangents are
    keyed by it) and the tensors it gave tangents to (cleared on exit)."""

    level = 30
    #: a transform: backward's implicit seed stays the engine's own ones (``_make_grad``)
    _ember_transforms = True

    def __init__(self, index):
        self.index = index
        self.tracked = []
        self.prune_at = 4096
        self.busy = set()

    def __repr__(self):
        return f"<dual level {self.index}>"

    def dispatch(self, handle, args, kwargs):
        if not _any_tangent(args, kwargs, self):
            return handle(*args, **kwargs)
        if handle is _special.get("getitem"):
            return self._getitem(handle, args, kwargs)
        if handle is _special.get("copy_"):
            return self._copy(handle, args, kwargs)
        if handle is _special.get("setitem_"):
            return self._setitem(handle, args, kwargs)
        op = handle.op
        if op is not None and not op.is_builtin:
            # a custom op (ember.library): PyTorch gives its outputs no tangent either
            return handle(*args, **kwargs)
        if op is not None:
            if handle.is_inplace:
                return self._inplace(handle, op, args, kwargs)
            return self._op_call(handle, op, args, kwargs)
        return self._decompose(handle, args, kwargs)

    # -- declared ops -----------------------------------------------------------------------

    def _op_call(self, handle, op, args, kwargs):
        out = kwargs.get("out")
        if out is not None:
            kwargs = dict(kwargs)
            del kwargs["out"]
        res = handle(*args, **kwargs)
        tangents = op_tangents(self, handle, op, args, kwargs, res)
        if out is not None:
            _dispatch.write_out(op.name, out, res)
            outs = out if isinstance(out, (tuple, list)) else (out,)
            for o, t in zip(outs, tangents):
                commit(self, o, t)
            return out
        outs = res if type(res) is tuple else (res,)
        for o, t in zip(outs, tangents):
            if t is not None:
                set_tangent(o, self, t)
        return res

    def _inplace(self, handle, op, args, kwargs):
        from .._ops._elementwise import ElementwiseOp

        if isinstance(op, ElementwiseOp):
            functional = op.handle(False, len(args))
        else:
            functional = _dispatch._apply_handle(op, False)
        fargs = args
        if _state.grad_enabled and _records(self, args):
            # NOTE [ Tangent formulas of in-place ops under reverse mode ]
            # The formula for the new tangent reads the written tensor's old value and its
            # old tangent (``y.mul_(x)``: ``ty * x + y * tx``); when reverse mode records the
            # formula (reverse over forward: ``jacrev(jacfwd(f))``, ``grad`` of a ``jvp``),
            # its nodes save both, and the write below (and ``commit``'s write into the
            # tangent) would leave them at a newer version, so backward refused them. The
            # formula reads a copy of each instead, as PyTorch's formulas read the input's
            # value from before the write; the copy is a differentiable clone, so gradients
            # still reach the old value's history.
            c = _clone_batched(args[0])
            copy_tangents(args[0], c)
            fargs = (c,) + tuple(args[1:])
        res = functional(*fargs, **kwargs)
        new = op_tangents(self, functional, op, fargs, kwargs, res)[0]
        r = handle(*args, **kwargs)
        commit(self, args[0], new)
        return r

    # -- entrances written in Python ------------------------------------------------------------

    def _decompose(self, handle, args, kwargs):
        fn = getattr(handle._run, "__wrapped__", None)
        if fn is None:
            if handle in self.busy:
                return handle(*args, **kwargs)
            fn = handle._run
        self.busy.add(handle)
        saved = _state.modes
        _dispatch.push_mode(self)
        committed = self.committed = []
        raw_batched = False
        try:
            r = fn(*args, **kwargs)
        except ValueError:
            # a raw write into a batched tensor (``vmap(jvp(f))`` with ``y.fill_(1)``) meets
            # its logical array, a read-only view of one example (NOTE [ Batched tensors ]):
            # the vmap level below runs the op, as it does without this level
            if not (handle.is_inplace and not committed and _batched(args[0])):
                raise
            raw_batched = True
        finally:
            _dispatch.pop_mode(self)
            _state.modes = saved
            self.busy.discard(handle)
        if raw_batched:
            r = handle(*args, **kwargs)
        if handle.is_inplace and args and isinstance(args[0], Tensor) and \
                not any(c is args[0] for c in committed):
            # a raw write (fill_, zero_, a random refill): values that carry no tangent
            commit(self, args[0], None)
        return r

    # -- linear entrances -------------------------------------------------------------------

    def _getitem(self, handle, args, kwargs):
        self_, idx = args
        res = handle(self_, idx)
        t = get_tangent(self_, self)
        if t is not None and _is_float(res):
            set_tangent(res, self, handle(t, idx))
        return res

    def _copy(self, handle, args, kwargs):
        self_, src = args[0], args[1]
        r = handle(*args, **kwargs)
        st = get_tangent(src, self) if isinstance(src, Tensor) else None
        commit(self, self_, None if st is None else _fit(st, self_))
        return r

    def _setitem(self, handle, args, kwargs):
        self_, idx, value = args[0], args[1], args[2]
        had = get_tangent(self_, self)
        r = handle(*args, **kwargs)
        vt = get_tangent(value, self) if isinstance(value, Tensor) else None
        if vt is None and had is None:
            return r
        if had is None:
            had = _zero_tangent_for(self_, self)
        if had is not None:
            if vt is not None and _wider(vt, had):
                had = _widen(self, self_, vt)
            had[idx] = 0 if vt is None else vt
        return r


_special: dict = {}


def _records(lvl, args):
    """Whether reverse mode records a formula over ``args`` and their tangents of ``lvl``:
    one of them requires grad."""
    for a in args:
        if isinstance(a, Tensor):
            if a._rg:
                return True
            t = get_tangent(a, lvl)
            if t is not None and t._rg:
                return True
    return False


def _is_float(t):
    return isinstance(t, Tensor) and t._data.dtype.kind in "fc"


def _tangent_dict(t):
    try:
        return t._tangent
    except AttributeError:
        return None


def has_tangent(t, lvl):
    d = _tangent_dict(t)
    if d is not None and lvl in d:
        return d[lvl] is not None
    b = t._base
    if b is not None:
        d = _tangent_dict(b)
        return d is not None and d.get(lvl) is not None
    return False


def carries_tangent(t):
    """Whether ``t`` has a tangent of some dual level of this thread."""
    for lvl in levels.stack:
        if has_tangent(t, lvl):
            return True
    return False


def _any_tangent(args, kwargs, lvl):
    for a in args:
        if isinstance(a, Tensor):
            if has_tangent(a, lvl):
                return True
        elif type(a) in (list, tuple):
            for x in a:
                if isinstance(x, Tensor) and has_tangent(x, lvl):
                    return True
    if kwargs:
        for a in kwargs.values():
            if isinstance(a, Tensor) and has_tangent(a, lvl):
                return True
    return False


def get_tangent(t, lvl):
    """The tangent of ``t`` at ``lvl``, or None (NOTE [ Tangents of views ])."""
    d = _tangent_dict(t)
    if d is not None and lvl in d:
        return d[lvl]
    b = t._base
    if b is None:
        return None
    bt = _tangent_dict(b)
    bt = None if bt is None else bt.get(lvl)
    if bt is None:
        return None
    tan = _replay_view(t, bt)
    if tan is not None:
        set_tangent(t, lvl, tan)
    return tan


def set_tangent(t, lvl, tangent):
    d = _tangent_dict(t)
    if d is None:
        t._tangent = {lvl: tangent}
    else:
        d[lvl] = tangent
    tracked = lvl.tracked
    tracked.append(weakref.ref(t))
    if len(tracked) >= lvl.prune_at:  # a long-lived level: drop the dead references
        tracked[:] = [r for r in tracked if r() is not None]
        lvl.prune_at = max(4096, 2 * len(tracked))


def _replay_view(view, base_tangent):
    """The view of ``base_tangent`` that ``view`` is of its base (NOTE [ Tangents of
    views ]), run with the modes as they are."""
    vm = getattr(view, "_view_meta", None)
    chain = None if vm is None else vm[0]
    if chain is not None:
        x = base_tangent
        for op, params, i, others in chain:
            inputs = [x] if others is None else list(others)
            inputs[op.view_of] = x
            r = _dispatch.apply(op, tuple(inputs), dict(params))
            x = r[i] if type(r) is tuple else r
        return x
    base = view._base
    bd, td = base._data, base_tangent._data
    if bd.strides != td.strides or bd.shape != td.shape:
        return None
    vd = view._data
    item = vd.itemsize
    offset = (vd.__array_interface__["data"][0] - bd.__array_interface__["data"][0]) // item \
        if type(vd) is type(bd) and hasattr(vd, "__array_interface__") else None
    if offset is None:
        return None
    shape, strides = tuple(vd.shape), tuple(s // item for s in vd.strides)
    if not _batch_info:
        _wider(base_tangent, base_tangent)  # binds _batch_info
    inf = _batch_info[0](base_tangent)
    if inf is not None:
        # a batched tangent: the same view of every example, taken on its physical tensor
        from ..func._batch_tensor import make_batched

        phys, lv = inf
        k = len(lv)
        pv = phys.as_strided(tuple(phys.shape[:k]) + shape, tuple(phys.stride()[:k]) + strides,
                             phys.storage_offset() + offset)
        return make_batched(pv, lv)
    return base_tangent.as_strided(shape, strides, base_tangent.storage_offset() + offset)


def _zero_tangent_for(t, lvl):
    """Give ``t`` (and its root base, for a view) a zero tangent; return ``t``'s."""
    from .. import zeros_like

    b = t._base
    if b is None:
        z = zeros_like(t)
        set_tangent(t, lvl, z)
        return z
    if _tangent_dict(b) is None or _tangent_dict(b).get(lvl) is None:
        set_tangent(b, lvl, zeros_like(b, memory_format=_preserve()))
    d = _tangent_dict(t)
    if d is not None and lvl in d:
        del d[lvl]
    return get_tangent(t, lvl)


def _preserve():
    from .. import preserve_format

    return preserve_format


def commit(lvl, t, new):
    """``t`` was overwritten in place; its tangent becomes ``new`` (None: zero), written
    into the tangent it has so that its views see it (NOTE [ Tangents of views ])."""
    if not _is_float(t):
        return
    cur = get_tangent(t, lvl)
    if cur is None:
        if new is None:
            return
        if t._base is not None:
            cur = _zero_tangent_for(t, lvl)
        if cur is None:
            if new._base is not None or new._data.shape != t._data.shape:
                new = _fit(new, t).clone()
            set_tangent(t, lvl, new)
            return
    if new is None:
        cur.zero_()
        return
    if _wider(new, cur):
        cur = _widen(lvl, t, new)
    cur.copy_(new)


def _wider(new, cur):
    """Whether tangent ``new`` is batched over vmap levels that tangent ``cur`` is not (a
    batched tangent written into an unbatched one: NOTE [ Dual levels inside vmap ])."""
    if not _batch_info:
        from ..func._batch_tensor import batch_info

        _batch_info.append(batch_info)
    ni = _batch_info[0](new)
    if ni is None:
        return False
    ci = _batch_info[0](cur)
    return ci is None or not set(ni[1]) <= set(ci[1])


_batch_info: list = []


def _widen(lvl, t, like):
    """Replace the tangent of ``t``'s root (``t`` or its base) by a copy batched over the
    levels of ``like`` as well, so that ``like`` can be written into it; returns ``t``'s
    tangent (a view of the new one for a view ``t``)."""
    from ..func._batch_rules import widened

    root = t if t._base is None else t._base
    set_tangent(root, lvl, widened(get_tangent(root, lvl), like))
    if root is t:
        return _tangent_dict(t)[lvl]
    d = _tangent_dict(t)
    if d is not None:
        d.pop(lvl, None)
    return get_tangent(t, lvl)


def commit_tangent(t, r):
    """``_dispatch.commit_tangent``: ``commit_inplace_result`` wrote ``r`` into ``t``; carry
    ``r``'s tangents of the levels on this thread's stack into ``t``'s."""
    for m in _state.modes:
        if isinstance(m, DualLevel):
            new = get_tangent(r, m) if isinstance(r, Tensor) else None
            if new is not None or has_tangent(t, m):
                commit(m, t, new)
            committed = getattr(m, "committed", None)
            if committed is not None:
                committed.append(t)
    if isinstance(r, Tensor) and r is not t:
        _retarget_saved_output(t, r)


def commit_view_tangent(t, r):
    """An in-place metadata op (``t_``, ``squeeze_``, ``as_strided_``) made ``t`` the view
    ``r`` of its own storage: ``t``'s tangent becomes ``r``'s, the same view of the old
    tangent (NOTE [ Tangents of views ])."""
    for m in _state.modes:
        if isinstance(m, DualLevel):
            new = get_tangent(r, m)
            if new is not None:
                set_tangent(t, m, new)
            elif has_tangent(t, m):
                d = _tangent_dict(t)
                if d is None:
                    d = t._tangent = {}
                d[m] = None
            committed = getattr(m, "committed", None)
            if committed is not None:
                committed.append(t)


def _retarget_saved_output(t, r):
    """The in-place op's node saved its out-of-place result ``r`` as its output, with
    ``r``'s tangent dict (``save_output``); ``r`` is dropped and ``t`` now holds its value,
    so the node must read ``t``'s tangents -- those the dual levels commit into ``t``.
    Forward-over-reverse reads them: the Hessian-vector product through ``y.exp_()``."""
    node = r._grad_fn
    sout = None if node is None else getattr(node, "_sout", None)
    dr = _tangent_dict(r)
    if sout is None or dr is None:
        return
    for s in (sout if type(sout) is tuple else (sout,)):
        if s is not None and s.tangents is dr:
            d = _tangent_dict(t)
            if d is None:
                d = t._tangent = {}
            s.tangents = d


def copy_tangents(t, c):
    """``c`` is autograd's copy of ``t`` saved before an in-place write destroys ``t``'s
    value: give it a copy of each tangent ``t`` has now, since the write replaces those too
    (in place, NOTE [ Tangents of views ]). Forward-over-reverse reads them: the Hessian-vector
    product of ``y.mul_(x)`` needs the tangent of ``y``'s old value."""
    for lvl in levels.stack:
        tan = get_tangent(t, lvl)
        if tan is not None:
            set_tangent(c, lvl, _clone_batched(tan))


def _batched(t):
    """Whether ``t`` is a batched tensor of a vmap level on the stack."""
    if not isinstance(t, Tensor):
        return False
    if not _batch_info:
        _wider(t, t)  # binds _batch_info
    return _batch_info[0](t) is not None


def _clone_batched(t):
    """A copy of ``t`` made whatever modes are on the stack: autograd saves in-place inputs
    from inside a vmap level's rule, with that level popped, where a batched tangent's
    ``clone`` would copy its first example only (NOTE [ Batched tensors ])."""
    if not _batch_info:
        _wider(t, t)  # binds _batch_info
    inf = _batch_info[0](t)
    if inf is None:
        return t.clone()
    from ..func._batch_tensor import make_batched

    phys, lv = inf
    return make_batched(_clone_batched(phys), lv)


def _fit(tan, like):
    """``tan`` broadcast to ``like``'s shape and cast to its dtype."""
    if tan._data.shape != like._data.shape:
        tan = tan.expand(tuple(like._data.shape)).contiguous()
    ld = like._data.dtype
    if tan._data.dtype != ld:
        if tan._data.dtype.kind == "c" and ld.kind != "c":
            tan = tan.real
        tan = tan.to(like.dtype)
    return tan


# ------------------------------------------------------------------------------------------------
# output tangents of one declared op


def _const(x):
    from .._ops._elementwise import _const as c

    return c(x)


def op_tangents(lvl, handle, op, args, kwargs, res):
    """One tangent (or None) per output of ``op`` run on ``args`` giving ``res``."""
    outs = res if type(res) is tuple else (res,)
    if not any(_is_float(o) for o in outs):
        return (None,) * len(outs)
    if not op.differentiable:
        from .. import zeros_like

        return tuple(zeros_like(o) if _is_float(o) else None for o in outs)
    x_dots = tuple(get_tangent(a, lvl) if isinstance(a, Tensor) else None for a in args)
    if op.linear or op.view_of is not None:
        tans = _linear(handle, op, args, kwargs, x_dots)
        fit = op.view_of is None
    else:
        inputs = tuple(a if a is None or isinstance(a, Tensor) else _const(a) for a in args)
        params = dict(kwargs)
        if op.jvp is not None:
            tans = op.jvp(x_dots, *inputs, out=res, **params)
        else:
            tans = _diagonal_jvp(op, x_dots, inputs, params, res) if _is_ew(op) else _NO
            if tans is _NO:
                tans = transpose_jvp(op, x_dots, inputs, params, res)
        fit = True
    if type(tans) is not tuple:
        tans = (tans,)
    if len(tans) < len(outs):
        tans = tans + (None,) * (len(outs) - len(tans))
    result = []
    nondiff = op.nondiff_outputs
    for k, (o, t) in enumerate(zip(outs, tans)):
        if not _is_float(o) or k in nondiff:
            result.append(None)
            continue
        if t is None:
            # a derivative that is zero where defined (floor, sign): zeros, as PyTorch gives
            from .. import zeros_like

            result.append(zeros_like(o))
            continue
        if fit:
            if t._data.shape != o._data.shape or t._data.dtype != o._data.dtype:
                t = _fit(t, o)
            elif t._base is not None or any(t is x for x in x_dots):
                t = t.clone()  # a fresh tensor: an in-place op on ``o`` writes into it
        result.append(t)
    return tuple(result)


def _linear(handle, op, args, kwargs, x_dots):
    """A linear op's tangent: the op applied to the tangents, zeros where an input has none
    (integer inputs -- indices -- stay as they are)."""
    from .. import zeros_like

    if all(d is None for d in x_dots):
        return None
    new = []
    for a, d in zip(args, x_dots):
        if d is not None:
            new.append(d)
        elif isinstance(a, Tensor):
            new.append(zeros_like(a) if a._data.dtype.kind in "fc" else a)
        elif isinstance(a, (bool,)) or a is None:
            new.append(a)
        elif isinstance(a, (int, float, complex)):
            new.append(0)
        else:
            new.append(a)
    return handle(*new, **kwargs)


_NO = object()
_EW = []


def _is_ew(op):
    if not _EW:
        from .._ops._elementwise import ElementwiseOp

        _EW.append(ElementwiseOp)
    return isinstance(op, _EW[0])


def _diagonal_jvp(op, x_dots, inputs, params, res):
    """NOTE [ Forward mode of element-wise ops ]: an element-wise op's Jacobian is diagonal,
    hence symmetric for real dtypes, so ``J x_dot`` is the vjp evaluated at ``x_dot``: one
    forward evaluation of the vjp formula per input with a tangent, no backward pass. Returns
    ``_NO`` where that does not hold (complex dtypes, or a formula returning a reduced
    gradient), and the transpose of the vjp is used instead."""
    if type(res) is tuple or res._data.dtype.kind != "f":
        return _NO
    shape = res._data.shape
    total = None
    kw = dict(params)
    if op.saves_out:
        kw["out"] = res
    for i, d in enumerate(x_dots):
        if d is None:
            continue
        x = inputs[i]
        if x._data.dtype.kind != "f" or d._data.dtype.kind != "f":
            return _NO
        if op.wants_needs:
            kw["needs_input_grad"] = tuple(j == i for j in range(len(inputs)))
        g = d if d._data.shape == shape else d.expand(shape)
        r = op.vjp(g, *inputs, **kw)
        r = r[i] if type(r) is tuple else (r if i == 0 else None)
        if r is None:
            continue
        if r._data.shape != shape:
            if x._data.shape != shape:
                return _NO  # a gradient the formula already reduced: not the diagonal
            r = r.expand(shape)
        total = r if total is None else total + r
    return total


def transpose_jvp(op, x_dots, inputs, params, res):
    """NOTE [ Forward mode from the vjp ]: ``J x_dot`` from ``op.vjp``."""
    from ._engine import grad as autograd_grad
    from ._registry_glue import sum_to_op
    from .grad_mode import enable_grad

    outs = res if type(res) is tuple else (res,)
    nondiff = set(op.nondiff_outputs)
    us = []
    for k, o in enumerate(outs):
        if k in nondiff or not _is_float(o):
            us.append(None)
        else:
            d = o._data
            u = wrap(_dispatch.backends_by_type[type(d)].xp.zeros(d.shape, d.dtype))
            u._rg = True
            us.append(u)
    g = us[0] if type(res) is not tuple else tuple(us)
    kw = dict(params)
    if op.saves_out:
        kw["out"] = res
    if op.wants_needs:
        kw["needs_input_grad"] = tuple(d is not None for d in x_dots)
    create = _state.grad_enabled and (
        any(isinstance(x, Tensor) and x._rg for x in inputs)
        or any(d is not None and d._rg for d in x_dots))
    with enable_grad():
        gx = op.vjp(g, *inputs, **kw)
        if gx is None or isinstance(gx, Tensor):
            gx = (gx,)
        ys, vs = [], []
        for gi, x, d in zip(gx, inputs, x_dots):
            if gi is None or d is None or not gi._rg:
                continue
            xd = x._data
            if gi._data.shape != xd.shape:
                gi = _dispatch.apply(sum_to_op, (gi,), {"shape": xd.shape,
                                                          "in_shape": gi._data.shape})
            if gi._data.dtype != xd.dtype:
                gi = gi.to(x.dtype)
            ys.append(gi)
            vs.append(d if d._data.dtype == xd.dtype else d.to(x.dtype))
    live = [u for u in us if u is not None]
    if not ys or not live:
        return None
    grads = autograd_grad(ys, live, vs, create_graph=create, allow_unused=True)
    it = iter(grads)
    tans = tuple(None if u is None else next(it) for u in us)
    return tans if type(res) is tuple else tans[0]


def fallback_ops():
    """Names of ember's own differentiable ops (those whose formulas live in ember's package:
    custom ops and ops declared by user code aside) whose tangents come from the transpose of
    their vjp (NOTE [ Forward mode from the vjp ]); element-wise ops without a formula use it
    for complex dtypes only (NOTE [ Forward mode of element-wise ops ])."""
    from .._ops._registry import ops

    return sorted(n for n, o in ops.items() if o.differentiable and o.jvp is None
                  and o.is_builtin and getattr(o.vjp, "__module__", "").startswith("ember.")
                  and not o.linear and o.view_of is None and not _is_ew(o))


# ------------------------------------------------------------------------------------------------
# entering and leaving levels


#: dual levels open on all threads together, and the lock guarding the count
_open = [0]
_open_lock = threading.Lock()


def enter(nested_ok=False):
    """Push a new dual level; returns it."""
    stack = levels.stack
    if stack and not nested_ok:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _bind_special()
    lvl = DualLevel(len(stack))
    if any(m.level == 20 for m in _state.modes):
        # NOTE [ Dual levels inside vmap ]: consulted before the vmap levels around it
        lvl.level = 20
    levels.stack = stack + (lvl,)
    with _open_lock:
        _open[0] += 1
        # the hooks are on only while some thread has a level (they cost nothing otherwise)
        _dispatch.commit_tangent = commit_tangent
        _dispatch.carries_tangent = carries_tangent
    _dispatch.push_mode(lvl)
    return lvl


def exit_level(lvl):
    """Pop ``lvl`` (the innermost level) and drop every tangent it gave."""
    stack = levels.stack
    if not stack or stack[-1] is not lvl:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. "
            "This is not supported.")
    _dispatch.pop_mode(lvl)
    levels.stack = stack[:-1]
    with _open_lock:
        _open[0] -= 1
        if not _open[0]:
            _dispatch.commit_tangent = None
            _dispatch.carries_tangent = None
    for ref in lvl.tracked:
        t = ref()
        if t is not None:
            d = _tangent_dict(t)
            if d is not None:
                d.pop(lvl, None)
                if not d:
                    t._tangent = None
    lvl.tracked = []


def _bind_special():
    if _special:
        return
    from .._ops import conversion, indexing

    _special["getitem"] = indexing._GETITEM
    _special["copy_"] = conversion.copy_.handle
    setitem = getattr(indexing, "_setitem_entry", None) or _find_handle("setitem_")
    if setitem is not None:
        _special["setitem_"] = setitem


def _find_handle(name):
    p = _dispatch.packets.get("aten", {}).get(name)
    if p is None:
        return None
    return p._overloads.get("default")


def current():
    """The innermost dual level of this thread, or None."""
    stack = levels.stack
    return stack[-1] if stack else None


def detach_keep_tangents(t):
    """``t.detach()`` carrying ``t``'s tangents (for transforms that detach their own
    stand-ins but must leave enclosing dual levels' tangents in place)."""
    if not levels.stack:
        return t.detach()
    from ..func._batch_tensor import batch_info, make_batched

    inf = batch_info(t)
    if inf is None:
        d = t.detach()
    else:
        # a batched tensor: the tangents of dual levels outside its vmap levels live on its
        # physical tensor (NOTE [ Dual levels inside vmap ])
        d = make_batched(detach_keep_tangents(inf[0]), inf[1])
    for lvl in levels.stack:
        tan = get_tangent(t, lvl)
        if tan is not None:
            set_tangent(d, lvl, tan)
    return d


# ------------------------------------------------------------------------------------------------
# custom Functions (autograd.Function.jvp)


def any_dual(args, kwargs):
    """Whether some argument carries a tangent of a dual level of this thread."""
    for lvl in levels.stack:
        if _any_tangent(args, kwargs, lvl):
            return True
    return False


def function_apply(cls, args, kwargs):
    """``Function.apply`` with dual inputs: ``forward`` runs on the primals with the dual
    levels off the stack (its inner ops are not differentiated), then ``jvp(ctx, *tangents)``
    gives the outputs' tangents, one call per level (missing tangents are zeros, as in
    PyTorch)."""
    from .. import zeros_like

    active = levels.stack
    modes = _state.modes
    _state.modes = tuple(m for m in modes if not isinstance(m, DualLevel))
    try:
        ctx, out = cls._apply_ctx(args, kwargs)
    finally:
        _state.modes = modes
    single = not isinstance(out, tuple)
    outs = (out,) if single else out
    dirty = getattr(ctx, "dirty_tensors", ())
    for lvl in active:
        if not _any_tangent(args, kwargs, lvl):
            continue
        tangents = []
        for a in args:
            if not isinstance(a, Tensor):
                tangents.append(None)
                continue
            t = get_tangent(a, lvl)
            if t is None and a._data.dtype.kind in "fc":
                t = zeros_like(a)
            tangents.append(t)
        # the level and those inside it are off the stack while jvp runs, as when a mode
        # computes tangents (enclosing levels see the formula's ops)
        inner = active[active.index(lvl):]
        ctx._in_jvp = True
        _state.modes = tuple(m for m in modes if not any(m is i for i in inner))
        try:
            res = cls.jvp(ctx, *tangents)
        finally:
            ctx._in_jvp = False
            _state.modes = modes
        if not isinstance(res, tuple):
            res = (res,)
        if len(res) != len(outs):
            raise RuntimeError(
                f"{cls.__name__}.jvp returned {len(res)} tangents but forward returned "
                f"{len(outs)} outputs")
        for o, t in zip(outs, res):
            if not _is_float(o) or t is None:
                continue
            if not isinstance(t, Tensor):
                raise TypeError(f"{cls.__name__}.jvp must return Tensors or None, got "
                                f"{type(t).__name__}")
            if any(o is d for d in dirty):
                commit(lvl, o, t)
            else:
                set_tangent(o, lvl, t if t._data.shape == o._data.shape else _fit(t, o))
    return out
