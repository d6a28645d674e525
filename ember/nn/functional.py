"""``ember.nn.functional``: the math behind the layers, as functions.

Heavy ops (linear, convolution, pooling, normalisation, softmax, the main losses, embedding)
are fused registry ops in ``ember/_ops/nn_*.py``; the rest are short compositions of ember
ops.
"""

from __future__ import annotations

import warnings

from .._overrides import consult_in as _consult_in
from .._core import dtype as _dt
from .._core.checks import holds_values
from .._ops import creation as _creation
from .._ops import nn_pool as _pool
from .._ops import ranges as _ranges
from .._ops.nn_norm import (  # noqa: F401
    batch_norm, group_norm, instance_norm, layer_norm, local_response_norm, rms_norm,
)
from .._ops import join as _join
from .._ops.nn_ops import (  # noqa: F401
    cross_entropy, embedding, gelu, linear, mse_loss, nll_loss, reduction_enum, silu,
)
from .._ops import nn_ops as _nn_ops
from .._ops.nn_embedding import embedding_bag  # noqa: F401
from .._ops.nn_ops import bilinear  # noqa: F401
from .._ops.nn_pad import pad  # noqa: F401


def _implicit_dim_warning(name, stacklevel):
    """Warn, as PyTorch does, that ``name`` was called without ``dim`` (the legacy choice:
    0 for 0-, 1- and 3-dim inputs, else 1)."""
    # (+1: the ``__torch_function__`` wrapper around the caller)
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=stacklevel + 1)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim``, computed stably.

    Args:
        input (Tensor): the input.
        dim (int): the dimension to normalise over. Leaving it out picks one by PyTorch's
            legacy rule and warns.
        _stacklevel (int): where the implicit-dimension warning points.
        dtype (dtype, optional): cast the input to this first.

    Returns:
        Tensor: same shape as ``input``; each slice along ``dim`` sums to 1.

    Example:
        >>> import ember
        >>> ember.nn.functional.softmax(ember.tensor([1., 2., 3.]), dim=0).sum()
        tensor(1.)
    """
    if dim is None:
        _implicit_dim_warning("softmax", _stacklevel)
    return _nn_ops.softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``log(softmax(x))`` along ``dim``, computed as ``x - logsumexp(x)``.

    Args:
        input (Tensor): the input.
        dim (int): the dimension to normalise over. Leaving it out picks one by PyTorch's
            legacy rule and warns.
        _stacklevel (int): where the implicit-dimension warning points.
        dtype (dtype, optional): cast the input to this first.

    Returns:
        Tensor: same shape as ``input``.

    Example:
        >>> import ember
        >>> ember.nn.functional.log_softmax(ember.zeros(2), dim=0)
        tensor([-0.6931, -0.6931])
    """
    if dim is None:
        _implicit_dim_warning("log_softmax", _stacklevel)
    return _nn_ops.log_softmax(input, dim, dtype)

# -- convolution ---------------------------------------------------------------------------------

