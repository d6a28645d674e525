"""Loss functions beyond the fused ones (cross_entropy, nll_loss, mse_loss in ``nn_ops.py``).
The element-wise losses torch runs as one op (smooth_l1, huber, soft_margin and the binary
cross-entropies) are one op each here too (NOTE [ Element-wise losses as single ops ]); CTC
is a fused op; the rest are composed from ember ops so their gradients come for free.

``nn.functional`` re-exports the functional forms (string ``reduction``, the legacy
``size_average``/``reduce`` flags). Those PyTorch also has at top level (``torch.kl_div``,
``torch.ctc_loss``, ...) are declared ``public`` at the end of this file with the top-level
signature: ``reduction`` is the integer enum (0 none, 1 mean, 2 sum).

Where PyTorch clamps for numerical safety (``binary_cross_entropy`` clamps its logs at
-100, ``gaussian_nll_loss`` clamps the variance), so do we, in the same places.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dispatch
from .._settings import warn_at_caller
from .._core import dtype as _dt
from .._core.checks import holds_values
from .._core.tensor import Tensor
from . import _node_names
from ._registry import Op, public, recorded_as
from ._xp_compat import to_host
from .creation import full_like
from .from_data import as_tensor, from_numpy
from .nn_activations import logsigmoid
from .nn_checks import cast_back, kernel_dtype
from .nn_ops import reduction_enum
from .shape import broadcast_tensors
from .pointwise import minimum, opmath, where, xlogy
from .ranges import arange, triu_indices


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.mean()


def _same_size(name, input, target):
    if tuple(target.shape) != tuple(input.shape):
        if name == "binary_cross_entropy_with_logits":  # (PyTorch's words differ there)
            raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                             f"({input.shape})")
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size.")


def _promoted(key, input, target):
    """``input`` and ``target`` in their promoted dtype, which the kernel ``key`` (of
    nn_checks.KERNELS) must accept: torch's element-wise losses promote first, so a bool or
    integer target is fine beside a floating input."""
    from .._core import dtype as _dt

    d = _dt.result_type(input, target)
    kernel_dtype(key, d)
    return input.to(d), target.to(d)


def _result_dtype(a, b):
    from .._core import dtype as _dt

    return _dt.result_type(a, b)


def _broadcast_warn(input, target):
    if tuple(target.shape) != tuple(input.shape):
        warn_at_caller(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.")


# NOTE [ Element-wise losses as single ops ]
# smooth_l1_loss, huber_loss, soft_margin_loss, binary_cross_entropy and
# binary_cross_entropy_with_logits are one op each, as in torch (``SmoothL1LossBackward0``,
# ...): the kernel computes the per-element loss and its reduction in one call, and the
# formula is the per-element derivative times the output's gradient (divided by the element
# count for 'mean'; the engine broadcasts a reduced gradient back). The formulas follow
# torch's backward kernels where those differ from the derivative of the forward (at the
# kinks, past the clamps of the binary cross-entropy, at +-inf) and are written in ember ops,
# so create_graph gives second derivatives.


def _reduced(xp, loss, reduction):
    """The per-element ``loss`` reduced by ``reduction``, in ``loss``'s dtype."""
    if reduction == "none":
        return xp.asarray(loss)  # (a 0-d input's ufuncs give NumPy scalars)
    # half types accumulate in float32, as torch's reductions do
    acc = loss.astype(xp.float32) if loss.dtype.itemsize < 4 else loss
    r = acc.sum() if reduction == "sum" else acc.mean() if acc.size else xp.nan
    return xp.asarray(r).astype(loss.dtype, copy=False)


def _per_element(g, x, reduction):
    """The output's gradient as the factor of each element's derivative."""
    if reduction == "mean":
        return g / max(x.numel(), 1)
    return g


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = reduction_enum(reduction, size_average, reduce)
    _broadcast_warn(input, target)
    input, target = _broadcast_as_torch(input, target)
    return _l1_loss(input, target, _REDUCTION_CODES[reduction], weight)


#: PyTorch's ``Reduction`` codes, which its loss ops receive (and a profile lists)
_REDUCTION_CODES = {"none": 0, "mean": 1, "sum": 2}
_REDUCTIONS_OF_CODES = ("none", "mean", "sum")


def _broadcast_as_torch(input, target):
    """``input`` and ``target`` broadcast, as PyTorch's functional broadcasts them before its
    element-wise losses: under the profiler always (its ``aten::broadcast_tensors`` row)."""
    if tuple(input.shape) != tuple(target.shape) or _dispatch.intercept:
        return broadcast_tensors(input, target)
    return input, target


@recorded_as("aten::l1_loss", ("input", "target", "reduction"))
def _l1_loss(input, target, reduction, weight):
    # (``reduction``: PyTorch's code, as its op receives it)
    loss = (input - target).abs()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, _REDUCTIONS_OF_CODES[reduction])


def _not_differentiable(name, **args):
    """PyTorch's refusal to record an op for an argument it has no derivative for (the
    weights of the binary cross-entropies): RuntimeError when one requires grad."""
    if not _dispatch.state.grad_enabled:
        return
    for arg, t in args.items():
        if isinstance(t, Tensor) and t.requires_grad:
            raise RuntimeError(f"The function '{name}' is not differentiable with respect to "
                               f"argument '{arg}'. This input cannot have requires_grad True.")


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    reduction = reduction_enum(reduction, size_average, reduce)
    _same_size("binary_cross_entropy", input, target)
    if target.dtype != input.dtype:
        raise RuntimeError(f"Found dtype {target.dtype.scalar_name} but expected "
                           f"{input.dtype.scalar_name}")
    kernel_dtype("binary_cross_entropy", input)
    _not_differentiable("binary_cross_entropy", weight=weight)
    if weight is not None and tuple(weight.shape) != tuple(target.shape):
        weight = weight.expand(_broadcast_shape(target, weight))
    return _dispatch.apply(binary_cross_entropy_op, (input, target, weight),
                           {"reduction": reduction})


def _broadcast_shape(a, b):
    return tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))


#: the floor of binary_cross_entropy's gradient denominator x (1 - x): torch's 1e-12, held
#: in float32
_BCE_EPS = float(np.float32(1e-12))


def _bce_kernel(xp, x, t, w, *, reduction):
    for name, a in (("input", x), ("target", t)):
        # in the kernel, as torch's, so that it reads one example's values under vmap;
        # written so that NaN, which compares false, fails the check as in torch
        if a.size and holds_values(a) and not (a.min() >= 0 and a.max() <= 1):
            raise RuntimeError(f"all elements of {name} should be between 0 and 1")
    # both logs clamped at -100 (log(0) would give an infinite loss), as torch
    log_x = xp.maximum(xp.log(x), -100)
    log_1mx = xp.maximum(xp.log1p(-x), -100)
    loss = (t - 1) * log_1mx - t * log_x
    if w is not None:
        loss = loss * w
    return _reduced(xp, loss.astype(x.dtype, copy=False), reduction)


def _bce_vjp(g, x, t, w, *, reduction, needs_input_grad):
    gx_needed, gt_needed = needs_input_grad[0], needs_input_grad[1]
    # the input's gradient is one op with torch's second derivatives (below); the target's
    # is f (log(1 - x) - log(x)), unclamped, as torch's
    gx = _dispatch.apply(bce_backward_op, (g, x, t, w), {"reduction": reduction}) \
        if gx_needed else None
    if not gt_needed:
        return gx, None, None
    f = _per_element(g, x, reduction)
    if w is not None:
        f = f * w
    return gx, f * ((-x).log1p() - x.log()), None


