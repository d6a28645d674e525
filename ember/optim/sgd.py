"""Stochastic gradient descent (with momentum, dampening, Nesterov, weight decay)."""

from __future__ import annotations

import sys
from time import perf_counter_ns

import numpy as np

from .. import _dispatch, _kernels, _parallel
from .._core.tensor import wrap
from .._ops import _fma
from . import _fused_cuda
from ._base import NUMBERS as _NUMBERS, check_fused, closure_loss
from ._flat import apply_update
from .optimizer import Optimizer, required

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    """Stochastic gradient descent: ``p <- p - lr * v`` where ``v`` is the (momentum-averaged)
    gradient.

    Matches PyTorch's formulation: ``v <- momentum * v + (1 - dampening) * g`` with the first
    step's ``v = g``; Nesterov uses ``g + momentum * v``.

    Args:
        params: an iterable of parameters (or ``(name, parameter)`` pairs, or dicts defining
            parameter groups).
        lr (float): learning rate. Default: 1e-3.
        momentum (float): momentum factor. Default: 0.
        dampening (float): dampening of the momentum. Default: 0.
        weight_decay (float): L2 penalty added to the gradient. Default: 0.
        nesterov (bool): Nesterov momentum (needs momentum > 0, dampening 0). Default: False.
        maximize (bool): ascend the objective instead. Default: False.
        foreach, capturable, differentiable, fused: accepted for PyTorch compatibility
            (ember picks its own loop; see NOTE [ Flat optimizer step ]; on CUDA each
            update is one fused kernel, NOTE [ Fused optimizer kernels on CUDA ]).
    Returns:
        An optimizer whose ``step()`` updates the parameters in place.

    Example:
        >>> import ember
        >>> w = ember.nn.Parameter(ember.ones(3))
        >>> opt = ember.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> bool((w < 1).all())
        True
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        check_fused(fused, foreach, differentiable)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update; ``closure`` re-evaluates the model and returns the loss."""
        loss = closure_loss(closure)
        state = self.state
        for group in self.param_groups:
            params, grads, bufs = [], [], []
            for p in group["params"]:
                g = p.grad
                if g is not None:
                    params.append(p)
                    grads.append(g)
                    # (no state yet, as without momentum: no look-up, whose hash is a call)
                    st = state.get(p) if state else None
                    bufs.append(None if st is None else st.get("momentum_buffer"))
            if group["fused"] and any(g.is_sparse for g in grads):
                raise RuntimeError("`_fused_sgd` does not support sparse gradients")
            # momentum buffers are made by the first update, and only with momentum
            hparams = dict(lr=group["lr"], momentum=group["momentum"],
                           dampening=group["dampening"], weight_decay=group["weight_decay"],
                           nesterov=group["nesterov"], maximize=group["maximize"])
            session = _profiled(group)
            if session is not None and params:
                # PyTorch's fused step is one op: NOTE [ Fused kernels under the profiler ]
                first = any(b is None for b in bufs) and bool(group["momentum"])
                inputs = (params, grads, [b for b in bufs if b is not None],
                          group["weight_decay"], group["momentum"], group["lr"],
                          group["dampening"], group["nesterov"], group["maximize"], first,
                          None, None)
                session.as_one_op(
                    "aten::_fused_sgd_", lambda inputs=inputs: inputs, apply_update,
                    (self, group, params, grads, [bufs], ("momentum_buffer",), sgd), hparams)
                continue
            apply_update(self, group, params, grads, [bufs], ("momentum_buffer",), sgd,
                         **hparams)
        return loss


def _profiled(group):
    """The profiler's session when it alone watches ops and ``group`` asked for PyTorch's
    fused step, which PyTorch's profiler shows as one op; else None."""
    if not group.get("fused") or not _dispatch.intercept:
        return None
    recorder = sys.modules.get("ember.profiler._recorder")
    return recorder.observing_session() if recorder is not None else None


