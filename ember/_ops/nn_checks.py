"""Argument checks shared by the nn op families, raising what PyTorch's CPU kernels raise.

NOTE [ nn kernel dtypes ]
Each of PyTorch's CPU kernels is compiled for a fixed set of dtypes, and a tensor of any
other dtype makes it raise ``NotImplementedError: "<kernel>" not implemented for
'<ScalarName>'``. ember's kernels are written once against NumPy and would happily run
(or fail with a NumPy error) on those dtypes, so every nn public function states which
kernel it stands for with one call of ``kernel_dtype(key, tensor)``, in its argument
step, before any work. ``KERNELS`` is the one table of those kernels: torch's name for it
and the dtypes it accepts (found by running torch 2.13 on every dtype). The messages keep
torch's kernel names, so an error reads the same under either library.

The other helpers here are the checks several families share: parameters that must have
the input's dtype (``same_dtype``), the "mixed dtype (CPU)" rule of the norm kernels
(``norm_param_dtypes``), and the non-empty input rule of pooling and padding kernels
(``nonempty_input``).
"""

from __future__ import annotations

from .._core import dtype as _dt
from .._core.tensor import Tensor

__all__ = ["FLOATING", "FLOAT_COMPLEX", "REAL", "ALL", "KERNELS", "kernel_dtype",
           "cast_back", "same_dtype", "norm_param_dtypes", "nonempty_input"]

INTEGRAL = frozenset({"uint8", "int8", "int16", "int32", "int64"})
#: float16, bfloat16, float32, float64
FLOATING = frozenset({"float16", "bfloat16", "float32", "float64"})
COMPLEX = frozenset({"complex64", "complex128"})
FLOAT_COMPLEX = FLOATING | COMPLEX
#: every number type but bool and complex
REAL = FLOATING | INTEGRAL
#: every dtype but bool
NUMERIC = REAL | COMPLEX
ALL = NUMERIC | {"bool"}
F32_F64 = frozenset({"float32", "float64"})