def _bce_jvp(x_dots, x, t, w, *, reduction, out):
    x_dot, t_dot = x_dots[0], x_dots[1]
    per = None
    if x_dot is not None:
        per = x_dot * (x - t) / (x * (1 - x)).clamp_min(_BCE_EPS)
    if t_dot is not None:
        pt = t_dot * ((-x).log1p() - x.log())
        per = pt if per is None else per + pt
    if per is None:
        return None
    if w is not None:
        per = per * w
    return per if reduction == "none" else per.sum() if reduction == "sum" else per.mean()


binary_cross_entropy_op = Op("binary_cross_entropy", _bce_kernel, vjp=_bce_vjp, jvp=_bce_jvp)


# NOTE [ Binary cross-entropy's second derivatives ]
# torch's gradient with respect to the input is g w (x - t) / max(x (1 - x), eps) (eps the
# float32 1e-12, so that x = 0 and x = 1 give finite values). Its own derivatives are not
# those of that expression where the floor is reached: with d = 1e-12 (a double), torch
# takes (x^2 - 2 x t + t) / ((x + d)^2 (1 - x + d)^2) for the input, (x - t) / ((x + d)
# (1 - x + d)) for the output gradient and -1 / max(x (1 - x), d) for the target. The
# backward is therefore an op of its own (torch's BinaryCrossEntropyBackwardBackward0)
# whose formulas are those, written in ember ops for higher derivatives.

_BCE_D = 1e-12


def _bce_backward_kernel(xp, g, x, t, w, *, reduction):
    r = (x - t) / xp.maximum(x * (1 - x), x.dtype.type(_BCE_EPS))
    if w is not None:
        r = r * w
    if reduction == "mean":
        g = g / max(x.size, 1)
    return xp.asarray(r * g).astype(x.dtype, copy=False)


def _bce_backward_parts(g, x, t, w, reduction):
    f = _per_element(g, x, reduction)
    return f * w if w is not None else f


def _bce_backward_vjp(gg, g, x, t, w, *, reduction, needs_input_grad):
    f = _bce_backward_parts(gg, x, t, w, reduction)  # gg, weighted and averaged as g was
    xd, one_xd = x + _BCE_D, 1 - x + _BCE_D
    dg = f * (x - t) / (xd * one_xd) if needs_input_grad[0] else None
    dx = f * g * (x * x - 2 * x * t + t) / (xd * one_xd).square() if needs_input_grad[1] \
        else None
    dt = -f * g / (x * (1 - x)).clamp_min(_BCE_D) if needs_input_grad[2] else None
    return dg, dx, dt, None


def _bce_backward_jvp(x_dots, g, x, t, w, *, reduction, out):
    g_dot, x_dot, t_dot = x_dots[0], x_dots[1], x_dots[2]
    xd, one_xd = x + _BCE_D, 1 - x + _BCE_D
    per = None
    for dot, partial in ((g_dot, lambda: (x - t) / (xd * one_xd)),
                         (x_dot, lambda: g * (x * x - 2 * x * t + t) / (xd * one_xd).square()),
                         (t_dot, lambda: -g / (x * (1 - x)).clamp_min(_BCE_D))):
        if dot is not None:
            term = dot * partial()
            per = term if per is None else per + term
    return None if per is None else _bce_backward_parts(per, x, t, w, reduction)


bce_backward_op = Op("binary_cross_entropy_backward", _bce_backward_kernel,
                     vjp=_bce_backward_vjp, jvp=_bce_backward_jvp)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    reduction = reduction_enum(reduction, size_average, reduce)
    _same_size("binary_cross_entropy_with_logits", input, target)
    kernel_dtype("log_sigmoid", input)
    if target.dtype.is_floating_point is False and target.dtype.name != "bool" and \
            not target.is_complex():
        raise RuntimeError(f"result type {input.dtype.scalar_name} can't be cast to the "
                           f"desired output type {target.dtype.scalar_name}")
    _not_differentiable("binary_cross_entropy_with_logits", weight=weight,
                        pos_weight=pos_weight)
    from .._core import dtype as _dt

    if target.dtype.name == "bool":  # torch's ``1 - target`` refuses it
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    dt = _dt.result_type(*(a for a in (input, target, weight, pos_weight) if a is not None))
    if pos_weight is not None and pos_weight.dtype.name == "bool":  # torch's pos_weight - 1
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not "
                           "supported. If you are trying to invert a mask, use the `~` or "
                           "`logical_not()` operator instead.")
    if pos_weight is not None:
        # torch scales log sigmoid(input), of the input's dtype, in place by the weights
        scaled = _dt.promote_types(_dt.result_type(pos_weight, target), input.dtype)
        if not _dt.can_cast(scaled, input.dtype):
            raise RuntimeError(f"result type {scaled.scalar_name} can't be cast to the "
                               f"desired output type {input.dtype.scalar_name}")
    writes_target = target.is_floating_point() or target.is_complex()
    if writes_target and not _dt.can_cast(dt, target.dtype):
        # torch computes in place on a tensor of the target's dtype
        raise RuntimeError(f"result type {dt.scalar_name} can't be cast to the desired output "
                           f"type {target.dtype.scalar_name}")
    if pos_weight is not None and not (pos_weight.is_floating_point() or
                                       pos_weight.is_complex()):
        # torch's ``pos_weight - 1`` is taken in the weight's integer dtype (a uint8 0 wraps
        # to 255) before it meets the float target
        pos_weight = (pos_weight - 1).to(dt) + 1
    args = tuple(None if a is None else a if a.dtype == dt else a.to(dt)
                 for a in (input, target, weight, pos_weight))
    loss = _dispatch.apply(bce_with_logits_op, args, {"reduction": reduction})
    if writes_target and loss.dtype != target.dtype:
        loss = loss.to(target.dtype)  # torch works in place on a tensor of target's dtype
    return loss


def _log_sigmoid(xp, x):
    # min(x, 0) - log(1 + exp(-|x|)): no overflow for any x
    return xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))


def _bce_logits_kernel(xp, x, t, w, pw, *, reduction):
    # (1 - t) x - l log sigmoid(x), l = (pw - 1) t + 1; a half input rounds log sigmoid(x)
    # and each step after it to its own type, as torch's sequence of ops does
    log_sig = opmath(_log_sigmoid)(xp, x)
    if pw is not None:
        log_sig = log_sig * ((pw - 1) * t + 1)
    loss = (1 - t) * x - log_sig
    if w is not None:
        loss = loss * w
    return _reduced(xp, loss.astype(x.dtype, copy=False), reduction)


def _bce_logits_vjp(g, x, t, w, pw, *, reduction, needs_input_grad):
    f = _per_element(g, x, reduction)
    if w is not None:
        f = f * w
    gx = gt = None
    if needs_input_grad[0]:
        # sigmoid(x) - t, or (pw t + 1 - t) sigmoid(x) - pw t with a positive weight
        if pw is None:
            gx = f * (x.sigmoid() - t)
        else:
            pt = pw * t
            gx = f * ((pt + 1 - t) * x.sigmoid() - pt)
    if needs_input_grad[1]:
        # d/dt: -x, or log sigmoid(-x) - pw log sigmoid(x) with a positive weight (the same
        # -x - (pw - 1) log sigmoid(x), written so that x = -inf gives inf, as torch)
        gt = -f * x if pw is None else f * (logsigmoid(-x) - pw * logsigmoid(x))
    return gx, gt, None, None


