"""Small ``torch.*`` functions and flags that are not operators: type names, the legacy default
tensor type, build queries, symbolic-size helpers in their eager meaning, anomaly switches.

Everything here is re-exported by ``ember/__init__.py``; nothing here computes on tensor data
beyond reading one element (``is_nonzero``).
"""

from __future__ import annotations

import builtins
import math
import os

from ._core import dtype as _dt
from ._core.tensor import Tensor
from ._ops import _legacy_types
from .autograd import anomaly_mode as _anomaly

# -- build queries ---------------------------------------------------------------------------
# What the arithmetic underneath was built with: NumPy/SciPy bring LAPACK and OpenBLAS
# (threaded with pthreads, not OpenMP), and NumPy/SciPy provide the FFTs.
has_lapack = True
has_mkl = False
has_openmp = False
has_spectral = True


def compiled_with_cxx11_abi() -> builtins.bool:
    """Whether the library was built with the C++11 ABI of libstdc++ (``_GLIBCXX_USE_CXX11_ABI=1``).

    ember has no C++ part; it answers True, as the PyTorch 2.13 wheels do, so that build
    scripts asking before compiling an extension pick the flags those wheels use.

    Returns:
        bool: True.

    Example::

        >>> ember.compiled_with_cxx11_abi()
        True
    """
    return True


def is_vulkan_available() -> builtins.bool:
    """Whether the Vulkan backend is available: never, in ember.

    Returns:
        bool: False.

    Example::

        >>> ember.is_vulkan_available()
        False
    """
    return False


def get_file_path(*path_components: str) -> str:
    """A path under the directory that holds the ``ember`` package (site-packages, say).

    Args:
        *path_components: path parts to join under that directory.

    Returns:
        str: the joined path.

    Example::

        >>> import os
        >>> os.path.basename(ember.get_file_path("ember", "version.py"))
        'version.py'
    """
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(here, *path_components)


def set_flush_denormal(mode: builtins.bool) -> builtins.bool:
    """Ask the CPU to flush denormal floats to zero; returns whether that is supported.

    NumPy gives no control over the CPU's denormal mode, so ember cannot honour the request
    and says so by returning False (what PyTorch returns on CPUs without the feature);
    arithmetic keeps IEEE denormals.

    Args:
        mode: True to flush denormals, False for IEEE behaviour.

    Returns:
        bool: False.

    Example::

        >>> ember.set_flush_denormal(True)
        False
    """
    if not isinstance(mode, builtins.bool):
        raise TypeError(f"set_flush_denormal(): argument 'mode' (position 1) must be bool, "
                        f"not {type(mode).__name__}")
    return False


# -- names and tests of tensors --------------------------------------------------------------


def typename(obj) -> str:
    """The type name of ``obj``: ``x.type()`` for a tensor, else its class's dotted name.

    Args:
        obj: any object.

    Returns:
        str: e.g. ``'torch.FloatTensor'``, ``'int'``, ``'ember.nn.modules.linear.Linear'``.

    Example::

        >>> ember.typename(ember.zeros(2)), ember.typename(3)
        ('torch.FloatTensor', 'int')
    """
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not isinstance(qualname, str):
        qualname = type(obj).__qualname__
    if not isinstance(module, str) or module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


