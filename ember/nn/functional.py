"""``ember.nn.functional``: the math behind the layers, as functions.

Heavy ops (linear, convolution, pooling, normalisation, softmax, the main losses, embedding)
are fused registry ops in ``ember/_ops/nn_*.py``; the rest are short compositions of ember
ops.
"""

from __future__ import annotations


from .._overrides import consult_in as _consult_in
from .._core import dtype as _dt
from .._core.checks import holds_values
from .._ops import creation as _creation
from .._ops import from_data as _from_data
from .._ops import join as _join
from .._ops import linalg_contract as _contract
from .._ops import nn_conv as _conv
from .._ops import nn_pool as _pool
from .._ops import ranges as _ranges
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

from ._activations import (  # noqa: E402, F401
    celu, elu, glu, hardshrink, hardsigmoid, hardswish, hardtanh, leaky_relu, logsigmoid, mish,
    prelu, relu6, relu_, rrelu, selu, sigmoid, softmin, softplus, softshrink, softsign, tanh,
    tanhshrink, threshold,
)


# -- dropout -------------------------------------------------------------------------------------

from .._ops.nn_dropout import (  # noqa: E402, F401
    alpha_dropout, dropout, dropout1d, dropout2d, dropout3d,
)


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
    if tensor._data.dtype.kind not in "iu":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max()) + 1
    if tensor.numel() and holds_values(tensor._data) and (
            int(tensor.min()) < 0 or int(tensor.max()) >= num_classes):
        raise RuntimeError("Class values must be smaller than num_classes." if
                           int(tensor.max()) >= num_classes else
                           "Class values must be non-negative.")
    return (tensor.unsqueeze(-1) == _ranges.arange(num_classes, device=tensor.device)).to(
        _dt.int64)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim``."""
    denom = input.norm(p=p, dim=dim, keepdim=True).clamp(min=eps).expand_as(input)
    r = input / denom
    return r if out is None else out.copy_(r)


def pdist(input, p=2):
    """Distances between all pairs of rows of a (N, M) input (upper triangle, row-major)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    n = input.shape[0]
    i, j = _ranges.triu_indices(n, n, 1, device=input.device)
    return (input[i] - input[j]).norm(p=p, dim=1)


def bilinear(input1, input2, weight, bias=None):
    """``y_k = x1^T W_k x2 + b_k`` for weight (out, in1, in2)."""
    y = _contract.einsum("...i,kij,...j->...k", input1, weight, input2)
    return y + bias if bias is not None else y


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """Sums, means or maxima of bags of embeddings (bags given by rows of a 2-D input, or
    by ``offsets`` into a 1-D input)."""
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
            count = keep[lo:hi].sum() if keep is not None else _from_data.tensor(float(hi - lo))
            bags.append(seg.sum(0) / count.clamp(min=1))
        else:
            bags.append(seg.max(0).values)
    return _join.stack(bags) if bags else weight.new_zeros(0, weight.shape[1])


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """Sample from the Gumbel-softmax distribution; ``hard`` gives one-hot samples with
    straight-through gradients."""
    gumbels = -_creation.empty_like(logits).exponential_().log()
    y = softmax((logits + gumbels) / tau, dim)
    if hard:
        index = y.max(dim, keepdim=True)[1]
        y_hard = _creation.zeros_like(logits).scatter_(dim, index, 1.0)
        return y_hard - y.detach() + y
    return y



# every public function here consults __torch_function__ first, as ember's own do
_consult_in(globals())
