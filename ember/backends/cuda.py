"""``ember.backends.cuda``: cuBLAS matmul precision, the attention-kernel switches, and
``is_built()``.

NOTE [ Float32 matmul precision ]
``torch.set_float32_matmul_precision`` ("highest", "high", "medium") and
``torch.backends.cuda.matmul.allow_tf32`` are two views of one setting: ``allow_tf32`` is
True exactly when the precision is not "highest", and assigning it sets "high" or "highest".
The one store is ``ember._settings.settings.float32_matmul_precision`` (NOTE [
Process-wide settings ]), written by ``ember.set_float32_matmul_precision`` and by
``matmul.allow_tf32``. NumPy computes float32 products in float32 whatever the setting,
and CuPy likewise, so the setting is recorded and read back without changing results.

The scaled-dot-product-attention switches (``enable_flash_sdp`` ...) choose among fused GPU
kernels ember does not have; ember's attention always runs the math kernel, and the
switches are recorded as in PyTorch. See NOTE [ Backend settings ] in
ember/backends/_flags.py.

Example::

    >>> ember.backends.cuda.matmul.allow_tf32
    False
    >>> ember.backends.cuda.is_built()
    False
"""

from __future__ import annotations

import contextlib
import enum
import warnings

__all__ = [
    "SDPBackend", "allow_fp16_bf16_reduction_math_sdp", "can_use_cudnn_attention",
    "can_use_efficient_attention", "can_use_flash_attention", "cudnn_sdp_enabled",
    "cufft_plan_cache", "enable_cudnn_sdp", "enable_flash_sdp", "enable_math_sdp",
    "enable_mem_efficient_sdp", "flash_sdp_enabled", "fp16_bf16_reduction_math_sdp_allowed",
    "is_built", "is_flash_attention_available",
    "math_sdp_enabled", "matmul", "mem_efficient_sdp_enabled", "preferred_blas_library",
    "preferred_linalg_library", "sdp_kernel",
]

from .._settings import get_float32_matmul_precision, set_float32_matmul_precision  # noqa: F401
from .._settings import settings as _settings

_matmul_state = {
    "allow_fp16_reduced_precision_reduction": True,
    "allow_bf16_reduced_precision_reduction": True,
    "allow_fp16_accumulation": False,
}


class cuBLASModule:
    """``ember.backends.cuda.matmul``: the cuBLAS settings.

    ``allow_tf32`` (False; tied to the float32 matmul precision, see NOTE [ Float32 matmul
    precision ]), ``allow_fp16_reduced_precision_reduction`` (True),
    ``allow_bf16_reduced_precision_reduction`` (True), ``allow_fp16_accumulation`` (False),
    ``fp32_precision`` ("ieee" at "highest", else "tf32"). Other names raise AttributeError.

    Example::

        >>> ember.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
        True
    """

    _BOOLS = ("allow_tf32", "allow_fp16_reduced_precision_reduction",
              "allow_bf16_reduced_precision_reduction", "allow_fp16_accumulation")

    def __getattr__(self, name):
        if name == "allow_tf32":
            return _settings.float32_matmul_precision != "highest"
        if name == "fp32_precision":
            return "ieee" if _settings.float32_matmul_precision == "highest" else "tf32"
        if name in self._BOOLS:
            return _matmul_state[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name in self._BOOLS:
            if type(value) is not bool:
                raise RuntimeError(f"torch.backends.cuda.matmul.{name} expects a bool, but "
                                   f"got {type(value).__name__}")
            if name == "allow_tf32":
                _settings.float32_matmul_precision = "high" if value else "highest"
            else:
                _matmul_state[name] = value
            return
        if name == "fp32_precision":
            if value not in ("ieee", "tf32", "none"):
                raise RuntimeError(f"Unknown precision: {value}")
            _settings.float32_matmul_precision = "high" if value == "tf32" else "highest"
            return
        raise AttributeError(f"Unknown attribute {name}")

    def __repr__(self):
        return "<ember.backends.cuda.matmul>"


matmul = cuBLASModule()


def is_built() -> bool:
    """Whether ember can use CUDA at all: True when CuPy is installed (the "CUDA build").

    Returns:
        True if the ``cupy`` package can be imported; a GPU need not be present.

    Example::

        >>> isinstance(ember.backends.cuda.is_built(), bool)
        True
    """
    from ..cuda import _is_compiled

    return _is_compiled()


class SDPBackend(enum.IntEnum):
    """The scaled-dot-product-attention kernels PyTorch chooses among (ember runs MATH).

    Example::

        >>> int(ember.backends.cuda.SDPBackend.MATH)
        0
    """

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_sdp_state = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True,
              "fp16_bf16_reduction_math": False}