def _check_tensor(fn: str, arg: str, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


def is_nonzero(input: Tensor) -> builtins.bool:
    """True if the single element of ``input`` is not zero (``bool(input)`` with its checks).

    Args:
        input: a tensor of exactly one element.

    Returns:
        bool

    Raises:
        RuntimeError: when ``input`` has no element or more than one.

    Example::

        >>> ember.is_nonzero(ember.tensor([1.5])), ember.is_nonzero(ember.tensor(0))
        (True, False)
    """
    _check_tensor("is_nonzero", "input", input)
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(input.item())


def is_same_size(input: Tensor, other: Tensor) -> builtins.bool:
    """True if ``input`` and ``other`` have the same shape.

    Args:
        input: a tensor.
        other: a tensor.

    Returns:
        bool

    Example::

        >>> ember.is_same_size(ember.zeros(2, 3), ember.ones(2, 3))
        True
    """
    _check_tensor("is_same_size", "input", input)
    _check_tensor("is_same_size", "other", other)
    return tuple(input.shape) == tuple(other.shape)


def get_device(input: Tensor) -> int:
    """The index of the device ``input`` is on: -1 on the CPU, the GPU's index on CUDA.

    Args:
        input: a tensor.

    Returns:
        int

    Example::

        >>> ember.get_device(ember.zeros(2))
        -1
    """
    _check_tensor("get_device", "input", input)
    return input.get_device()


def is_inference(input: Tensor) -> builtins.bool:
    """True if ``input`` was made in inference mode (see ``ember.inference_mode``).

    Args:
        input: a tensor.

    Returns:
        bool

    Example::

        >>> with ember.inference_mode():
        ...     x = ember.ones(2)
        >>> ember.is_inference(x), ember.is_inference(ember.ones(2))
        (True, False)
    """
    _check_tensor("is_inference", "input", input)
    return input.is_inference()


def is_signed(input: Tensor) -> builtins.bool:
    """True if ``input``'s dtype is signed (every dtype but ``uint8`` and ``bool``).

    Args:
        input: a tensor.

    Returns:
        bool

    Example::

        >>> ember.is_signed(ember.zeros(2)), ember.is_signed(ember.zeros(2, dtype=ember.uint8))
        (True, False)
    """
    _check_tensor("is_signed", "input", input)
    return input.is_signed()


def get_device_module(device=None):
    """The ember module for a device type: ``ember.cuda`` for ``"cuda"``, ``ember.cpu`` for
    ``"cpu"``; with no device, the accelerator's module when one is available, else
    ``ember.cpu``.

    Args:
        device: an ``ember.device``, a device string (``"cuda:0"``), or None.

    Returns:
        module

    Raises:
        RuntimeError: for a device type without a module (``"meta"``).

    Example::

        >>> ember.get_device_module("cpu").__name__
        'ember.cpu'
    """
    import importlib

    from ._core.device import device as _device

    if device is None:
        from . import cuda

        kind = "cuda" if cuda.is_available() else "cpu"
    else:
        kind = device.type if isinstance(device, _device) else _device(device).type
    try:
        return importlib.import_module(f"ember.{kind}")
    except ImportError:
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered "
                           f"as 'torch.{kind}'.") from None


# -- the legacy default tensor type ----------------------------------------------------------


def set_default_tensor_type(t) -> None:
    """Set the default floating point dtype (and device) by a legacy type: deprecated in
    PyTorch in favour of ``set_default_dtype`` and ``set_default_device``.

    Args:
        t: a floating legacy type (``ember.DoubleTensor``) or its name
            (``'torch.DoubleTensor'``); a CUDA type also makes CUDA the default device.

    Returns:
        None

    Example::

        >>> ember.set_default_tensor_type(ember.DoubleTensor)  # doctest: +SKIP
        >>> ember.tensor([1.5]).dtype  # doctest: +SKIP
        ember.float64
    """
    from ._settings import warn_at_caller

    warn_at_caller(
        "torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
        "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
        UserWarning, once=True)  # once a process, as torch's
    if isinstance(t, str):
        key = "torch." + t[len("ember."):] if t.startswith("ember.") else t
        if key not in _legacy_types._BY_NAME:
            module, _, name = key.rpartition(".")
            raise AttributeError(f"module '{module or key}' has no attribute '{name}'")
        d, kind = _legacy_types._BY_NAME[key]
        t = (_legacy_types.cpu_types if kind == "cpu" else
             _legacy_types.cuda_types)[f"{d.scalar_name}Tensor"]
    elif t is Tensor:
        return
    elif not isinstance(t, _legacy_types.tensortype):
        raise TypeError("invalid type object: only floating-point types are supported as the "
                        "default type")
    if t.dtype.category != _dt.FLOAT:
        raise TypeError("only floating-point types are supported as the default type")
    if t._device_type == "cuda":
        from . import cuda

        if not cuda.is_available():
            raise TypeError(f"type torch.cuda.{t.__name__} not available: ember found no CUDA "
                            "device (CuPy and an NVIDIA GPU are needed)")
    from .utils._device import get_default_device, set_default_device

    _dt.set_default_dtype(t.dtype)
    if t._device_type == "cuda":
        set_default_device("cuda")
    elif get_default_device().type == "cuda":  # a CPU type undoes an earlier CUDA type
        set_default_device(None)


