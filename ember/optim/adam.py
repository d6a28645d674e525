"""Adam and AdamW (Kingma & Ba, 2015; Loshchilov & Hutter, 2019)."""

from __future__ import annotations

import math
import sys
from time import perf_counter_ns

import numpy as np

from .. import _dispatch, _kernels
from . import _fused_cuda
from ._base import NUMBERS as _NUMBERS
from ._base import (check_adam_hparams, check_fused, check_tensor_lr, closure_loss, step_group,
                    zeros_state)
from .optimizer import Optimizer

__all__ = ["Adam", "AdamW", "adam"]


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2015): steps from bias-corrected running means of the gradient and
    of its square; ``decoupled_weight_decay=True`` makes it AdamW.

    Args:
        params: an iterable of parameters (or ``(name, parameter)`` pairs, or dicts defining
            parameter groups).
        lr (float): learning rate. Default: 1e-3.
        betas (tuple): decays of the first and second moments. Default: (0.9, 0.999).
        eps (float): added to the denominator. Default: 1e-8.
        weight_decay (float): weight decay (an L2 term unless decoupled). Default: 0.
        amsgrad (bool): use the running maximum of the second moment (Reddi et al., 2018).
        maximize (bool): ascend the objective instead. Default: False.
        decoupled_weight_decay (bool): decay the weights directly, as AdamW. Default: False.
        foreach, capturable, differentiable, fused: accepted for PyTorch compatibility
            (ember picks its own loop; see NOTE [ Flat optimizer step ]; on CUDA each
            update is one fused kernel, NOTE [ Fused optimizer kernels on CUDA ]).
    Returns:
        An optimizer whose ``step()`` updates the parameters in place.

    Example:
        >>> import ember
        >>> w = ember.nn.Parameter(ember.ones(3))
        >>> opt = ember.optim.Adam([w], lr=0.1)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> bool((w < 1).all())
        True
    """

    _sparse_refusal = "Adam does not support sparse gradients, please consider SparseAdam instead"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        check_tensor_lr(lr, foreach, capturable)
        check_adam_hparams(lr, eps, betas, weight_decay)
        check_fused(fused, foreach, differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            names = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group["amsgrad"] else ())
            beta1, beta2 = group["betas"]
            step_group(self, group, zeros_state(*names),
                       ("exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"), adam,
                       amsgrad=group["amsgrad"], beta1=beta1, beta2=beta2, lr=group["lr"],
                       weight_decay=group["weight_decay"], eps=group["eps"],
                       maximize=group["maximize"],
                       decoupled_weight_decay=group["decoupled_weight_decay"])
        return loss


class AdamW(Adam):
    """AdamW (Loshchilov & Hutter, 2019): Adam with the weight decay applied to the weights
    directly rather than through the gradient.

    Args:
        params: an iterable of parameters (or ``(name, parameter)`` pairs, or dicts defining
            parameter groups).
        lr (float): learning rate. Default: 1e-3.
        betas (tuple): decays of the first and second moments. Default: (0.9, 0.999).
        eps (float): added to the denominator. Default: 1e-8.
        weight_decay (float): decoupled weight decay. Default: 1e-2.
        amsgrad (bool): use the running maximum of the second moment. Default: False.
        maximize (bool): ascend the objective instead. Default: False.
        foreach, capturable, differentiable, fused: accepted for PyTorch compatibility
            (ember picks its own loop; see NOTE [ Flat optimizer step ]; on CUDA each
            update is one fused kernel, NOTE [ Fused optimizer kernels on CUDA ]).
    Returns:
        An optimizer whose ``step()`` updates the parameters in place.

    Example:
        >>> import ember
        >>> w = ember.nn.Parameter(ember.ones(3))
        >>> opt = ember.optim.AdamW([w], lr=0.1)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> bool((w < 1).all())
        True
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("decoupled_weight_decay", True)


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, amsgrad,
         beta1, beta2, lr, weight_decay, eps, maximize, decoupled_weight_decay=False, **_):
    """The Adam/AdamW update (what :class:`Adam` and :class:`AdamW` run) on lists of tensors.

    Args:
        params (list of Tensor): the parameters, updated in place.
        grads (list of Tensor): their gradients.
        exp_avgs (list of Tensor): first-moment estimates.
        exp_avg_sqs (list of Tensor): second-moment estimates.
        max_exp_avg_sqs (list of Tensor): running maxima of the second moments (used when
            ``amsgrad``; may be empty otherwise).
        state_steps (list of Tensor): one 0-d step count per parameter, incremented.
        amsgrad (bool): use the running maximum of the second moments.
        beta1 (float): decay of the first moments.
        beta2 (float): decay of the second moments.
        lr (float): the learning rate.
        weight_decay (float): the weight decay.
        eps (float): added to the denominator.
        decoupled_weight_decay (bool): decay the weights directly (AdamW) rather than
            adding an L2 penalty to the gradient. Default: False.
        maximize (bool): ascend the objective instead. Default: False.
        **_: the other options :class:`Adam` passes (``foreach``, ``capturable``,
            ``differentiable``, ...), accepted and ignored.

    Returns:
        None. The parameters, the state tensors and the step counts are updated in place.

    Example:
        >>> import ember
        >>> from ember.optim.adam import adam
        >>> p, g = ember.ones(2), ember.tensor([0.5, -0.5])
        >>> steps = [ember.tensor(0.0)]
        >>> adam([p], [g], [ember.zeros(2)], [ember.zeros(2)], [], steps, amsgrad=False,
        ...      beta1=0.9, beta2=0.999, lr=0.1, weight_decay=0, eps=1e-8, maximize=False)
        >>> p, steps[0]
        (tensor([0.9000, 1.1000]), tensor(1.))
    """
    from .. import maximum

    if not amsgrad and _multi_adam(params, grads, exp_avgs, exp_avg_sqs, state_steps, beta1,
                                   beta2, lr, weight_decay, eps, decoupled_weight_decay,
                                   maximize):
        return
    for i, p in enumerate(params):
        m, v, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]
        step_t.add_(1)
        vmax = max_exp_avg_sqs[i] if amsgrad else None
        if _fused_adam(p, grads[i], m, v, vmax, step_t, beta1, beta2, lr, weight_decay, eps,
                       decoupled_weight_decay, maximize):
            continue
        g = grads[i] if not maximize else -grads[i]
        if weight_decay != 0:
            if decoupled_weight_decay:
                p.mul_(1 - lr * weight_decay)
            else:
                g = g.add(p, alpha=weight_decay)
        m.lerp_(g, 1 - beta1)
        v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        step = step_t.item()
        bias1 = 1 - beta1 ** step
        bias2_sqrt = math.sqrt(1 - beta2 ** step)
        if amsgrad:
            vmax = max_exp_avg_sqs[i]
            vmax.copy_(maximum(vmax, v))
            denom = (vmax.sqrt() / bias2_sqrt).add_(eps)
        else:
            denom = (v.sqrt() / bias2_sqrt).add_(eps)
        p.addcdiv_(m, denom, value=-lr / bias1)