def _sdp_switch(key: str, what: str):
    def enable(enabled: bool) -> None:
        _sdp_state[key] = bool(enabled)

    def query() -> bool:
        return _sdp_state[key]

    enable.__doc__ = f"""Enable or disable {what} for scaled dot-product attention.

    ember always runs the math kernel; the switch is recorded as in PyTorch.

    Args:
        enabled: the new setting.

    Returns:
        None.

    Example::

        >>> ember.backends.cuda.enable_{key}_sdp(True)
    """
    query.__doc__ = f"""Whether {what} is enabled for scaled dot-product attention.

    Returns:
        The switch set by ``enable_{key}_sdp`` (default True).

    Example::

        >>> ember.backends.cuda.{key}_sdp_enabled()
        True
    """
    enable.__name__, query.__name__ = f"enable_{key}_sdp", f"{key}_sdp_enabled"
    enable.__qualname__, query.__qualname__ = enable.__name__, query.__name__
    return enable, query


enable_flash_sdp, flash_sdp_enabled = _sdp_switch("flash", "the FlashAttention kernel")
enable_mem_efficient_sdp, mem_efficient_sdp_enabled = _sdp_switch(
    "mem_efficient", "the memory-efficient kernel")
enable_math_sdp, math_sdp_enabled = _sdp_switch("math", "the math (reference) kernel")
enable_cudnn_sdp, cudnn_sdp_enabled = _sdp_switch("cudnn", "the cuDNN attention kernel")


def allow_fp16_bf16_reduction_math_sdp(enabled: bool) -> None:
    """Allow reduced-precision reductions in the math attention kernel for fp16/bf16 inputs.

    Args:
        enabled: the new setting.

    Returns:
        None.

    Example::

        >>> ember.backends.cuda.allow_fp16_bf16_reduction_math_sdp(False)
    """
    _sdp_state["fp16_bf16_reduction_math"] = bool(enabled)


def fp16_bf16_reduction_math_sdp_allowed() -> bool:
    """Whether reduced-precision reductions are allowed in the math attention kernel.

    Returns:
        The setting (default False).

    Example::

        >>> ember.backends.cuda.fp16_bf16_reduction_math_sdp_allowed()
        False
    """
    return _sdp_state["fp16_bf16_reduction_math"]


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True):
    """Deprecated block choosing the attention kernels (use ``nn.attention.sdpa_kernel``).

    Warns FutureWarning, sets the four switches for the block and restores them on exit.

    Args:
        enable_flash, enable_math, enable_mem_efficient, enable_cudnn: the switches.

    Returns:
        A context manager yielding an empty dict.

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     with ember.backends.cuda.sdp_kernel(enable_flash=False):
        ...         ember.backends.cuda.flash_sdp_enabled()
        False
    """
    warnings.warn(
        "`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context "
        "manager will be removed. Please see `torch.nn.attention.sdpa_kernel()` for the new "
        "context manager, with updated signature", FutureWarning, stacklevel=3)
    old = dict(_sdp_state)
    _sdp_state.update(flash=bool(enable_flash), math=bool(enable_math),
                      mem_efficient=bool(enable_mem_efficient), cudnn=bool(enable_cudnn))
    try:
        yield {}
    finally:
        _sdp_state.clear()
        _sdp_state.update(old)


def is_flash_attention_available() -> bool:
    """Whether a FlashAttention kernel is built in: False (ember has none).

    Returns:
        False.

    Example::

        >>> ember.backends.cuda.is_flash_attention_available()
        False
    """
    return False


def _cannot_use(kind):
    def can_use(params, debug: bool = False) -> bool:
        if debug:
            warnings.warn(f"ember has no {kind} kernel; scaled dot-product attention runs "
                          "the math kernel.", stacklevel=2)
        return False

    can_use.__doc__ = f"""Whether the {kind} kernel can run these attention inputs: False.

    ember has no {kind} kernel.

    Args:
        params: the attention inputs (PyTorch's ``SDPAParams``).
        debug: warn why the kernel cannot be used.

    Returns:
        False.

    Example::

        >>> ember.backends.cuda.{{name}}(None)
        False
    """
    return can_use