# -- symbolic sizes, in eager mode -----------------------------------------------------------
# Under torch.compile, sizes may be symbolic (SymInt, ...); ember runs eagerly, where every
# size is a plain Python number, so these are the plain-number operations.


class _SymbolicNumber:
    """Base of ``SymInt``/``SymFloat``/``SymBool``: symbolic numbers exist only while a graph
    is traced, which ember does not do, so none can be made; the classes exist for type
    annotations and ``isinstance`` tests (always False for the numbers of eager code)."""

    def __init__(self, node=None):
        raise NotImplementedError(
            f"ember.{type(self).__name__}: symbolic shapes exist only while torch.compile "
            "traces a graph, which ember does not implement; use plain Python numbers")


class SymInt(_SymbolicNumber):
    """A symbolic int (see ``_SymbolicNumber``): never made in eager mode.

    Args:
        node: the symbolic node (unsupported).

    Returns:
        Never: constructing one raises NotImplementedError.

    Example::

        >>> isinstance(3, ember.SymInt)
        False
    """


class SymFloat(_SymbolicNumber):
    """A symbolic float (see ``_SymbolicNumber``): never made in eager mode.

    Args:
        node: the symbolic node (unsupported).

    Returns:
        Never: constructing one raises NotImplementedError.

    Example::

        >>> isinstance(1.5, ember.SymFloat)
        False
    """


class SymBool(_SymbolicNumber):
    """A symbolic bool (see ``_SymbolicNumber``): never made in eager mode.

    Args:
        node: the symbolic node (unsupported).

    Returns:
        Never: constructing one raises NotImplementedError.

    Example::

        >>> isinstance(True, ember.SymBool)
        False
    """


def sym_int(a) -> int:
    """``int(a)`` toward zero, as symbolic-size code spells it.

    Args:
        a: a number.

    Returns:
        int

    Example::

        >>> ember.sym_int(3.7)
        3
    """
    if isinstance(a, builtins.float):
        return math.trunc(a)
    return builtins.int(a)


def sym_float(a) -> builtins.float:
    """``float(a)``, as symbolic-size code spells it.

    Args:
        a: a number.

    Returns:
        float

    Example::

        >>> ember.sym_float(3)
        3.0
    """
    return builtins.float(a)


def _promote(a, b, r):
    return builtins.float(r) if isinstance(a, builtins.float) or isinstance(
        b, builtins.float) else r


def sym_max(a, b):
    """``max(a, b)``; a float if either is a float.

    Args:
        a: a number.
        b: a number.

    Returns:
        int or float

    Example::

        >>> ember.sym_max(2, 3), ember.sym_max(2, 3.0)
        (3, 3.0)
    """
    return _promote(a, b, builtins.max(a, b))


def sym_min(a, b):
    """``min(a, b)``; a float if either is a float.

    Args:
        a: a number.
        b: a number.

    Returns:
        int or float

    Example::

        >>> ember.sym_min(2, 3.0)
        2.0
    """
    return _promote(a, b, builtins.min(a, b))


def sym_not(a) -> builtins.bool:
    """``not a``, as symbolic-size code spells it.

    Args:
        a: a bool.

    Returns:
        bool

    Example::

        >>> ember.sym_not(True)
        False
    """
    return not a