def _multi_adam(params, grads, ms, vs, steps, beta1, beta2, lr, weight_decay, eps, decoupled,
                maximize):
    """A whole group's step as one CUDA launch (NOTE [ Multi-tensor optimizer steps on
    CUDA ]): float32 CuPy parameters, state and gradients, every step counter a CPU scalar
    at the same count; False (nothing changed) else."""
    if len(params) < 2 or not _fused_cuda.is_cupy(params[0]._data) or _ops_seen() or \
            _dispatch.state.grad_enabled and any(p.requires_grad for p in params) or \
            not all(isinstance(h, _NUMBERS) for h in (beta1, beta2, lr, weight_decay, eps)):
        return False
    if any(m is None or v is None for m, v in zip(ms, vs)):
        return False
    counts = [s._data for s in steps]
    if any(type(c) is not np.ndarray or c.size != 1 for c in counts):
        return False
    step = float(counts[0]) + 1
    if any(float(c) + 1 != step for c in counts):
        return False  # parameters at different steps: one launch each
    start = _clock()
    done = _fused_cuda.adam_multi([p._data for p in params], [g._data for g in grads],
                                  [m._data for m in ms], [v._data for v in vs], beta1=beta1,
                                  beta2=beta2, lr=lr, weight_decay=weight_decay, eps=eps,
                                  step=step, decoupled=decoupled, maximize=maximize)
    if not done:
        return False
    _record_kernel(start, decoupled, params, grads, ms, vs, steps,
                   (lr, beta1, beta2, weight_decay, eps, maximize))
    for s in steps:
        s._data += 1
        s._bump()
    for t in (*params, *ms, *vs):
        t._bump()
    return True


