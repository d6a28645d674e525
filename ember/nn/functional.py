"""``ember.nn.functional``: the math behind the layers, as functions.

Heavy ops (linear, convolution, pooling, normalisation, softmax, the main losses, embedding)
are fused registry ops in ``ember/_ops/nn_*.py``; the rest are short compositions of ember
ops.
"""

from __future__ import annotations

from .._ops import nn_conv as _conv
from .._ops import nn_pool as _pool
from .._ops.nn_norm import (  # noqa: F401
    batch_norm, group_norm, instance_norm, layer_norm, local_response_norm, rms_norm,
)
from .._ops.nn_ops import (  # noqa: F401
    cross_entropy, embedding, gelu, linear, log_softmax, mse_loss, nll_loss, reduction_enum,
    relu, silu, softmax,
)
from .._ops.nn_pad import pad  # noqa: F401

# -- convolution ---------------------------------------------------------------------------------


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv.conv(1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv.conv(2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv.conv(3, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return _conv.conv_transpose(1, input, weight, bias, stride, padding, output_padding,
                                groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return _conv.conv_transpose(2, input, weight, bias, stride, padding, output_padding,
                                groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return _conv.conv_transpose(3, input, weight, bias, stride, padding, output_padding,
                                groups, dilation)


# -- pooling -------------------------------------------------------------------------------------


def _max_pool(nd):
    def fn(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
           return_indices=False):
        return _pool.max_pool(nd, input, kernel_size, stride, padding, dilation, ceil_mode,
                              return_indices)

    fn.__name__ = f"max_pool{nd}d"
    fn.__doc__ = f"{nd}-d max pooling (``return_indices`` also gives the argmax positions)."
    return fn


max_pool1d, max_pool2d, max_pool3d = _max_pool(1), _max_pool(2), _max_pool(3)


def max_pool1d_with_indices(*args, **kwargs):
    return max_pool1d(*args, **{**kwargs, "return_indices": True})


def max_pool2d_with_indices(*args, **kwargs):
    return max_pool2d(*args, **{**kwargs, "return_indices": True})


def max_pool3d_with_indices(*args, **kwargs):
    return max_pool3d(*args, **{**kwargs, "return_indices": True})


def _avg_pool(nd):
    if nd == 1:
        def fn(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
            return _pool.avg_pool(1, input, kernel_size, stride, padding, ceil_mode,
                                  count_include_pad)
    else:
        def fn(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
            return _pool.avg_pool(nd, input, kernel_size, stride, padding, ceil_mode,
                                  count_include_pad, divisor_override)
    fn.__name__ = f"avg_pool{nd}d"
    fn.__doc__ = f"{nd}-d average pooling."
    return fn


avg_pool1d, avg_pool2d, avg_pool3d = _avg_pool(1), _avg_pool(2), _avg_pool(3)


def _max_unpool(nd):
    def fn(input, indices, kernel_size, stride=None, padding=0, output_size=None):
        return _pool.max_unpool(nd, input, indices, kernel_size, stride, padding, output_size)

    fn.__name__ = f"max_unpool{nd}d"
    return fn


max_unpool1d, max_unpool2d, max_unpool3d = _max_unpool(1), _max_unpool(2), _max_unpool(3)


def adaptive_avg_pool1d(input, output_size):
    return _pool.adaptive_avg_pool(1, input, output_size)


def adaptive_avg_pool2d(input, output_size):
    return _pool.adaptive_avg_pool(2, input, output_size)


def adaptive_avg_pool3d(input, output_size):
    return _pool.adaptive_avg_pool(3, input, output_size)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _pool.adaptive_max_pool(1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _pool.adaptive_max_pool(2, input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    return _pool.adaptive_max_pool(3, input, output_size, return_indices)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(kernel_size).pow(1.0 / norm_type)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
    out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(kh * kw).pow(1.0 / norm_type)


# -- activations ---------------------------------------------------------------------------------


def relu_(input):
    return input.relu_()


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return input.clamp_(min_val, max_val) if inplace else input.clamp(min_val, max_val)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def _where_pos(input, neg, inplace):
    from .. import where

    out = where(input > 0, input, neg)
    return input.copy_(out) if inplace else out


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _where_pos(input, input * negative_slope, inplace)


def elu(input, alpha=1.0, inplace=False):
    return _where_pos(input, alpha * input.expm1(), inplace)


def selu(input, inplace=False):
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    out = scale * _where_pos(input, alpha * input.expm1(), False)
    return input.copy_(out) if inplace else out


def celu(input, alpha=1.0, inplace=False):
    return _where_pos(input, alpha * (input / alpha).expm1(), inplace)


def mish(input, inplace=False):
    out = input * softplus(input).tanh()
    return input.copy_(out) if inplace else out


def softplus(input, beta=1.0, threshold=20.0):
    from .. import where

    scaled = input * beta
    return where(scaled > threshold, input, (scaled.exp().log1p()) / beta)


def softsign(input):
    return input / (1 + input.abs())


def softshrink(input, lambd=0.5):
    from .. import where

    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd,
                                                     input * 0))


def hardshrink(input, lambd=0.5):
    from .. import where

    return where(input.abs() > lambd, input, input * 0)


def tanhshrink(input):
    return input - input.tanh()


def threshold(input, threshold, value, inplace=False):
    from .. import where

    out = where(input > threshold, input, value)
    return input.copy_(out) if inplace else out


def hardsigmoid(input, inplace=False):
    out = (input / 6 + 0.5).clamp(0, 1)
    return input.copy_(out) if inplace else out


def hardswish(input, inplace=False):
    out = input * (input + 3).clamp(0, 6) / 6
    return input.copy_(out) if inplace else out


def logsigmoid(input):
    return -softplus(-input)


def glu(input, dim=-1):
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if input.shape[dim] % 2:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {dim % input.dim()} is size "
            f"{input.shape[dim]}")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def prelu(input, weight):
    shape = [1] * input.dim()
    if input.dim() >= 2 and weight.numel() > 1:
        shape[1] = weight.numel()
    return _where_pos(input, input * weight.reshape(shape), False)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    if training:
        from .. import empty_like

        a = empty_like(input).uniform_(lower, upper)
        return _where_pos(input, input * a, inplace)
    return leaky_relu(input, (lower + upper) / 2, inplace)


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return softmax(-input, dim, dtype)


# -- dropout -------------------------------------------------------------------------------------


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input.mul_(0) if inplace else input * 0
    from .. import empty_like

    mask = empty_like(input).bernoulli_(1 - p).div_(1 - p)
    return input.mul_(mask) if inplace else input * mask


def _feature_dropout(input, p, training, inplace, nd, name):
    _check_p(p)
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}: Expected {nd + 1}D or {nd + 2}D input, but received a "
                           f"{input.dim()}D input")
    if not training or p == 0.0:
        return input
    from .. import empty

    batched = input.dim() == nd + 2
    shape = tuple(input.shape[:2 if batched else 1]) + (1,) * nd
    mask = empty(*shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)
    mask = mask.div_(1 - p) if p < 1 else mask
    return input.mul_(mask) if inplace else input * mask


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 1, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 2, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 3, "dropout3d")


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU activations' mean and variance."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    from .. import empty_like

    alpha_p = -1.7580993408473766
    keep = empty_like(input).bernoulli_(1 - p)
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    out = (input * keep + alpha_p * (1 - keep)) * a + b
    return input.copy_(out) if inplace else out


# -- losses (compositions) -------------------------------------------------------------------------

from ._loss_functions import (  # noqa: E402, F401
    binary_cross_entropy, binary_cross_entropy_with_logits, cosine_embedding_loss,
    cosine_similarity, ctc_loss, gaussian_nll_loss, hinge_embedding_loss, huber_loss, kl_div,
    l1_loss, margin_ranking_loss, multi_margin_loss, multilabel_margin_loss,
    multilabel_soft_margin_loss, pairwise_distance, poisson_nll_loss, smooth_l1_loss,
    soft_margin_loss, triplet_margin_loss, triplet_margin_with_distance_loss,
)


# -- attention -------------------------------------------------------------------------------------

from .._ops.nn_attention import scaled_dot_product_attention  # noqa: E402, F401
from ._attention import multi_head_attention_forward  # noqa: E402, F401


# -- resampling, shuffles and the rest -------------------------------------------------------------

from .._ops.nn_sampling import (  # noqa: E402, F401
    affine_grid, channel_shuffle, fold, grid_sample, interpolate, pixel_shuffle,
    pixel_unshuffle, unfold,
)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def one_hot(tensor, num_classes=-1):
    """(*,) int64 class indices -> (*, num_classes) int64 one-hot rows."""
    from .. import arange, int64

    if tensor._data.dtype.kind not in "iu":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max()) + 1
    if tensor.numel() and (int(tensor.min()) < 0 or int(tensor.max()) >= num_classes):
        raise RuntimeError("Class values must be smaller than num_classes." if
                           int(tensor.max()) >= num_classes else
                           "Class values must be non-negative.")
    return (tensor.unsqueeze(-1) == arange(num_classes, device=tensor.device)).to(int64)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim``."""
    denom = input.norm(p=p, dim=dim, keepdim=True).clamp(min=eps).expand_as(input)
    r = input / denom
    return r if out is None else out.copy_(r)


def pdist(input, p=2):
    """Distances between all pairs of rows of a (N, M) input (upper triangle, row-major)."""
    from .. import triu_indices

    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    n = input.shape[0]
    i, j = triu_indices(n, n, 1, device=input.device)
    return (input[i] - input[j]).norm(p=p, dim=1)


def bilinear(input1, input2, weight, bias=None):
    """``y_k = x1^T W_k x2 + b_k`` for weight (out, in1, in2)."""
    from .. import einsum

    y = einsum("...i,kij,...j->...k", input1, weight, input2)
    return y + bias if bias is not None else y


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """Sums, means or maxima of bags of embeddings (bags given by rows of a 2-D input, or
    by ``offsets`` into a 1-D input)."""
    from .. import stack, tensor

    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub.")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences.")
        n, length = input.shape
        flat = input.reshape(-1)
        starts = list(range(0, n * length, length))
        psw = per_sample_weights.reshape(-1) if per_sample_weights is not None else None
    else:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        flat = input
        starts = offsets.tolist()
        if include_last_offset:
            starts = starts[:-1]
        psw = per_sample_weights
    bounds = starts + [flat.shape[0]] if not include_last_offset or input.dim() == 2 else \
        starts + [int(offsets[-1])]
    rows = embedding(flat, weight, padding_idx, max_norm, norm_type)
    if psw is not None:
        rows = rows * psw.unsqueeze(1)
    keep = None
    if padding_idx is not None:
        keep = (flat != (padding_idx % weight.shape[0])).to(weight.dtype).unsqueeze(1)
        rows = rows * keep
    bags = []
    for b in range(len(starts)):
        lo, hi = bounds[b], bounds[b + 1]
        seg = rows[lo:hi]
        if hi <= lo:
            bags.append(weight.new_zeros(weight.shape[1]))
        elif mode == "sum":
            bags.append(seg.sum(0))
        elif mode == "mean":
            count = keep[lo:hi].sum() if keep is not None else tensor(float(hi - lo))
            bags.append(seg.sum(0) / count.clamp(min=1))
        else:
            bags.append(seg.max(0).values)
    return stack(bags) if bags else weight.new_zeros(0, weight.shape[1])


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """Sample from the Gumbel-softmax distribution; ``hard`` gives one-hot samples with
    straight-through gradients."""
    from .. import empty_like, zeros_like

    gumbels = -empty_like(logits).exponential_().log()
    y = softmax((logits + gumbels) / tau, dim)
    if hard:
        index = y.max(dim, keepdim=True)[1]
        y_hard = zeros_like(logits).scatter_(dim, index, 1.0)
        return y_hard - y.detach() + y
    return y