def _bce_logits_jvp(x_dots, x, t, w, pw, *, reduction, out):
    x_dot, t_dot = x_dots[0], x_dots[1]
    per = None
    if x_dot is not None:
        if pw is None:
            per = x_dot * (x.sigmoid() - t)
        else:
            pt = pw * t
            per = x_dot * ((pt + 1 - t) * x.sigmoid() - pt)
    if t_dot is not None:
        pt_ = -t_dot * x if pw is None else t_dot * (logsigmoid(-x) - pw * logsigmoid(x))
        per = pt_ if per is None else per + pt_
    if per is None:
        return None
    if w is not None:
        per = per * w
    return per if reduction == "none" else per.sum() if reduction == "sum" else per.mean()


bce_with_logits_op = Op("binary_cross_entropy_with_logits", _bce_logits_kernel,
                        vjp=_bce_logits_vjp, jvp=_bce_logits_jvp)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _broadcast_warn(input, target)
    reduction = reduction_enum(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    from .._core import dtype as _dt

    common = _result_dtype(input, target)
    if not _dt.can_cast(common, input.dtype):  # torch checks its output's dtype first
        raise RuntimeError(f"result type {common.scalar_name} can't be cast to the desired "
                           f"output type {input.dtype.scalar_name}")
    x, t = _promoted("huber", input, target)
    x, t = _broadcast_as_torch(x, t)
    # torch's kernel writes into a tensor of the input's dtype; a weight multiplies the
    # unreduced loss (NOTE [ Element-wise losses as single ops ])
    loss = cast_back("huber_loss", _dispatch.apply(huber_loss_op, (x, t), {
        "reduction": "none" if weight is not None else reduction, "delta": float(delta)}),
        input)
    if weight is not None:
        return _reduce(loss * weight, reduction)
    return loss


def _smooth_loss(xp, x, t, reduction, width, scale):
    """huber_loss's per-element loss (``scale`` False), or smooth_l1_loss's (True: the huber
    loss divided by its width), reduced: the square of the difference within the width, a
    straight line beyond it."""
    z = xp.abs(x - t)
    # with c = min(z, width): c (z - c / 2) is z^2 / 2 within the width and
    # width (z - width / 2) beyond it (NaN stays NaN)
    c = xp.minimum(z, x.dtype.type(width))
    loss = c * (z - c * 0.5)
    if scale:
        loss = loss / x.dtype.type(width)
    return _reduced(xp, xp.asarray(loss).astype(x.dtype, copy=False), reduction)


def _smooth_slope(d, width, scale):
    """d loss / d x for the difference ``d = x - t``: torch's rule, the line's slope beyond
    the width (so +-inf differences get a finite gradient) and the parabola's within (NaN
    stays NaN). Written as a choice rather than a clamp: at ``|d| == width`` the slope is
    the line's, whose derivative (the second derivative, under create_graph) is 0 as in
    torch -- a clamp's would be 1 there."""
    # (a NaN difference keeps its NaN, with no second derivative, as in torch)
    c = where(d.abs() < width, d, where(d != d, d.detach(), d.sign() * width))
    return c / width if scale else c


def _smooth_vjp(g, x, t, reduction, width, scale, needs):
    gx = _per_element(g, x, reduction) * _smooth_slope(x - t, width, scale)
    return (gx if needs[0] else None), (-gx if needs[1] else None)


def _smooth_jvp(x_dots, x, t, reduction, width, scale):
    x_dot, t_dot = x_dots
    d_dot = x_dot if t_dot is None else -t_dot if x_dot is None else x_dot - t_dot
    per = _smooth_slope(x - t, width, scale) * d_dot
    return per if reduction == "none" else per.sum() if reduction == "sum" else per.mean()


def _huber_kernel(xp, x, t, *, reduction, delta):
    return _smooth_loss(xp, x, t, reduction, delta, False)


def _huber_vjp(g, x, t, *, reduction, delta, needs_input_grad):
    return _smooth_vjp(g, x, t, reduction, delta, False, needs_input_grad)


def _huber_jvp(x_dots, x, t, *, reduction, delta, out):
    return _smooth_jvp(x_dots, x, t, reduction, delta, False)


# NOTE [ Half-precision smooth_l1_loss ]
# Measured against torch 2.13's CPU kernels: a float16 loss takes the difference in float16
# (one rounding) and the rest in float32, a bfloat16 one everything in float32, each rounded
# once; the gradient of both is ``norm * (x - t) * g / beta`` (or ``+-norm * g``) in float32,
# ``norm`` = 1/n for a mean in float32, rounded once.


def _smooth_l1_kernel(xp, x, t, *, reduction, beta):
    return _smooth_loss(xp, x, t, reduction, beta, True)


_smooth_l1_opmath = opmath(_smooth_l1_kernel)


def _smooth_l1_half(xp, x, t, *, reduction, beta):
    if xp is np and x.dtype == np.float16 and t.dtype == np.float16:
        # NOTE [ Half-precision smooth_l1_loss ]
        z = np.abs(x - t).astype(np.float32)
        b = np.float32(beta)
        loss = np.where(z < b, np.float32(0.5) * z * z / b, z - np.float32(0.5) * b)
        return _reduced(xp, loss.astype(np.float16), reduction)
    return _smooth_l1_opmath(xp, x, t, reduction=reduction, beta=beta)


def _smooth_l1_vjp(g, x, t, *, reduction, beta, needs_input_grad):
    if x.dtype in (_dt.float16, _dt.bfloat16) and x.dtype == t.dtype:
        # NOTE [ Half-precision smooth_l1_loss ]
        d = x.float() - t.float()
        gf = g.float()
        norm = 1.0 / max(x.numel(), 1) if reduction == "mean" else 1.0
        gx = where(d <= -beta, -norm * gf, where(d >= beta, norm * gf,
                                                 norm * d * gf / beta)).to(x.dtype)
        needs = needs_input_grad
        return (gx if needs[0] else None), (-gx if needs[1] else None)
    return _smooth_vjp(g, x, t, reduction, beta, True, needs_input_grad)


def _smooth_l1_jvp(x_dots, x, t, *, reduction, beta, out):
    return _smooth_jvp(x_dots, x, t, reduction, beta, True)


huber_loss_op = Op("huber_loss", opmath(_huber_kernel), vjp=_huber_vjp, jvp=_huber_jvp)
smooth_l1_loss_op = Op("smooth_l1_loss", _smooth_l1_half, vjp=_smooth_l1_vjp,
                       jvp=_smooth_l1_jvp)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean",
                   beta=1.0):
    reduction = reduction_enum(reduction, size_average, reduce)
    _broadcast_warn(input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    input, target = _broadcast_as_torch(input, target)
    input, target = _promoted("smooth_l1", input, target)
    if beta == 0:  # torch's l1_loss then
        return _l1_loss(input, target, _REDUCTION_CODES[reduction], None)
    return _dispatch.apply(smooth_l1_loss_op, (input, target),
                           {"reduction": reduction, "beta": float(beta)})


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    if size_average is not None or reduce is not None:
        reduction = reduction_enum(reduction, size_average, reduce)
    elif reduction == "mean":
        warn_at_caller(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.")
    if input.is_complex() or target.is_complex():
        raise RuntimeError("kl_div: Complex inputs not supported.")
    if not (input.is_floating_point() and target.is_floating_point()):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    reduction = reduction_enum(reduction, size_average, reduce)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        t = target
        stirling = t * t.log() - t + 0.5 * (2 * math.pi * t).log()
        # as torch's in-place add of the masked term: 0 where t <= 1 (not 0 * inf at an
        # infinite target), and the loss keeps its dtype (a float16 loss, a uint8 target)
        total = loss + stirling.masked_fill(t <= 1, 0)
        loss = total if total.dtype == loss.dtype else total.to(loss.dtype)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if isinstance(var, (int, float)):
        var = full_like(input, var)
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = var.unsqueeze(-1)
        elif input.shape[:-1] == var.shape[:-1] and var.shape[-1] == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    from ..autograd.grad_mode import no_grad

    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    reduction = reduction_enum(reduction, size_average, reduce)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            f"margin_ranking_loss : All input tensors should have same dimension but got "
            f"sizes: input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    # the margin is a double in torch's signature: integer inputs give a float loss
    # torch's graph: the margin added as a number (its AddBackward1), then clamp_min
    shifted = _node_names.rename(-target * (input1 - input2) + float(margin), "AddBackward1")
    return _reduce(shifted.clamp_min(0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    reduction = reduction_enum(reduction, size_average, reduce)
    # zeros, not ``input * 0``: an infinite input must not turn the other branch into NaN;
    # torch converts the -1 it compares with to the target's type (255 for uint8)
    neg_one = 255 if target.dtype.name == "uint8" else -1
    if input.is_floating_point() or input.is_complex():
        gap = margin - input
    else:
        # torch's ``margin - input`` is ``empty_like(input).fill_(margin).sub_(input)``: an
        # integer input takes the margin truncated to its dtype and subtracts with
        # wrap-around (int32 1 - (-2**31) wraps negative and clamps to 0)
        gap = input.new_empty(input.shape).fill_(margin) - input
    margin_part = where(target != 1, gap.clamp_min(0), 0)
    self_part = where(target != neg_one, input, 0)
    loss = margin_part + self_part
    if not (input.is_floating_point() or input.is_complex()):  # torch keeps integer inputs'
        loss = loss.to(input.dtype)  # dtype (the float margin part truncated)
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = reduction_enum(reduction, size_average, reduce)
    from .._core import dtype as _dt

    if input.dtype.name == "bool":  # torch's ``-input`` refuses it
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    common = _result_dtype(input, target)
    if not (common.is_floating_point or common.is_complex):
        common = _dt.get_default_dtype()  # integers compute in floating point
    if not _dt.can_cast(common, input.dtype):  # torch writes into the input's dtype
        raise RuntimeError(f"result type {common.scalar_name} can't be cast to the desired "
                           f"output type {input.dtype.scalar_name}")
    if target.dtype != common and target.dtype != input.dtype:
        target = target.to(common)  # the kernel then computes in torch's promoted dtype
    if input.shape != target.shape:  # the target broadcasts to the input's shape
        try:
            shape = _broadcast_shape(input, target)
        except ValueError:
            broadcast_tensors(input, target)  # raises torch's message
            raise
        if shape != tuple(input.shape):
            raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the "
                               f"broadcast shape {list(shape)}")
        target = target.expand(shape)
    _not_differentiable("soft_margin_loss", target=target)
    return _dispatch.apply(soft_margin_loss_op, (input, target), {"reduction": reduction})


def _soft_margin_kernel(xp, x, t, *, reduction):
    # log(1 + exp(-t x)) in the operands' common dtype, written in the input's, as torch
    # (which overflows to inf for large -t x, and so does this)
    z = t * x  # (the public function gave ``t`` the promoted dtype where that differs)
    loss = xp.log1p(xp.exp(-z))
    return _reduced(xp, xp.asarray(loss).astype(x.dtype, copy=False), reduction)


def _soft_margin_slope(x, t):
    # -t z / (1 + z) with z = exp(-t x): NaN where z overflows, as torch's formula
    z = (-t * x).exp()
    return -t * z / (z + 1)


def _soft_margin_backward_kernel(xp, g, x, t, *, reduction):
    """g * -t z / (1 + z), z = exp(-t x), in two temporaries (the formula's NaN where z
    overflows included)."""
    z = t * x
    xp.negative(z, out=z)
    xp.exp(z, out=z)
    d = z + 1
    z /= d
    z *= t
    xp.negative(z, out=z)
    z *= g / max(x.size, 1) if reduction == "mean" else g
    return z.astype(x.dtype, copy=False)


# the backward in one call where no graph is built through it (and no mode batches it)
soft_margin_backward_op = Op("soft_margin_loss_backward", _soft_margin_backward_kernel)


def _soft_margin_vjp(g, x, t, *, reduction):
    if (not _dispatch.intercept and x._data.dtype.itemsize >= 4 and x._data.ndim
            and x._data.dtype == t._data.dtype and not _dispatch.differentiable_formula(g, x)):
        return _dispatch.apply(soft_margin_backward_op, (g, x, t),
                               {"reduction": reduction}), None
    return _per_element(g, x, reduction) * _soft_margin_slope(x, t), None


def _soft_margin_jvp(x_dots, x, t, *, reduction, out):
    if x_dots[0] is None:
        return None
    per = _soft_margin_slope(x, t) * x_dots[0]
    return per if reduction == "none" else per.sum() if reduction == "sum" else per.mean()


soft_margin_loss_op = Op("soft_margin_loss", opmath(_soft_margin_kernel), vjp=_soft_margin_vjp,
                         jvp=_soft_margin_jvp)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    reduction = reduction_enum(reduction, size_average, reduce)
    kernel_dtype("log_sigmoid", input)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(dim=input.dim() - 1) / input.shape[-1]
    return _reduce(loss, reduction)


def _margin_input_check(input):
    """The margin losses' shape rule: a vector, a matrix of at least one class (its batch
    may be empty) or a 0-d score."""
    nd, shape = input.dim(), tuple(input.shape)
    if not (nd == 0 or (nd == 1 and shape[0]) or (nd == 2 and shape[1])):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(shape)}")


# NOTE [ The margin losses' order of checks ]
# torch's CPU multi_margin_loss and multilabel_margin_loss check the shapes first (the
# input a vector or a matrix of at least one class, the target's size, the class weights'
# size), then return at once for an empty batch -- whatever the dtypes, an int8 or complex
# input included -- and only then dispatch on the input's dtype (NotImplementedError for
# integers) and read the target as int64 (its range first, for multilabel: min/max, which
# refuse a complex target). An empty batch's loss is the empty vector under 'none'; under
# 'sum' and 'mean' torch hands back its output's uninitialised memory, where ember gives the
# sum and mean of no losses (0, and NaN for a floating input).
def _margin_of_no_rows(x, reduction):
    """The loss of an empty batch ``x`` (n == 0) in x's dtype, joined to x's graph."""
    losses = x[:, 0] * 0 if x.dtype.is_floating_point or x.dtype.is_complex else \
        x.new_zeros((0,))
    if reduction == "none":
        return losses
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        return x.new_zeros(())
    return losses.sum() if reduction == "sum" else losses.sum() / 0


def _host_values(t):
    return t.detach().numpy() if t.is_cpu else t.detach().cpu().numpy()


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Hinge loss between each target class (listed in ``target`` up to the first -1) and
    every non-target class."""
    reduction = reduction_enum(reduction, size_average, reduce)
    # NOTE [ The margin losses' order of checks ]
    _margin_input_check(input)
    one = input.dim() <= 1
    x = input.reshape(1, -1) if one else input
    t = target.reshape(1, -1) if one else target
    if t.shape != x.shape:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    if x.numel() == 0:
        return _margin_of_no_rows(x, reduction)
    n, c = x.shape
    if target.is_complex():  # (torch reads the range with min/max, which refuse complex)
        raise NotImplementedError(f'"min_all" not implemented for '
                                  f"'{target.dtype.scalar_name}'")
    tn = _host_values(t)
    if tn.size and (tn.min() < -1 or tn.max() >= c):  # every entry, past the first -1 too
        raise RuntimeError("argument #2 'target' is out of range")
    kernel_dtype("multilabel_margin_loss", input)
    if target.dtype.name != "int64":  # torch's message: class indices must be int64
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.scalar_name}")
    is_target = np.zeros((n, c), dtype=bool)
    valid = np.zeros((n, c), dtype=bool)
    for i in range(n):
        for j in range(c):
            if tn[i, j] < 0:
                break
            is_target[i, tn[i, j]] = True
            valid[i, j] = True
    # the masks are built on the host, then joined to x on its device
    safe_t = from_numpy(np.where(valid, tn, 0)).to(x.device)
    x_target = x.gather(1, safe_t)  # (n, c): the score of each listed target
    diff = 1 - x_target.unsqueeze(2) + x.unsqueeze(1)  # (n, j, i)
    pairs = from_numpy(valid[:, :, None] & ~is_target[:, None, :]).to(x.device)
    # the hinge of each (target, non-target) pair taken where it is positive (torch's
    # ``z > 0``): no gradient at the kink, and a NaN or a target's infinite score counts
    # for nothing
    loss = where((diff > 0) & pairs, diff, 0.0).sum((1, 2)) / c
    if one:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    reduction = reduction_enum(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    _not_differentiable("multi_margin_loss", weight=weight)
    # NOTE [ The margin losses' order of checks ]
    _margin_input_check(input)
    one = input.dim() <= 1
    x = input.reshape(1, -1) if one else input
    t = target.reshape(-1)
    c = x.shape[1]
    if target.dim() > 1 or t.shape[0] != x.shape[0]:
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of "
            f"input samples (batch size). Expected target size [{x.shape[0]}], but got "
            f"{list(target.shape)}. Input has shape {list(input.shape)}.")
    if weight is not None and (weight.dim() > 1 or weight.numel() != c):
        raise RuntimeError(f"inconsistent weight size, expected {c} but got "
                           f"{list(weight.shape)}")
    if x.numel() == 0:
        return _margin_of_no_rows(x, reduction)
    kernel_dtype("multi_margin_loss", input)
    if target.dtype.name != "int64":  # torch's message: class indices must be int64
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.scalar_name}")
    # (a meta tensor has no values to check, nor has one example's target under vmap)
    if t.numel() and holds_values(t._data) and not _dispatch.intercept:
        tn = _host_values(t)
        if tn.min() < 0 or tn.max() >= c:
            raise RuntimeError("target out of range")
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.scalar_name} but found "
                           f"{weight.dtype.scalar_name}")
    x_y = x.gather(1, t.unsqueeze(1))
    z = margin - x_y + x
    pos = z > 0
    z = where(pos, z, 0.0)  # (torch's ``z > 0``, as multilabel_margin_loss)
    if p == 2:
        z = z * z
    if weight is not None:
        # the class weight scales the positive hinges only, as torch's kernel (an infinite
        # weight leaves a zero hinge 0, not NaN)
        z = where(pos, z * weight[t].unsqueeze(1), 0.0)
    not_y = arange(c, device=t.device).unsqueeze(0) != t.unsqueeze(1)
    loss = where(not_y, z, 0.0).sum(1) / c  # (the target's own column is skipped)
    if one:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


@public(method=False)
@recorded_as("aten::cosine_similarity", ("x1", "x2", "dim", "eps"))
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim``:
    ``x1 . x2 / sqrt(max(|x1|^2 |x2|^2, eps^2))`` (the inputs broadcast).

    Args:
        x1, x2: tensors broadcastable to one shape.
        dim: the dimension holding the vectors.
        eps: the smallest norm product, against division by zero.

    Returns:
        The similarities, with ``dim`` removed.

    Example:
        >>> import ember
        >>> ember.cosine_similarity(ember.tensor([[1.0, 0.0]]), ember.tensor([[1.0, 1.0]]))
        tensor([0.7071])
    """
    common = _result_dtype(x1, x2)
    if not common.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{common.scalar_name}")
    from ..autograd.grad_mode import no_grad

    # integers (and bools) join the common dtype; floating inputs keep their own until the
    # product, as in PyTorch (a float16 vector is normalised in float16)
    if not x1.is_floating_point():
        x1 = x1.to(common)
    if not x2.is_floating_point():
        x2 = x2.to(common)
    if x1.shape != x2.shape:  # broadcast first: a size-1 dim must not stand for a vector
        x1, x2 = broadcast_tensors(x1, x2)
    # each vector divided by its norm (at least eps) first, as torch: a norm that overflows
    # to inf gives 0, not inf / inf. PyTorch clamps the norms in place outside autograd, so
    # their gradient is the unclamped norm's
    n1 = x1.norm(2, dim, keepdim=True).clone()
    n2 = x2.norm(2, dim, keepdim=True).clone()
    with no_grad():
        n1.clamp_(min=eps)
        n2.clamp_(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


@public(method=False)
@recorded_as("aten::pairwise_distance", ("x1", "x2", "p", "eps", "keepdim"))
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm distance between matching rows: ``||x1 - x2 + eps||_p`` over the last dim.

    Args:
        x1, x2: tensors broadcastable to one shape, vectors along the last dim.
        p: the norm degree.
        eps: added to the difference, against a zero norm's infinite gradient.
        keepdim: keep the last dim with size 1.

    Returns:
        The distances.

    Differences from PyTorch:
        Distances that overflow: ember returns inf where PyTorch returns the largest finite value
        (PyTorch scales before squaring).

    Example:
        >>> import ember
        >>> ember.pairwise_distance(ember.tensor([[0.0, 0.0]]), ember.tensor([[3.0, 4.0]]))
        tensor([5.0000])
    """
    # (torch's nodes: a Scalar add, then norm's ScalarOpt_dim overload; NOTE [ Node names ])
    d = _node_names.rename(x1 - x2 + eps, "AddBackward1")
    return _node_names.rename(d.norm(p=p, dim=-1, keepdim=keepdim), "NormBackward1")


@public(method=False)
@recorded_as("aten::pdist", ("input", "p"))
def pdist(input, p=2.0):
    """Distances between all pairs of rows of an (N, M) input: the upper triangle of the
    distance matrix, row by row, ``N * (N - 1) / 2`` values.

    Args:
        input: an (N, M) tensor.
        p: the norm degree.

    Returns:
        A 1-D tensor of the distances.

    Example:
        >>> import ember
        >>> ember.pdist(ember.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]]))
        tensor([5.0000, 1.0000, 4.2426])
    """
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if input.dtype.category != 2:
        raise RuntimeError("pdist only supports floating-point dtypes")
    n = input.shape[0]
    if n < 2 or input.shape[1] == 0:
        # no pairs, or empty rows: PyTorch fills zeros without its kernel (so any float dtype)
        return input.sum() * input.new_zeros(n * (n - 1) // 2)
    if input.dtype.itemsize == 2:
        raise NotImplementedError(f'"pdist" not implemented for \'{input.dtype.scalar_name}\'')
    from .misc import cdist

    # one cdist per pair (a batch of 1 x 1 distance matrices): cdist's kernel and gradient
    # are torch's pdist's (ties of the inf-norm not split, p = 0 zero gradients, NaN kept)
    i, j = triu_indices(n, n, 1, device=input.device)
    d = cdist(input[i].unsqueeze(1), input[j].unsqueeze(1), p, "donot_use_mm_for_euclid_dist")
    return d.reshape(-1)


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    reduction = reduction_enum(reduction, size_average, reduce)
    eps = 1e-12
    prod = (input1 * input2).sum(-1)
    mag = (_node_names.rename((input1 * input1).sum(-1) + eps, "AddBackward1")
           * _node_names.rename((input2 * input2).sum(-1) + eps, "AddBackward1"))
    cos = prod / mag.sqrt()
    # PyTorch's two selections, each against zeros: a target other than 1 and -1 gives 0
    # even where cos is NaN
    zeros = full_like(cos, 0)
    # (torch's nodes: ``1 - cos`` a Tensor sub, ``cos - margin`` a Scalar one)
    loss = (where(target == 1, _node_names.rename(1 - cos, "SubBackward0"), zeros)
            + where(target == -1, _node_names.rename(cos - margin, "SubBackward1").clamp_min(0),
                    zeros))
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    reduction = reduction_enum(reduction, size_average, reduce)
    dims = {anchor.dim(), positive.dim(), negative.dim()}
    if len(dims) != 1:
        raise RuntimeError(
            f"The anchor, positive, and negative tensors are expected to have the same number "
            f"of dimensions, but got: anchor {anchor.dim()}D, positive {positive.dim()}D, and "
            f"negative {negative.dim()}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    shifted = _node_names.rename(margin + d_pos, "AddBackward1")  # (torch's Scalar add)
    return _reduce((shifted - d_neg).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than "
                         f"0, got {margin} instead")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = minimum(d_neg, dist(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction_enum(reduction))


# ------------------------------------------------------------------------------------------------
# CTC: a fused op (alpha-beta recursion in log space); its gradient is computed with the loss


# NOTE [ CTC arithmetic as torch's CPU kernel ]
# The recursions run in the input's own dtype with torch's operations, in its order, so that
# log-probabilities outside (-inf, 0] (+inf, the float maximum, NaN) give its numbers: each
# step is ``log(exp(a1 - m) + exp(a2 - m) + exp(a3 - m)) + m + lp`` with ``m`` the first of the
# largest (0 when all are -inf); the sums of alpha * beta per class are accumulated pairwise
# over positions s from the last to the first (at the last time step only the two end
# positions are assigned, the label's after the blank's); and the gradient is
# ``exp(lp) - exp(ab + nll - lp)``, NaN wherever nll is inf or lp is -inf (an unused class with
# a log-probability of -inf has a NaN gradient in torch too).


def _ctc_step(x1, x2, x3, lp_t):
    m = np.where(x2 > x1, x2, x1)
    m = np.where(x3 > m, x3, m)
    m = np.where(m == -np.inf, 0, m).astype(x1.dtype)
    return np.log(np.exp(x1 - m) + np.exp(x2 - m) + np.exp(x3 - m)) + m + lp_t


def _log_add(acc, x):
    """torch's running log-sum of one more term: the term itself onto -inf."""
    m = np.where(acc < x, x, acc)
    both = np.log(np.exp(acc - m) + np.exp(x - m)) + m
    return np.where(acc == -np.inf, x, both)