def sym_ite(b, t, f):
    """``t if b else f``, as symbolic-size code spells it.

    Args:
        b: the condition.
        t: the value when true.
        f: the value when false.

    Returns:
        ``t`` or ``f``.

    Example::

        >>> ember.sym_ite(True, 1, 2)
        1
    """
    return t if b else f


def sym_sum(args):
    """``sum(args)``, as symbolic-size code spells it.

    Args:
        args: an iterable of numbers.

    Returns:
        The sum.

    Example::

        >>> ember.sym_sum([1, 2, 3])
        6
    """
    return builtins.sum(args)


def sym_sqrt(a) -> builtins.float:
    """``math.sqrt(a)``, as symbolic-size code spells it.

    Args:
        a: a number.

    Returns:
        float

    Example::

        >>> ember.sym_sqrt(4)
        2.0
    """
    return math.sqrt(a)


# -- anomaly detection, the global switch ----------------------------------------------------


def set_anomaly_enabled(enabled: builtins.bool, check_nan: builtins.bool = True) -> None:
    """Turn anomaly detection on or off for the whole process (the switch
    ``autograd.set_detect_anomaly`` sets for a block).

    Args:
        enabled: whether backward records and checks for anomalies.
        check_nan: whether a NaN produced in backward raises.

    Returns:
        None

    Example::

        >>> ember.set_anomaly_enabled(True)
        >>> ember.is_anomaly_enabled()
        True
        >>> ember.set_anomaly_enabled(False)
    """
    for name, value, pos in (("enabled", enabled, 1), ("check_nan", check_nan, 2)):
        if not isinstance(value, builtins.bool):
            raise TypeError(f"set_anomaly_enabled(): argument '{name}' (position {pos}) must "
                            f"be bool, not {type(value).__name__}")
    _anomaly._enabled = enabled
    _anomaly._check_nan = check_nan


is_anomaly_enabled = _anomaly.is_anomaly_enabled
is_anomaly_check_nan_enabled = _anomaly.is_anomaly_check_nan_enabled


def cudnn_is_acceptable(input: Tensor) -> builtins.bool:
    """Whether cuDNN could take ``input``: a CUDA tensor of float16, float32 or float64 with
    cuDNN available and enabled (``ember.backends.cudnn.enabled``).

    Args:
        input (Tensor): any tensor.

    Returns:
        bool: False for every CPU tensor.

    Example::

        >>> ember.cudnn_is_acceptable(ember.zeros(2))
        False
    """
    _check_tensor("cudnn_is_acceptable", "input", input)
    if input.device.type != "cuda":
        return False
    if input.dtype not in (_dt.float16, _dt.float32, _dt.float64):
        return False
    from .backends import cudnn

    return builtins.bool(cudnn.enabled) and cudnn.is_available()


class FatalError(Exception):
    """Raised for an internal error the program cannot recover from (``torch.FatalError``).

    Args:
        *args: the message, as for any exception.

    Returns:
        FatalError: the exception.

    Example::

        >>> try:
        ...     raise ember.FatalError("broken invariant")
        ... except ember.FatalError as e:
        ...     print(e)
        broken invariant
    """


def _assert(condition, message):
    """``assert condition, message`` as a function call (which tracing keeps in the graph).

    Args:
        condition: anything with a truth value (a bool, or a one-element tensor).
        message (str): the AssertionError's message.

    Returns:
        None.

    Example::

        >>> ember._assert(ember.tensor(1) > 0, "positive")
        >>> try:
        ...     ember._assert(False, "must hold")
        ... except AssertionError as e:
        ...     print(e)
        must hold
    """
    if type(condition) is not builtins.bool and isinstance(condition, Tensor):
        condition = builtins.bool(condition)
    assert condition, message