def sgd(params, d_p_list, momentum_buffer_list, *, lr, momentum=0, dampening=0,
        weight_decay=0, nesterov=False, maximize=False, **_):
    """The SGD update (what :class:`SGD`'s ``step`` runs) on lists of tensors.

    Args:
        params (list of Tensor): the parameters, updated in place.
        d_p_list (list of Tensor): their gradients.
        momentum_buffer_list (list): one momentum buffer per parameter, or ``None`` where
            there is none yet (it is created in the list, in place).
        lr (float): the learning rate.
        momentum (float): the momentum factor. Default: 0.
        dampening (float): dampening of the momentum. Default: 0.
        weight_decay (float): L2 penalty added to the gradient. Default: 0.
        nesterov (bool): use Nesterov momentum. Default: False.
        maximize (bool): ascend the objective instead. Default: False.
        **_: the other options :class:`SGD` passes (``foreach``, ``capturable``,
            ``differentiable``, ...), accepted and ignored.

    Returns:
        None. The parameters, the momentum buffers are updated in place.

    Example:
        >>> import ember
        >>> from ember.optim.sgd import sgd
        >>> p, g = ember.ones(2), ember.tensor([0.5, -0.5])
        >>> buffers = [None]
        >>> sgd([p], [g], buffers, lr=0.1, momentum=0.9)
        >>> p, buffers[0]
        (tensor([0.9500, 1.0500]), tensor([ 0.5000, -0.5000]))
    """
    if _multi_sgd(params, d_p_list, momentum_buffer_list, lr, momentum, dampening,
                  weight_decay, nesterov, maximize):
        return
    for i, p in enumerate(params):
        # a sparse gradient takes the op-by-op update: its sums stay sparse, the momentum
        # buffer is sparse, and weight decay refuses it (``sparse + dense``), as in PyTorch
        if not d_p_list[i].is_sparse and (
                _fused_sgd(p, d_p_list[i], momentum_buffer_list, i, lr, momentum, dampening,
                           weight_decay, nesterov, maximize) or
                _sgd_on_threads(p, d_p_list[i], momentum_buffer_list[i], lr, momentum,
                                dampening, weight_decay, nesterov, maximize)):
            continue
        buf = _sgd_update(_TensorMath, p, d_p_list[i], momentum_buffer_list[i], lr, momentum,
                          dampening, weight_decay, nesterov, maximize)
        if momentum != 0:
            momentum_buffer_list[i] = buf


# NOTE [ One SGD update ]
# The op-by-op update is written once, ``_sgd_update``, and runs on two kinds of operands:
# tensors (the loop above, which modes, autograd and every device see op by op) and the
# NumPy slices of a large parameter cut over threads (``_sgd_on_threads``). The two sets
# of operations give the same operation the same rounding -- ``add(y, alpha)`` is one fused
# multiply-add for float32/float64 and adds ``y`` itself when alpha is 1, as ``Tensor.add``
# and PyTorch's kernel do (NOTE [ Fused multiply-add as PyTorch's kernels ]) -- so each
# piece's bits are the loop's. The compiled step (``_kernels.sgd``) is the third form,
# one fused pass tested against these.


class _TensorMath:
    """``_sgd_update``'s operations on tensors: the ops the loop records."""

    @staticmethod
    def add(x, y, alpha, inplace=False):
        return x.add_(y, alpha=alpha) if inplace else x.add(y, alpha=alpha)

    @staticmethod
    def scale_(x, c):
        return x.mul_(c)

    @staticmethod
    def copy(x):
        # PyTorch's ``grad.detach().clone()``: under the profiler its ``aten::detach`` row
        start = perf_counter_ns() if _dispatch.intercept else 0
        d = x.detach()
        if start:
            from ..autograd._engine import _record_chain

            inputs = lambda: (x,)  # noqa: E731
            _record_chain((("aten::detach", inputs), ("detach", inputs)), start)
        return d.clone()


class _ArrayMath:
    """``_sgd_update``'s operations on NumPy arrays, rounded as the tensor ops round."""

    @staticmethod
    def add(x, y, alpha, inplace=False):
        if alpha == 1:
            return np.add(x, y, out=x if inplace else None)
        return _fma.fma(alpha, y, x, x.dtype, out=x if inplace else None)

    @staticmethod
    def scale_(x, c):
        return np.multiply(x, c, out=x)

    @staticmethod
    def copy(x):
        return x.copy()


def _sgd_update(ops, p, d, buf, lr, momentum, dampening, weight_decay, nesterov, maximize):
    """One parameter's SGD update in place on ``p`` (and ``buf``) through ``ops``'s
    operations (NOTE [ One SGD update ]); returns the momentum buffer, made from this step's
    gradient when ``buf`` is None (None without momentum)."""
    if maximize:
        d = -d
    if weight_decay != 0:
        d = ops.add(d, p, weight_decay)
    if momentum != 0:
        if buf is None:
            buf = ops.copy(d)
        else:
            ops.add(ops.scale_(buf, momentum), d, 1 - dampening, inplace=True)
        d = ops.add(d, buf, momentum) if nesterov else buf
    ops.add(p, d, -lr, inplace=True)
    return buf