from .._ops.nn_conv import (  # noqa: E402, F401
    conv1d, conv2d, conv3d, conv_tbc, conv_transpose1d, conv_transpose2d, conv_transpose3d,
)


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


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """1-d adaptive max pooling returning ``(values, indices)``."""
    return _pool.adaptive_max_pool(1, input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """2-d adaptive max pooling returning ``(values, indices)``."""
    return _pool.adaptive_max_pool(2, input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """3-d adaptive max pooling returning ``(values, indices)``."""
    return _pool.adaptive_max_pool(3, input, output_size, True)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """2-d fractional max pooling: windows of ``kernel_size`` at pseudo-random starts that
    shrink the input to ``output_size`` (or ``output_ratio`` of its size); see
    NOTE [ Fractional pooling windows ] in ember/_ops/nn_pool.py."""
    return _pool.fractional_max_pool(2, input, kernel_size, output_size, output_ratio,
                                     return_indices, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """3-d fractional max pooling (see :func:`fractional_max_pool2d`)."""
    return _pool.fractional_max_pool(3, input, kernel_size, output_size, output_ratio,
                                     return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None,
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """:func:`fractional_max_pool2d` returning ``(values, indices)``."""
    return _pool.fractional_max_pool(2, input, kernel_size, output_size, output_ratio, True,
                                     _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None,
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """:func:`fractional_max_pool3d` returning ``(values, indices)``."""
    return _pool.fractional_max_pool(3, input, kernel_size, output_size, output_ratio, True,
                                     _random_samples)


def _lp_pool(nd, input, norm_type, kernel_size, stride, ceil_mode):
    k = (kernel_size,) * nd if isinstance(kernel_size, int) else tuple(kernel_size)
    avg = (avg_pool1d, avg_pool2d, avg_pool3d)[nd - 1]
    out = avg(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    if nd == 1 and not isinstance(kernel_size, int):
        # torch's lp_pool1d scales by ``kernel_size`` as given: a tuple or list window
        # pools, then fails in that multiplication
        raise TypeError(f"mul(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(kernel_size).__name__}")
    size = 1
    for kk in k:
        size *= kk
    return (out.sign() * out.abs().relu()).mul(size).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """1-d power-average pooling: ``(sum of x^p over the window)^(1/p)``."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """2-d power-average pooling: ``(sum of x^p over the window)^(1/p)``."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """3-d power-average pooling: ``(sum of x^p over the window)^(1/p)``."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


# -- activations ---------------------------------------------------------------------------------

from ._activations import (  # noqa: E402, F401
    celu, celu_, elu, elu_, glu, hardshrink, hardsigmoid, hardswish, hardtanh, hardtanh_,
    leaky_relu, leaky_relu_, logsigmoid, mish, prelu, relu, relu6, relu_, rrelu, rrelu_, selu,
    selu_, sigmoid, softmin, softplus, softshrink, softsign, tanh, tanhshrink, threshold,
    threshold_,
)


# -- dropout -------------------------------------------------------------------------------------

from .._ops.nn_dropout import (  # noqa: E402, F401
    alpha_dropout, dropout, dropout1d, dropout2d, dropout3d, feature_alpha_dropout,
)


# -- losses (compositions) -------------------------------------------------------------------------

from .._ops.nn_loss import (  # noqa: E402, F401
    binary_cross_entropy, binary_cross_entropy_with_logits, cosine_embedding_loss,
    cosine_similarity, ctc_loss, gaussian_nll_loss, hinge_embedding_loss, huber_loss, kl_div,
    l1_loss, margin_ranking_loss, multi_margin_loss, multilabel_margin_loss,
    multilabel_soft_margin_loss, pairwise_distance, pdist, poisson_nll_loss, smooth_l1_loss,
    soft_margin_loss, triplet_margin_loss, triplet_margin_with_distance_loss,
)


# -- attention -------------------------------------------------------------------------------------

from .._ops.nn_attention import scaled_dot_product_attention  # noqa: E402, F401
from ._attention import multi_head_attention_forward  # noqa: E402, F401


# -- resampling, shuffles and the rest -------------------------------------------------------------

from .._ops.nn_sampling import (  # noqa: E402, F401
    GRID_SAMPLE_INTERPOLATION_MODES, GRID_SAMPLE_PADDING_MODES, affine_grid, channel_shuffle,
    fold, grid_sample, interpolate, native_channel_shuffle, pixel_shuffle, pixel_unshuffle,
    unfold,
)


def _deprecated_upsample(name):
    warnings.warn(f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", UserWarning, stacklevel=4)  # the caller of the public wrapper


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated spelling of :func:`interpolate` (warns, as PyTorch does).

    Args:
        input, size, scale_factor, mode, align_corners: as :func:`interpolate` takes them.

    Returns:
        The resized tensor.

    Example:
        >>> import warnings, ember
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     ember.nn.functional.upsample(ember.ones(1, 1, 2), scale_factor=2).shape
        ember.Size([1, 1, 4])
    """
    _deprecated_upsample("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: :func:`interpolate` with ``mode="nearest"`` (warns, as PyTorch does).

    Args:
        input, size, scale_factor: as :func:`interpolate` takes them.

    Returns:
        The resized tensor.

    Example:
        >>> import warnings, ember
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     ember.nn.functional.upsample_nearest(ember.ones(1, 1, 2), 3).shape
        ember.Size([1, 1, 3])
    """
    _deprecated_upsample("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: :func:`interpolate` with ``mode="bilinear", align_corners=True`` (warns,
    as PyTorch does).

    Args:
        input, size, scale_factor: as :func:`interpolate` takes them.

    Returns:
        The resized tensor.

    Example:
        >>> import warnings, ember
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     ember.nn.functional.upsample_bilinear(ember.ones(1, 1, 2, 2), 3).shape
        ember.Size([1, 1, 3, 3])
    """
    _deprecated_upsample("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def one_hot(tensor, num_classes=-1):
    """(*,) int64 class indices -> (*, num_classes) int64 one-hot rows."""
    if tensor._data.dtype.kind not in "iu":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    from ..func._batch_tensor import BatchedTensor

    if isinstance(tensor, BatchedTensor):
        # inside vmap one example has no values to check or count (out-of-range rows are
        # all zeros, as in PyTorch)
        if num_classes < 0:
            raise RuntimeError("When vmap-ing torch.nn.functional.one_hot, please provide an "
                               "explicit positive num_classes argument.")
    elif num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max()) + 1
    if tensor.numel() and holds_values(tensor._data) and not isinstance(tensor, BatchedTensor) and (
            int(tensor.min()) < 0 or int(tensor.max()) >= num_classes):
        raise RuntimeError("Class values must be smaller than num_classes." if
                           int(tensor.max()) >= num_classes else
                           "Class values must be non-negative.")
    # contiguous whatever the input's layout, as torch's (zeros, then a scatter) is
    return (tensor.unsqueeze(-1) == _ranges.arange(num_classes, device=tensor.device)).to(
        _dt.int64).contiguous()


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim``."""
    denom = input.norm(p=p, dim=dim, keepdim=True).clamp_min(eps).expand_as(input)
    r = input / denom
    return r if out is None else out.copy_(r)


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



def grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None):
    """Matrix products of groups: 3-d x 3-d is a batched product; with ``offs`` (the
    cumulative ends of the groups) a 2-d operand is split into groups along its rows
    (2-d x 3-d), its columns (3-d x 2-d), or both operands along the shared dim (2-d x 2-d,
    giving one product per group).

    Args:
        mat_a: (G, M, K) or (M_total, K) / (M, K_total).
        mat_b: (G, K, N) or (K, N_total) / (K_total, N).
        offs: 1-D int32 group ends, required when an operand is 2-d.
        bias: not supported (as in PyTorch).
        out_dtype: the result's dtype (default: the inputs').

    Returns:
        (G, M, N), (M_total, N), (M, N_total) or (G, M, N).

    Example:
        >>> import ember
        >>> a, b = ember.ones(4, 2), ember.ones(2, 2, 3)
        >>> grouped_mm(a, b, offs=ember.tensor([1, 4], dtype=ember.int32)).shape
        ember.Size([4, 3])
    """
    from .._ops.join import cat

    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    if (mat_a.dim() == 2 or mat_b.dim() == 2) != (offs is not None):
        raise RuntimeError("Have to provide offsets if there is a 2d matrix, or no offset if "
                           "both matrices are 3d")
    if mat_a.dim() not in (2, 3) or mat_b.dim() not in (2, 3):
        raise RuntimeError("grouped_mm: expected 2-d or 3-d operands, got "
                           f"{mat_a.dim()}-d and {mat_b.dim()}-d")
    if offs is None:
        out = mat_a @ mat_b
    else:
        ends = [int(e) for e in offs.tolist()]
        spans = list(zip([0] + ends[:-1], ends))
        if mat_a.dim() == 2 and mat_b.dim() == 3:
            out = cat([mat_a[lo:hi] @ mat_b[g] for g, (lo, hi) in enumerate(spans)], 0)
        elif mat_a.dim() == 3:
            out = cat([mat_a[g] @ mat_b[:, lo:hi] for g, (lo, hi) in enumerate(spans)], 1)
        else:
            out = _join.stack([mat_a[:, lo:hi] @ mat_b[lo:hi] for lo, hi in spans])
    return out if out_dtype is None else out.to(out_dtype)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0,
                         options=None):
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``: the loss of
    a classifier head in one call.

    Args:
        input: (N, in_features) or (in_features,).
        linear_weight: (classes, in_features).
        target: class indices or probabilities, as for ``cross_entropy``.
        linear_bias: (classes,) or None.
        weight, reduction, label_smoothing: as for ``cross_entropy``.
        ignore_index: a target value to skip (None: -100).
        options: accepted for compatibility (chunking hints).

    Returns:
        The loss.

    Example:
        >>> import ember
        >>> linear_cross_entropy(ember.zeros(2, 3), ember.zeros(4, 3), ember.tensor([0, 1]))
        tensor(1.3863)
    """
    return cross_entropy(linear(input, linear_weight, linear_bias), target, weight,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         reduction=reduction, label_smoothing=label_smoothing)


# every public function here consults __torch_function__ first, as ember's own do
_consult_in(globals())

# full docstrings (Args, Returns, Example) for the functions declared without them
from ._functional_docs import apply as _apply_docs  # noqa: E402

_apply_docs(globals())


# -- names PyTorch's functional module re-exports -------------------------------------------------
# Bound after _consult_in: the protocol helpers must not themselves consult the protocol.

from .._core.tensor import Tensor  # noqa: E402, F401
from ..overrides import (  # noqa: E402, F401
    handle_torch_function, has_torch_function, has_torch_function_unary,
    has_torch_function_variadic,
)


class _BroadcastingList:
    """``BroadcastingList2[int]``: a TorchScript annotation for "an int or a list of two";
    in eager code subscripting it gives back the element type."""

    def __getitem__(self, types):
        return types


BroadcastingList1 = BroadcastingList2 = BroadcastingList3 = _BroadcastingList()


def boolean_dispatch(arg_name, arg_index, default, if_true, if_false, module_name, func_name):
    """A function calling ``if_true`` or ``if_false`` by the boolean argument ``arg_name``
    (positional index ``arg_index``, ``default`` when not given): how
    ``max_pool2d(..., return_indices=...)`` picks its result's form.

    Args:
        arg_name: the flag's keyword name.
        arg_index: the flag's position.
        default: the flag's default.
        if_true, if_false: the two implementations.
        module_name, func_name: the name the function takes.

    Returns:
        The dispatching function.

    Example:
        >>> f = boolean_dispatch("twice", 1, False, lambda x, twice=True: 2 * x,
        ...                      lambda x, twice=False: x, __name__, "f")
        >>> f(3), f(3, True)
        (3, 6)
    """

    def fn(*args, **kwargs):
        if arg_name in kwargs:
            flag = kwargs[arg_name]
        elif arg_index < len(args):
            flag = args[arg_index]
        else:
            flag = default
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)

    fn.__doc__ = if_true.__doc__ or if_false.__doc__
    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = fn.__qualname__ = func_name
    return fn


def assert_int_or_pair(arg, arg_name, message):
    """Raise AssertionError(``message.format(arg_name)``) unless ``arg`` is an int or a pair.

    Args:
        arg: the value checked.
        arg_name: its name, put into ``message``.
        message: the error message, with one ``{}``.

    Example:
        >>> assert_int_or_pair((2, 3), "kernel_size", "{} must be int or pair")
    """
    assert isinstance(arg, int) or len(arg) == 2, message.format(arg_name)


# Notes PyTorch splices into its docstrings, keyed the same; the wording is ember's.
reproducibility_notes = {
    "forward_reproducibility_note": "On a CUDA device this op may give results that differ "
                                    "from run to run; see the notes on randomness.",
    "backward_reproducibility_note": "On a CUDA device the backward pass of this op may "
                                     "give results that differ from run to run; see the "
                                     "notes on randomness.",
    "cudnn_reproducibility_note": "With cuDNN this op may choose a nondeterministic "
                                  "algorithm; set torch.backends.cudnn.deterministic = True "
                                  "to avoid it.",
}
sparse_support_notes = {
    "sparse_beta_warning": "Sparse tensor support is a beta feature: some layouts, dtypes or "
                           "devices may not be supported.",
}
tf32_notes = {
    "tf32_note": "On Ampere or newer GPUs this op may compute float32 products in "
                 "TensorFloat-32.",
}