can_use_flash_attention = _cannot_use("FlashAttention")
can_use_efficient_attention = _cannot_use("memory-efficient attention")
can_use_cudnn_attention = _cannot_use("cuDNN attention")
for _name in ("can_use_flash_attention", "can_use_efficient_attention",
              "can_use_cudnn_attention"):
    _fn = globals()[_name]
    _fn.__name__ = _fn.__qualname__ = _name
    _fn.__doc__ = _fn.__doc__.replace("{name}", _name)
del _name, _fn


class _LinalgBackend(enum.Enum):
    Default = "default"
    Cusolver = "cusolver"
    Magma = "magma"


class _BlasBackend(enum.Enum):
    Cublas = "cublas"
    Cublaslt = "cublaslt"
    Ck = "ck"


_library_state = {"linalg": _LinalgBackend.Default, "blas": _BlasBackend.Cublas}


def preferred_linalg_library(backend=None):
    """The library CUDA linear algebra prefers; ember has only "default" (CuPy's choice).

    Args:
        backend: None to query, or "default". "cusolver"/"magma" raise RuntimeError, as in a
            PyTorch built without them.

    Returns:
        The current choice, ``_LinalgBackend.Default``.

    Example::

        >>> ember.backends.cuda.preferred_linalg_library().name
        'Default'
    """
    if backend is None:
        return _library_state["linalg"]
    name = backend.value if isinstance(backend, _LinalgBackend) else str(backend).lower()
    if name == "default":
        _library_state["linalg"] = _LinalgBackend.Default
    elif name in ("cusolver", "magma"):
        raise RuntimeError(f"Cannot set preferred backend to {name} if ember has not been "
                           f"built with {name} (ember uses CuPy's linear algebra).")
    else:
        raise RuntimeError("Unknown input value. Choose from: default, cusolver, magma.")
    return _library_state["linalg"]


def preferred_blas_library(backend=None):
    """The library CUDA matrix products prefer: recorded ("cublas", "cublaslt" or "ck").

    Args:
        backend: None to query, or a name to choose.

    Returns:
        The current choice (default ``_BlasBackend.Cublas``).

    Example::

        >>> ember.backends.cuda.preferred_blas_library().name
        'Cublas'
    """
    if backend is None:
        return _library_state["blas"]
    name = backend.value if isinstance(backend, _BlasBackend) else str(backend).lower()
    try:
        _library_state["blas"] = _BlasBackend(name)
    except ValueError:
        raise RuntimeError("Unknown input value. Choose from: cublas, cublaslt, ck.") from None
    return _library_state["blas"]


class cuFFTPlanCacheManager:
    """``ember.backends.cuda.cufft_plan_cache``: cuFFT plan caches, one per GPU.

    ember's FFTs on CUDA go through CuPy, which keeps its own plan cache; without CUDA the
    queries raise as PyTorch's do (AssertionError, or RuntimeError for a device index).

    Example::

        >>> ember.backends.cuda.cufft_plan_cache[0]  # doctest: +SKIP
    """

    def __getitem__(self, device):
        from .. import cuda

        index = int(getattr(device, "index", device) or 0)
        count = cuda.device_count()
        if not 0 <= index < count:
            raise RuntimeError(f"cufft_plan_cache: expected 0 <= device index < {count}, but "
                               f"got device with index {index}")
        return _CuPyPlanCache(index)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        from .. import cuda

        return getattr(self[cuda.current_device()], name)


class _CuPyPlanCache:
    """The plan cache of one GPU, as CuPy keeps it."""

    def __init__(self, index):
        self.device_index = index

    def _cache(self):
        import cupy

        with cupy.cuda.Device(self.device_index):
            return cupy.fft.config.get_plan_cache()

    @property
    def size(self):
        return self._cache().get_curr_size()

    @property
    def max_size(self):
        return self._cache().get_size()

    @max_size.setter
    def max_size(self, value):
        self._cache().set_size(int(value))

    def clear(self):
        self._cache().clear()


cufft_plan_cache = cuFFTPlanCacheManager()