def _multi_sgd(params, grads, bufs, lr, momentum, dampening, weight_decay, nesterov,
               maximize):
    """A whole group's step as one CUDA launch (NOTE [ Multi-tensor optimizer steps on
    CUDA ]): float32 CuPy parameters and gradients, with momentum every buffer already made
    (the first step makes them one by one); False (nothing changed) else."""
    if len(params) < 2 or not _fused_cuda.is_cupy(params[0]._data) or _dispatch.intercept or \
            _dispatch.state.grad_enabled and any(p.requires_grad for p in params) or \
            not all(isinstance(h, _NUMBERS) for h in (lr, momentum, dampening, weight_decay)):
        return False
    if momentum != 0 and any(b is None for b in bufs):
        return False
    if not _fused_cuda.sgd_multi([p._data for p in params], [g._data for g in grads],
                                 [b._data for b in bufs] if momentum != 0 else None, lr=lr,
                                 weight_decay=weight_decay, momentum=momentum,
                                 dampening=dampening, nesterov=nesterov, maximize=maximize):
        return False
    for t in params:
        t._bump()
    if momentum != 0:
        for b in bufs:
            b._bump()
    return True


def _fused_sgd(p, g, bufs, i, lr, momentum, dampening, weight_decay, nesterov, maximize):
    """The step as one kernel launch on CuPy arrays (NOTE [ Fused optimizer kernels on
    CUDA ]), or one compiled pass on NumPy float32 arrays (NOTE [ Fused optimizer steps ] in
    ember/_kernels), where it covers them and no mode intercepts ops; False (nothing
    changed) else."""
    if not _bypasses_ops(p, lr, momentum, dampening, weight_decay):
        return False
    buf = bufs[i] if momentum != 0 else None
    if not _fused_cuda.is_cupy(p._data):
        if not _kernels.sgd(p._data, g._data, None if buf is None else buf._data, lr=lr,
                            momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                            nesterov=nesterov, maximize=maximize):
            return False
        p._bump()
        if buf is not None:
            buf._bump()
        return True
    out = _fused_cuda.sgd(p._data, g._data, None if buf is None else buf._data, lr=lr,
                          weight_decay=weight_decay, momentum=momentum, dampening=dampening,
                          nesterov=nesterov, maximize=maximize)
    if out is False:
        return False
    p._bump()
    if momentum != 0:
        if buf is None:
            bufs[i] = wrap(out)
        else:
            buf._bump()
    return True


def _bypasses_ops(p, lr, momentum, dampening, weight_decay):
    """Whether ``p``'s update may run on its arrays rather than op by op: no mode intercepts
    ops, no graph is recorded through ``p``, and the hyper-parameters are plain numbers."""
    return not (_dispatch.intercept or p.requires_grad and _dispatch.state.grad_enabled) and \
        all(isinstance(h, _NUMBERS) for h in (lr, momentum, dampening, weight_decay))


def _sgd_on_threads(p, g, buf, lr, momentum, dampening, weight_decay, nesterov, maximize):
    """The loop's update of one large NumPy parameter in pieces on ember's threads (NOTE
    [ Optimizer steps on threads ] in ember/_kernels/_train.py): each piece runs the loop's
    array operations, in its order, on its slice, so the bits are the loop's. False
    (nothing changed) where that does not apply: a parameter that is not a float32 or
    float64 NumPy array of at least ``_kernels.OPTIM_SPLIT`` elements with a gradient and
    (with momentum) a buffer of its dtype and shape, all C-contiguous; a mode that
    intercepts ops or a recorded graph; tensor hyper-parameters; one thread or a busy
    machine (``_parallel.split_on_threads``). The compiled step (``_fused_sgd``) comes
    first where numba covers the arrays."""
    if not _bypasses_ops(p, lr, momentum, dampening, weight_decay):
        return False
    pa, ga = p._data, g._data
    arrays = (pa, ga) if momentum == 0 else (pa, ga, None if buf is None else buf._data)
    for a in arrays:
        if type(a) is not np.ndarray or a.dtype != pa.dtype or a.shape != pa.shape or \
                not a.flags.c_contiguous:
            return False
    if pa.dtype.kind != "f" or pa.dtype.itemsize < 4 or pa.size < _kernels.OPTIM_SPLIT or \
            not pa.flags.writeable or (momentum != 0 and not arrays[2].flags.writeable):
        return False
    flats = [a.reshape(-1) for a in arrays]

    def piece(lo, hi):  # NOTE [ One SGD update ]
        _sgd_update(_ArrayMath, flats[0][lo:hi], flats[1][lo:hi],
                    flats[2][lo:hi] if momentum != 0 else None, lr, momentum, dampening,
                    weight_decay, nesterov, maximize)

    if not _parallel.split_on_threads(piece, pa.size, min_size=_kernels.OPTIM_SPLIT):
        return False
    p._bump()
    if momentum != 0:
        buf._bump()
    return True