def _ctc_one(lp, target, blank):
    """Negative log-likelihood and its gradient wrt lp (T, C) for one sequence, in lp's dtype
    (NOTE [ CTC arithmetic as torch's CPU kernel ])."""
    t_len, c = lp.shape
    neg = lp.dtype.type(-np.inf)
    if t_len == 0:  # nothing to align: certain for an empty target, impossible otherwise
        return (-lp.dtype.type(0) if len(target) == 0 else -neg), np.zeros_like(lp)
    ext = np.full(2 * len(target) + 1, blank, dtype=np.int64)
    ext[1::2] = target
    s = len(ext)
    ninf = np.full(s, neg)
    # position s may also be reached from s - 2 (by beta: s + 2) when the two classes differ
    skip = np.zeros(s, dtype=bool)
    skip[2:] = ext[2:] != ext[:-2]
    alpha = np.full((t_len, s), neg)
    alpha[0, 0] = lp[0, blank]
    if s > 1:
        alpha[0, 1] = lp[0, ext[1]]
    for t in range(1, t_len):
        prev = alpha[t - 1]
        x2 = np.concatenate([ninf[:1], prev[:-1]])
        x3 = np.where(skip, np.concatenate([ninf[:2], prev[:-2]]), neg)
        alpha[t] = _ctc_step(prev, x2, x3, lp[t, ext])
    if s == 1:
        nll = -alpha[-1, 0]
    else:
        l1, l2 = alpha[-1, -1], alpha[-1, -2]
        m = l2 if l1 < l2 else l1
        m = lp.dtype.type(0) if m == -np.inf else m
        nll = -(np.log(np.exp(l1 - m) + np.exp(l2 - m)) + m)
    beta = np.full((t_len, s), neg)
    acc = np.full((t_len, c), neg)
    beta[-1, -1] = lp[-1, blank]
    acc[-1, blank] = alpha[-1, -1] + beta[-1, -1]
    if s > 1:
        beta[-1, -2] = lp[-1, ext[-2]]
        acc[-1, ext[-2]] = alpha[-1, -2] + beta[-1, -2]
    skip_b = np.concatenate([skip[2:], [False, False]])
    for t in range(t_len - 2, -1, -1):
        nxt = beta[t + 1]
        x2 = np.concatenate([nxt[1:], ninf[:1]])
        x3 = np.where(skip_b, np.concatenate([nxt[2:], ninf[:2]]), neg)
        beta[t] = _ctc_step(nxt, x2, x3, lp[t, ext])
    ab = alpha[:-1] + beta[:-1]
    for k in range(s - 1, -1, -1):
        acc[:-1, ext[k]] = _log_add(acc[:-1, ext[k]], ab[:, k])
    return nll, np.exp(lp) - np.exp(acc + nll - lp)