def _fused_adam(p, g, m, v, vmax, step_t, beta1, beta2, lr, weight_decay, eps, decoupled,
                maximize):
    """The step as one pass of a fused kernel (NOTE [ Fused kernels ] in ember/_kernels; on
    CuPy arrays NOTE [ Fused optimizer kernels on CUDA ]) where it covers the arrays and no
    mode but the profiler's sees ops (NOTE [ Fused kernels under the profiler ] in
    ember/profiler/_recorder.py); False (nothing changed) else."""
    if _ops_seen() or p.requires_grad and _dispatch.state.grad_enabled or \
            not all(isinstance(h, _NUMBERS) for h in (beta1, beta2, lr, weight_decay, eps)):
        return False
    step = step_t.item()
    if _fused_cuda.is_cupy(p._data):
        start = _clock()
        done = _fused_cuda.adam(p._data, g._data, m._data, v._data,
                                None if vmax is None else vmax._data, beta1=beta1,
                                beta2=beta2, lr=lr, weight_decay=weight_decay, eps=eps,
                                step=step, decoupled=decoupled, maximize=maximize)
        if not done:
            return False
        _record_kernel(start, decoupled, [p], [g], [m], [v], [step_t],
                       (lr, beta1, beta2, weight_decay, eps, maximize))
        for t in (p, m, v) if vmax is None else (p, m, v, vmax):
            t._bump()
        return True
    if vmax is not None:  # the CPU kernel has no amsgrad
        return False
    start = _clock()
    done = _kernels.adam(p._data, g._data, m._data, v._data, beta1=beta1, beta2=beta2, lr=lr,
                         weight_decay=weight_decay, eps=eps, bias1=1 - beta1 ** step,
                         bias2_sqrt=math.sqrt(1 - beta2 ** step), decoupled=decoupled,
                         maximize=maximize)
    if not done:
        return False
    _record_kernel(start, decoupled, [p], [g], [m], [v], [step_t],
                   (lr, beta1, beta2, weight_decay, eps, maximize))
    for t in (p, m, v):
        t._bump()
    return True


def _ops_seen():
    """Whether a mode on this thread must see the step as ops, so the fused kernels decline:
    any mode but the profiler's recorder, which only watches and records a fused kernel as
    one op (NOTE [ Fused kernels under the profiler ] in ember/profiler/_recorder.py)."""
    if not _dispatch.intercept:
        return False
    return any(not getattr(m, "_ember_observer", False) for m in _dispatch.state.modes)


def _clock():
    """The clock reading a profiled fused kernel's event starts at (0 with no mode on)."""
    return perf_counter_ns() if _dispatch.intercept else 0


def _record_kernel(start, decoupled, params, grads, ms, vs, steps, hparams):
    """Show the profiler, when it records, the fused kernel that ran since ``start`` as
    PyTorch's fused op with its arguments (``hparams``: lr, beta1, beta2, weight decay,
    eps, maximize)."""
    if not start:
        return
    recorder = sys.modules.get("ember.profiler._recorder")
    session = recorder.observing_session() if recorder is not None else None
    if session is None:
        return
    lr, beta1, beta2, weight_decay, eps, maximize = hparams
    session.kernel_event("aten::_fused_adamw_" if decoupled else "aten::_fused_adam_",
                         lambda: (params, grads, ms, vs, [], steps, lr, beta1, beta2,
                                  weight_decay, eps, False, maximize, None, None), start)