def _assert_async(tensor, assert_msg=None):
    """Raise unless the one-element ``tensor`` is nonzero (``torch._assert_async``). On
    PyTorch's GPUs the check is deferred; ember checks at once, as PyTorch does on CPUs.

    Args:
        tensor (Tensor): a one-element tensor.
        assert_msg (str, optional): the RuntimeError's message. Default: a generic one.

    Returns:
        None.

    Example::

        >>> ember._assert_async(ember.tensor(3) > 0, "positive")
        >>> try:
        ...     ember._assert_async(ember.tensor(0.0), "must be nonzero")
        ... except RuntimeError as e:
        ...     print(e)
        must be nonzero
    """
    if not builtins.bool(tensor):  # a tensor of several values or none raises here
        raise RuntimeError(assert_msg if assert_msg is not None else
                           "Expected Tensor with single nonzero value, but got zero")


def _check_with(error_type, cond, message=None):
    """Raise ``error_type`` unless ``cond`` is True (the checks model code writes as
    ``torch._check...``, which tracing keeps as assertions).

    Args:
        error_type (type): the exception raised.
        cond (bool): the condition (a Python bool; tensors go to :func:`_check_tensor_all`).
        message (callable, optional): returns the message. Default: a generic one.

    Returns:
        None.

    Example::

        >>> ember._check_with(ValueError, 2 > 1, lambda: "never raised")
    """
    if not isinstance(cond, builtins.bool) and not hasattr(cond, "__sym_bool__"):
        if isinstance(cond, Tensor):
            raise TypeError("cond must be a bool, but got a Tensor. For tensor conditions, "
                            "use torch._check_tensor_all() to assert that all elements are "
                            "true.")
        raise TypeError(f"cond must be a bool, but got {type(cond)}")
    if cond:
        return
    if message is None:
        text = "Expected cond to be True, but got False."
    else:
        if not callable(message):
            raise TypeError("message must be a callable")
        text = str(message())
    raise error_type(text)


def _check(cond, message=None):
    """Raise RuntimeError unless ``cond`` is True (see :func:`_check_with`).

    Args:
        cond (bool): the condition.
        message (callable, optional): returns the message.

    Returns:
        None.

    Example::

        >>> ember._check(True)
    """
    _check_with(RuntimeError, cond, message)


def _check_index(cond, message=None):
    """:func:`_check` raising IndexError.

    Args:
        cond (bool): the condition.
        message (callable, optional): returns the message.

    Returns:
        None.

    Example::

        >>> ember._check_index(0 < 3)
    """
    _check_with(IndexError, cond, message)


def _check_value(cond, message=None):
    """:func:`_check` raising ValueError.

    Args:
        cond (bool): the condition.
        message (callable, optional): returns the message.

    Returns:
        None.

    Example::

        >>> ember._check_value(True)
    """
    _check_with(ValueError, cond, message)


def _check_type(cond, message=None):
    """:func:`_check` raising TypeError.

    Args:
        cond (bool): the condition.
        message (callable, optional): returns the message.

    Returns:
        None.

    Example::

        >>> ember._check_type(isinstance(1, int))
    """
    _check_with(TypeError, cond, message)


def _check_not_implemented(cond, message=None):
    """:func:`_check` raising NotImplementedError.

    Args:
        cond (bool): the condition.
        message (callable, optional): returns the message.

    Returns:
        None.

    Example::

        >>> ember._check_not_implemented(True)
    """
    _check_with(NotImplementedError, cond, message)


def _check_tensor_all_with(error_type, cond, message=None):
    """Raise ``error_type`` unless every element of the bool tensor ``cond`` is True.

    Args:
        error_type (type): the exception raised.
        cond (Tensor): a bool tensor.
        message (callable, optional): returns the message.

    Returns:
        None.

    Example::

        >>> ember._check_tensor_all_with(ValueError, ember.tensor([True, True]))
    """
    if not isinstance(cond, Tensor) or cond.dtype != _dt.bool_:
        raise TypeError(f"cond must be a tensor with dtype torch.bool, but got {cond!r}"
                        if isinstance(cond, Tensor) else
                        f"cond must be a tensor, but got {type(cond)}")
    _check_with(error_type, builtins.bool(cond.all()), message)