def _ctc_kernel(xp, log_probs, targets, in_lens, tg_lens, *, blank, reduction,
                zero_infinity):
    # a sequential dynamic programme: on the host (NOTE [ Portable array code ])
    lp = to_host(xp, log_probs)
    t_max, n, c = lp.shape
    tg = to_host(xp, targets)
    in_lens, tg_lens = to_host(xp, in_lens), to_host(xp, tg_lens)
    losses = np.zeros(n, dtype=lp.dtype)
    grads = np.zeros_like(lp)
    offset = 0
    with np.errstate(all="ignore"):
        for b in range(n):
            t_len = int(in_lens[b])
            l_len = int(tg_lens[b])
            if tg.ndim == 2:
                target = tg[b, :l_len]
            else:
                target = tg[offset:offset + l_len]
                offset += l_len
            loss, grad = _ctc_one(lp[:t_len, b], target, blank)
            if zero_infinity and loss == np.inf:  # NaN stays, as torch's where(res == inf)
                loss, grad = 0.0, np.zeros_like(grad)
            losses[b] = loss
            grads[:t_len, b] = grad
        if reduction == "mean":
            denom = np.maximum(np.asarray(tg_lens), 1).astype(lp.dtype)
            out = (losses / denom).mean()
            grads = grads * ((1 / denom) / n)[None, :, None]
        elif reduction == "sum":
            out = losses.sum()
        else:
            out = losses
    dt = log_probs.dtype
    return xp.asarray(np.asarray(out, dtype=dt)), xp.asarray(grads.astype(dt))