#: key -> (torch's kernel name, dtypes it accepts); see NOTE [ nn kernel dtypes ]
KERNELS = {
    # pooling
    "max_pool1d": ("max_pool1d_impl", FLOATING),
    "max_pool2d": ("max_pool2d", REAL),
    "max_pool3d": ("max_pool3d", REAL),
    "avg_pool2d": ("avg_pool2d", FLOATING | {"int64"}),
    "avg_pool3d": ("avg_pool3d_out_frame", F32_F64 | {"int64"}),
    "adaptive_avg_pool2d": ("adaptive_avg_pool2d", FLOATING),
    "adaptive_avg_pool3d": ("adaptive_avg_pool3d_cpu", FLOATING),
    "adaptive_max_pool2d": ("adaptive_max_pool2d", FLOATING),
    "adaptive_max_pool3d": ("adaptive_max_pool3d_cpu", FLOATING),
    "max_unpool2d": ("max_unpool2d", FLOATING),
    "max_unpool3d": ("max_unpool3d", FLOATING),
    "im2col": ("im2col_out_cpu", FLOAT_COMPLEX | {"bool"}),
    "col2im": ("col2im_out_cpu", FLOAT_COMPLEX | {"bool"}),
    # resampling
    "upsample_nearest": ("upsample_nearest2d", FLOATING | {"uint8"}),
    "upsample_linear": ("compute_indices_weights_linear", FLOATING),
    "upsample_bilinear2d": ("upsample_bilinear2d", FLOATING | {"uint8"}),
    "upsample_bicubic2d": ("compute_indices_weights_cubic", FLOATING | {"uint8"}),
    "upsample_aa": ("compute_index_ranges_weights", F32_F64 | {"uint8"}),
    "grid_sampler_2d": ("grid_sampler_2d_cpu_kernel_impl", FLOATING),
    "grid_sampler_3d": ("grid_sampler3d_cpu", FLOATING),
    "reflection_pad": ("reflection_pad", NUMERIC),
    "replication_pad": ("replication_pad", NUMERIC),
    # normalisation
    "batch_norm": ("batch_norm", FLOATING),
    "layer_norm": ("LayerNormKernelImpl", FLOATING),
    "rms_norm": ("rms_norm", FLOAT_COMPLEX),
    "softmax": ("softmax_kernel_impl", FLOATING),
    "softmax_lastdim": ("softmax_lastdim_kernel_impl", FLOATING),
    "log_softmax": ("log_softmax_kernel_impl", FLOATING),
    "log_softmax_lastdim": ("log_softmax_lastdim_kernel_impl", FLOATING),
    # products
    "addmm": ("addmm_impl_cpu_", NUMERIC),
    "bmm": ("bmm", NUMERIC),
    "slow_conv2d": ("slow_conv2d_cpu", NUMERIC),
    "slow_conv_dilated": ("slow_conv_dilated<>", FLOAT_COMPLEX | {"int64"}),
    "slow_conv3d": ("compute_columns3d", NUMERIC),
    "slow_conv_transpose2d": ("slow_conv_transpose2d_out_cpu", FLOAT_COMPLEX | {"int64"}),
    "slow_conv_transpose3d": ("slow_conv_transpose3d_out_cpu", FLOAT_COMPLEX | {"int64"}),
    # activations
    "leaky_relu": ("leaky_relu_cpu", FLOATING),
    "hardswish": ("hardswish_cpu", FLOATING),
    "hardsigmoid": ("hardsigmoid_cpu", FLOATING),
    "mish": ("mish_cpu", FLOATING),
    "log_sigmoid": ("log_sigmoid_cpu", FLOATING),
    "softplus": ("softplus_cpu", FLOATING),
    "softshrink": ("softshrink_check", FLOATING),
    "hardshrink": ("hardshrink_cpu", FLOATING),
    "glu": ("glu_cpu", FLOATING),
    "prelu": ("prelu_cpu", FLOATING),
    # losses
    "mse": ("mse_cpu", FLOATING),
    "smooth_l1": ("smooth_l1_cpu", FLOATING),
    "huber": ("huber_cpu", FLOATING),
    "binary_cross_entropy": ("binary_cross_entropy", FLOATING),
    "nll_loss": ("nll_loss_out_frame", FLOATING),
    "nll_loss2d": ("nll_loss2d_forward_out_frame", FLOATING),
    "multi_margin_loss": ("multi_margin_loss_cpu_kernel", F32_F64),
    "multilabel_margin_loss": ("multilabel_margin_loss_forward_out_frame", F32_F64),
    "ctc_loss": ("ctc_loss_cpu", F32_F64),
}


def kernel_dtype(key, t, name=None):
    """Raise torch's NotImplementedError when ``t``'s dtype is not one the kernel ``key`` of
    ``KERNELS`` accepts; ``name`` overrides the kernel name in the message.

    Args:
        key: a key of ``KERNELS``.
        t: the tensor (or dtype) whose dtype decides (anything else passes).
        name: the kernel name to report, when it depends on the call (1-d against 2-d).

    Returns:
        None.

    Example:
        >>> kernel_dtype("max_pool2d", ember.ones(1, 2, 2))  # float32: accepted
    """
    kernel, allowed = KERNELS[key]
    d = t.dtype if isinstance(t, Tensor) else t if isinstance(t, _dt.dtype) else None
    if d is not None and d.name not in allowed:
        if d.name in ("float16", "bfloat16") and _under_autocast(t):
            return  # autocast runs the kernel in float32 (its fp32 list), at dispatch
        raise NotImplementedError(f'"{name or kernel}" not implemented for \'{d.scalar_name}\'')


def _under_autocast(t):
    """Autocast is on for ``t``'s device: it will run fp32-listed kernels in float32."""
    from ..amp import autocast_mode

    device = t.device.type if isinstance(t, Tensor) else "cpu"
    try:
        return autocast_mode.is_autocast_enabled(device)
    except Exception:  # a device autocast does not know
        return False


def cast_back(name, result, input):
    """``result`` cast to ``input``'s dtype, for kernels that write into a tensor shaped and
    typed like their input: torch's RuntimeError when the cast would lose a kind (a float
    result into an integer input, complex into real).

    Example:
        >>> cast_back("soft_margin_loss", ember.ones(2, dtype=ember.float64), ember.ones(2)).dtype
        ember.float32
    """
    if result.dtype != input.dtype:
        if not _dt.can_cast(result.dtype, input.dtype):
            raise RuntimeError(f"result type {result.dtype.scalar_name} can't be cast to the "
                               f"desired output type {input.dtype.scalar_name}")
        result = result.to(input.dtype)
    return result