def _check_tensor_all(cond, message=None):
    """:func:`_check_tensor_all_with` raising RuntimeError.

    Args:
        cond (Tensor): a bool tensor.
        message (callable, optional): returns the message.

    Returns:
        None.

    Example::

        >>> ember._check_tensor_all(ember.ones(2) > 0)
    """
    _check_tensor_all_with(RuntimeError, cond, message)


def _check_is_size(i, message=None, *, max=None):
    """Check that ``i`` can be a size (``0 <= i``, and ``i <= max`` when given).

    Args:
        i (int): the value.
        message (callable, optional): returns the message.
        max (int, optional): the largest allowed value.

    Returns:
        None.

    Example::

        >>> ember._check_is_size(3)
    """
    _check(i >= 0, message)
    if max is not None:
        _check(i <= max, message)


def _softmax_backward_data(grad_output, output, dim, input_dtype):
    """The gradient of softmax's input from its output and the output's gradient:
    ``output * (grad_output - (grad_output * output).sum(dim, keepdim=True))``.

    Args:
        grad_output (Tensor): the gradient of the softmax's output.
        output (Tensor): the softmax's output.
        dim (int): the softmax's dimension.
        input_dtype (ember.dtype): the softmax input's dtype (the result's).

    Returns:
        Tensor.

    Example::

        >>> y = ember.softmax(ember.tensor([1.0, 2.0]), 0)
        >>> ember._softmax_backward_data(ember.ones(2), y, 0, ember.float32)
        tensor([0., 0.])
    """
    from ._ops.nn_ops import _softmax_vjp  # (half floats: float32 sums, one rounding)

    out = _softmax_vjp(grad_output, None, dim=dim, out=output)
    return out if out.dtype == input_dtype else out.to(input_dtype)


#: operators the ``torch`` namespace leaves out of its generated function list
PRIVATE_OPS = ("unique_dim",)


def mkldnn_convolution(input: Tensor, weight: Tensor, bias, padding, stride, dilation,
                       groups: int) -> Tensor:
    """A direct (not transposed) convolution in the argument order of PyTorch's oneDNN
    kernel: ``padding`` before ``stride``. It is ``ember.convolution`` with those arguments,
    differentiable as it is, for float32, bfloat16 and float16 tensors.

    Args:
        input (Tensor): ``(N, C_in, *spatial)`` with 1 to 3 spatial dims.
        weight (Tensor): ``(C_out, C_in / groups, *kernel)``.
        bias (Tensor, optional): ``(C_out,)``.
        padding (list of int): per spatial dim (one value for all).
        stride (list of int): per spatial dim (one value for all).
        dilation (list of int): per spatial dim (one value for all).
        groups (int): the number of channel groups.

    Returns:
        Tensor: ``(N, C_out, *spatial_out)``.

    Example::

        >>> ember.mkldnn_convolution(ember.ones(1, 1, 4), ember.ones(1, 1, 3), None, [0], [1],
        ...                          [1], 1)
        tensor([[[3., 3.]]])
    """
    from . import convolution

    for name, t in (("input", input), ("weight", weight)):
        _check_tensor("mkldnn_convolution", name, t)
    if input.dtype not in (_dt.float32, _dt.bfloat16, _dt.float16):
        raise RuntimeError("itensor_view_from_dense expects float/bfloat16/half/int8/fp8 "
                           f"tensor input{input.dtype.scalar_name}")
    nd = weight.dim() - 2

    def per_dim(v):
        v = [int(v)] if isinstance(v, int) else [int(x) for x in v]
        return v * nd if len(v) == 1 else v

    return convolution(input, weight, bias, per_dim(stride), per_dim(padding),
                       per_dim(dilation), False, [0] * nd, groups)