def _ctc_vjp(grads, _lp, _targets, _il, _tl, *, blank, reduction, zero_infinity, out):
    g = grads[0]
    grad = out[1]
    if reduction == "none":
        return g.reshape(1, -1, 1) * grad, None, None, None
    return g * grad, None, None, None


ctc_op = Op("ctc_loss", _ctc_kernel, vjp=_ctc_vjp, nondiff_outputs=(1,))
ctc_op.node_name = "CtcLossBackward0"
ctc_op.saved_outputs = (1,)  # the formula reads the gradient, never the loss itself


@ctc_op.defjvp
def _ctc_jvp(x_dots, _lp, _targets, _il, _tl, *, blank, reduction, zero_infinity, out):
    # the loss is a scalar per sequence (or one scalar): its tangent is the kernel's gradient
    # (of the reduced loss) contracted with the log-probabilities' tangent
    prod = out[1] * x_dots[0]
    return (prod.sum((0, 2)) if reduction == "none" else prod.sum()), None


def _ctc_check(log_probs, targets, il, tl, blank):
    """torch's argument checks of CTC, in its order: (T, N, C) non-empty log-probabilities, one
    length per sequence, 1-d concatenated or (N, S) padded targets long enough for the target
    lengths, input lengths within T. Target classes themselves are not checked (torch
    does not check them either)."""
    where = " (while checking arguments for ctc_loss_allocate_outputs)"
    if log_probs.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    if log_probs.dim() != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {log_probs.dim()}-dimensional "
                           f"tensor for argument #1 'log_probs'{where}")
    _t_max, n, c = log_probs.shape
    if not (holds_values(il._data) and holds_values(tl._data)):  # meta: shape checks only
        if il.numel() != n:
            raise RuntimeError("input_lengths must be of size batch_size")
        if not 0 <= blank < c:
            raise RuntimeError("blank must be in label range")
        if tl.numel() != n:
            raise RuntimeError("target_lengths must be of size batch_size")
        return
    ins = [int(v) for v in il.detach().reshape(-1).tolist()]
    tgs = [int(v) for v in tl.detach().reshape(-1).tolist()]
    if len(ins) != n:
        raise RuntimeError("input_lengths must be of size batch_size")
    if not 1 <= targets.dim() <= 2:
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {targets.dim()}-dimensional "
                           f"tensor for argument #2 'targets'{where}")
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    if len(tgs) != n:
        raise RuntimeError("target_lengths must be of size batch_size")
    for v in tgs:
        if v < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got "
                               f"value {v}{where}")
    want = sum(tgs) if targets.dim() == 1 else n
    if targets.shape[0] != want:
        raise RuntimeError(f"Expected tensor to have size {want} at dimension 0, but got size "
                           f"{targets.shape[0]} for argument #2 'targets'{where}")
    if targets.dim() == 2 and tgs and targets.shape[1] < max(tgs):
        raise RuntimeError(f"Expected tensor to have size at least {max(tgs)} at dimension 1, "
                           f"but got size {targets.shape[1]} for argument #2 'targets'{where}")
    for v in ins:
        if v < 0 or v > log_probs.shape[0]:
            bound = "least 0" if v < 0 else f"most {log_probs.shape[0]}"
            raise RuntimeError(f"Expected input_lengths to have value at {bound}, but got value "
                               f"{v}{where}")


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """Connectionist temporal classification loss of (T, N, C) log-probabilities."""
    reduction = reduction_enum(reduction)
    if log_probs.dim() == 2:
        log_probs = log_probs.unsqueeze(1)
        squeeze = True
    else:
        squeeze = False
    from .._core import dtype as ember_dtype

    lists = [not isinstance(v, Tensor) for v in (input_lengths, target_lengths)]
    if lists[0] != lists[1]:
        raise TypeError("ctc_loss(): input_lengths and target_lengths must both be tensors "
                        "or both be sequences of ints")
    for v in (input_lengths, target_lengths) if lists[0] else ():
        if not isinstance(v, (list, tuple)) or not all(
                isinstance(i, int) and not isinstance(i, bool) for i in v):
            raise TypeError(f"ctc_loss(): lengths must be sequences of ints, got {v!r}")
    il = as_tensor(input_lengths) if not isinstance(input_lengths, Tensor) else input_lengths
    tl = as_tensor(target_lengths) if not isinstance(target_lengths, Tensor) else \
        target_lengths
    for t, what in ((il, "input_lengths"), (tl, "target_lengths")):
        if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype.name == "bool":
            raise RuntimeError(f"{what} must be integral")
    kernel_dtype("ctc_loss", log_probs)
    _ctc_check(log_probs, targets, il, tl, blank)
    # lengths (and targets) may come as lists or CPU tensors, as torch allows on any device
    dev = log_probs.device
    il, tl = il.reshape(-1).to(dev), tl.reshape(-1).to(dev)
    if targets.dtype.name != "int64":  # torch reads any target dtype as class indices
        targets = targets.real if targets.dtype.is_complex else targets
        targets = targets.to(dtype=ember_dtype.int64)
    targets = targets.to(dev)
    loss, _ = _dispatch.apply(ctc_op, (log_probs, targets, il, tl),
                              {"blank": blank, "reduction": reduction,
                               "zero_infinity": zero_infinity})
    if squeeze and reduction == "none":
        loss = loss.squeeze(0)
    return loss