def no_complex_autograd(name, dtype, *inputs):
    """Raise PyTorch's RuntimeError for an op without complex derivatives: its result is
    complex (``dtype``) while grad mode records and an input tensor requires grad.

    Args:
        name: the op's name in the message.
        dtype: the result's dtype.
        *inputs: the op's arguments (non-tensors are skipped).

    Returns:
        None.

    Example:
        >>> no_complex_autograd("silu", ember.float32, ember.ones(2, requires_grad=True))
    """
    from .. import _dispatch

    if dtype.is_complex and _dispatch.state.grad_enabled and any(
            isinstance(t, Tensor) and t.requires_grad for t in inputs):
        raise RuntimeError(f"{name} does not support automatic differentiation for outputs "
                           "with complex dtype.")


def same_dtype(input, *others):
    """Raise torch's ``expected scalar type X but found Y`` RuntimeError when a tensor of
    ``others`` (None entries are skipped) has a dtype other than ``input``'s.

    Example:
        >>> same_dtype(ember.ones(2), ember.ones(2), None)
    """
    for o in others:
        if isinstance(o, Tensor) and o.dtype != input.dtype:
            raise RuntimeError(f"expected scalar type {input.dtype.scalar_name} but found "
                               f"{o.dtype.scalar_name}")


def norm_param_dtypes(input, *params):
    """The rule of torch's CPU norm kernels for parameter dtypes: parameters (weight, bias,
    running statistics; None skipped) have the input's dtype, or float32 when the input is
    float16 / bfloat16; anything else is a "mixed dtype (CPU)" RuntimeError.

    Example:
        >>> norm_param_dtypes(ember.ones(2, 3, dtype=ember.bfloat16), ember.ones(3))
    """
    given = [p for p in params if isinstance(p, Tensor)]
    if all(p.dtype == input.dtype for p in given):
        return
    if input.dtype.name in ("float16", "bfloat16"):
        if all(p.dtype.name == "float32" for p in given):
            return
        raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
    raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


def nonempty_input(input, nd, skip=None, message=None):
    """Raise torch's RuntimeError for pooling-style kernels when ``input`` is neither
    ``nd + 1``-d nor ``nd + 2``-d, or has an empty dimension past the first ``skip``.

    Args:
        input: the tensor.
        nd: the number of spatial dimensions.
        skip: leading dimensions that may be empty; default 1 for a batched input (the
            batch) and 0 for an unbatched one.
        message: the message, when the kernel words it its own way.

    Returns:
        None.

    Example:
        >>> nonempty_input(ember.ones(0, 2, 3, 3), 2)  # an empty batch is fine
    """
    shape = tuple(input.shape)
    ok = len(shape) in (nd + 1, nd + 2)
    if ok:
        if skip is None:
            skip = 1 if len(shape) == nd + 2 else 0
        ok = all(n > 0 for n in shape[skip:])
    if not ok:
        raise RuntimeError(message or (
            f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with optional 0 dim batch "
            f"size for input, but got:{list(shape)}"))


# the dtypes with a legacy tensor type (``torch.FloatTensor``); PyTorch's argument checks name
# any other dtype by its backend type (``CPUBoolType``, ``CPUBFloat16Type``)
_LEGACY_NAMED = frozenset(["Float", "Double", "Half", "Byte", "Char", "Short", "Int", "Long"])


def type_name_in_check(dtype, cuda=False):
    """How PyTorch's "Expected tensor for argument #1 ..." checks name a tensor's type:
    ``torch.FloatTensor`` / ``torch.cuda.LongTensor``, or ``CPUBoolType`` for the dtypes
    that have no legacy tensor type."""
    name = dtype.scalar_name
    if name in _LEGACY_NAMED:
        return f"torch.{'cuda.' if cuda else ''}{name}Tensor"
    return f"{'CUDA' if cuda else 'CPU'}{name}Type"