# ------------------------------------------------------------------------------------------------
# top-level forms (torch.<name>): ``reduction`` is the integer enum
#
# NOTE [ Top-level reduction default ]
# The schemas of these ops say ``reduction=Mean``, but PyTorch's Python binding does not
# parse that default and passes 0: ``torch.kl_div(x, t)`` returns the unreduced terms.
# Programs written against torch see that, so the defaults here are 0 (none) as well.


_REDUCTION_NAMES = ("none", "mean", "sum")


def _reduction_name(reduction):
    if isinstance(reduction, str):
        return reduction_enum(reduction)
    if reduction not in (0, 1, 2):
        raise RuntimeError(f"{reduction} is not a valid value for reduction")
    return _REDUCTION_NAMES[reduction]


@public(name="binary_cross_entropy_with_logits", method=False)
def _bce_with_logits_top(input, target, weight=None, pos_weight=None, reduction=0):
    """Binary cross-entropy of logits against targets in [0, 1], computed stably.

    Args:
        input: logits.
        target: probabilities, shaped like ``input``.
        weight: a rescaling weight broadcast over the loss.
        pos_weight: a weight of the positive term, one per class (last dim).
        reduction: 0 none (the default; NOTE [ Top-level reduction default ]), 1 mean, 2 sum.

    Returns:
        The loss.

    Differences from PyTorch:
        A ``weight`` that requires grad: PyTorch raises RuntimeError (the function is not
        differentiable with respect to ``weight``); ember computes the loss and gives ``weight`` a
        gradient.

    Example:
        >>> import ember
        >>> ember.binary_cross_entropy_with_logits(ember.tensor([0.0]), ember.tensor([1.0]))
        tensor([0.6931])
    """
    return binary_cross_entropy_with_logits(input, target, weight,
                                            reduction=_reduction_name(reduction),
                                            pos_weight=pos_weight)


@public(name="cosine_embedding_loss", method=False)
def _cosine_embedding_loss_top(input1, input2, target, margin=0.0, reduction=0):
    """``1 - cos(x1, x2)`` where ``target`` is 1, ``max(0, cos(x1, x2) - margin)`` where -1.

    Args:
        input1, input2: (N, D) or (D,) tensors.
        target: 1 or -1 per pair.
        margin: the margin of dissimilar pairs.
        reduction: 0 none, 1 mean, 2 sum.

    Returns:
        The loss.

    Differences from PyTorch:
        bfloat16 NaN, infinite and near-overflow inputs: ember can return NaN for a pair where
        PyTorch returns 0.

    Example:
        >>> import ember
        >>> x = ember.tensor([[1.0, 0.0]])
        >>> ember.cosine_embedding_loss(x, x, ember.tensor([1.0]))
        tensor([0.])
    """
    return cosine_embedding_loss(input1, input2, target, margin,
                                 reduction=_reduction_name(reduction))


@public(name="hinge_embedding_loss", method=False)
def _hinge_embedding_loss_top(input, target, margin=1.0, reduction=0):
    """``input`` where ``target`` is 1, ``max(0, margin - input)`` where it is -1.

    Args:
        input: distances.
        target: 1 or -1, shaped like ``input``.
        margin: the margin of the -1 terms.
        reduction: 0 none, 1 mean, 2 sum.

    Returns:
        The loss.

    Example:
        >>> import ember
        >>> ember.hinge_embedding_loss(ember.tensor([0.3, 0.4]), ember.tensor([1.0, -1.0]))
        tensor([0.3000, 0.6000])
    """
    return hinge_embedding_loss(input, target, margin, reduction=_reduction_name(reduction))


@public(name="kl_div", method=False)
def _kl_div_top(input, target, reduction=0, *, log_target=False):
    """Kullback-Leibler divergence terms ``target * (log target - input)``, ``input`` being
    log-probabilities (``log_target``: ``target`` is too).

    Args:
        input: log-probabilities.
        target: probabilities (log-probabilities with ``log_target``).
        reduction: 0 none, 1 mean (over every element), 2 sum.
        log_target: ``target`` holds log-probabilities.

    Returns:
        The divergence.

    Example:
        >>> import ember
        >>> p = ember.tensor([0.5, 0.5])
        >>> ember.kl_div(p.log(), p, 2)
        tensor(0.)
    """
    if input.is_complex() or target.is_complex():
        raise RuntimeError("kl_div: Complex inputs not supported.")
    if not (input.is_floating_point() and target.is_floating_point()):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = xlogy(target, target) - target * input
    return _reduce(loss, _reduction_name(reduction))


@public(name="margin_ranking_loss", method=False)
def _margin_ranking_loss_top(input1, input2, target, margin=0.0, reduction=0):
    """``max(0, -target * (input1 - input2) + margin)``.

    Args:
        input1, input2: scores.
        target: 1 where ``input1`` should rank higher, -1 where ``input2`` should.
        margin: the margin.
        reduction: 0 none, 1 mean, 2 sum.

    Returns:
        The loss.

    Example:
        >>> import ember
        >>> ember.margin_ranking_loss(ember.tensor([1.0]), ember.tensor([2.0]),
        ...                           ember.tensor([1.0]))
        tensor([1.])
    """
    return margin_ranking_loss(input1, input2, target, margin,
                               reduction=_reduction_name(reduction))


@public(name="poisson_nll_loss", method=False)
def _poisson_nll_loss_top(input, target, log_input, full, eps, reduction):
    """Negative log-likelihood of ``target`` under a Poisson distribution of rate ``input``
    (``exp(input)`` with ``log_input``); every argument is required, as in PyTorch.

    Args:
        input: rates, or log-rates with ``log_input``.
        target: counts.
        log_input: ``input`` holds log-rates.
        full: add the Stirling approximation of ``log(target!)``.
        eps: added to the rate before its log when ``log_input`` is False.
        reduction: 0 none, 1 mean, 2 sum.

    Returns:
        The loss.

    Differences from PyTorch:
        NaN, infinite and near-overflow inputs: ember can return NaN where PyTorch returns -inf.

    Example:
        >>> import ember
        >>> ember.poisson_nll_loss(ember.tensor([0.0]), ember.tensor([1.0]), True, False,
        ...                        1e-8, 1)
        tensor(1.)
    """
    return poisson_nll_loss(input, target, log_input, full, eps=eps,
                            reduction=_reduction_name(reduction))


@public(name="triplet_margin_loss", method=False)
def _triplet_margin_loss_top(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6,
                             swap=False, reduction=0):
    """``max(0, d(a, p) - d(a, n) + margin)`` with ``d`` the pairwise p-norm distance.

    Args:
        anchor, positive, negative: (N, D) or (D,) tensors.
        margin: the margin.
        p: the norm degree.
        eps: added to differences, as in :func:`pairwise_distance`.
        swap: use ``min(d(a, n), d(p, n))`` as the negative distance.
        reduction: 0 none, 1 mean, 2 sum.

    Returns:
        The loss.

    Example:
        >>> import ember
        >>> a = ember.tensor([[0.0, 0.0]])
        >>> ember.triplet_margin_loss(a, a, a + 3, eps=0.0)
        tensor([0.])
    """
    return triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                               reduction=_reduction_name(reduction))


@public(name="ctc_loss", method=False)
def _ctc_loss_top(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0,
                  zero_infinity=False):
    """Connectionist temporal classification loss of (T, N, C) log-probabilities.

    Args:
        log_probs: (T, N, C) or (T, C) log-probabilities.
        targets: (N, S) padded or concatenated 1-D target classes.
        input_lengths, target_lengths: the lengths per sample (lists or tensors).
        blank: the blank class.
        reduction: 0 none, 1 mean (each loss divided by its target length), 2 sum.
        zero_infinity: replace infinite losses (impossible alignments) and their
            gradients by zero.

    Returns:
        The loss.

    Differences from PyTorch:
        Some inconsistent arguments (lengths that do not fit an empty ``log_probs``) raise
        ValueError in ember where PyTorch raises RuntimeError.

    Example:
        >>> import ember
        >>> lp = ember.zeros(2, 1, 2).log_softmax(2)
        >>> ember.ctc_loss(lp, ember.tensor([[1]]), [2], [1], 0, 2)
        tensor(0.2877)
    """
    if not isinstance(reduction, int) or isinstance(reduction, bool):
        raise TypeError(f"ctc_loss(): argument 'reduction' must be int, not "
                        f"{type(reduction).__name__}")
    return ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                    _reduction_name(reduction), zero_infinity)
