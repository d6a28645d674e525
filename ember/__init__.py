"""ember: a deep learning framework with PyTorch's API, on NumPy (CPU) and CuPy (CUDA).

``import ember as torch`` runs ordinary PyTorch programs.
"""

import math as _math

import numpy as _np

# NOTE [ Floating-point warnings ]
# PyTorch computes inf/nan silently (1/0 is inf, log(-1) is nan). NumPy warns on each
# (RuntimeWarning "divide by zero encountered in log", ...) unless its error state says
# "ignore". ember must not change that state for the user: the program's own NumPy code
# keeps warning as it did before ``import ember`` (``np.geterr()`` is left as it was).
# Switching the state around each kernel (``np.errstate``, or NumPy's context variable
# directly) costs 0.45-4 us per op -- 15% or more of a small ``a + b`` -- so instead one
# process-wide warnings filter drops NumPy's floating-point warnings raised from ember's own
# modules (a ufunc's warning names the module that called it). It costs nothing until a
# warning is raised (NumPy's check of the floating-point flags, ~0.1 us, is within noise).
# Limits: a filter the program adds later takes precedence (``simplefilter("error")``,
# ``pytest.warns``), and ``warnings.resetwarnings()`` or a ``catch_warnings()`` block around
# ``import ember`` drops it (pytest's does: the test suite adds it again in pyproject's
# ``filterwarnings``). Kernels whose result is inf/NaN by design on ordinary input (a
# variance with no degrees of freedom) use ``np.errstate`` on that cold path as well.
_FP_WARNINGS = dict(action="ignore",
                    message="(divide by zero|invalid value|overflow|underflow) encountered",
                    category=RuntimeWarning, module=r"ember(\.|$)")


def _filter_fp_warnings():
    import warnings

    warnings.filterwarnings(**_FP_WARNINGS)


_filter_fp_warnings()


def _tune_malloc():
    """NOTE [ Allocator tuning ]
    Tensors are NumPy arrays from the C allocator. glibc serves large blocks with mmap and
    returns them with munmap, so every fresh activation or gradient of a few MB costs
    system calls and page faults (zero-filled pages) -- measured as 4x on a cross-entropy
    step and 8% on a ResNet step. Raising the mmap and trim thresholds keeps freed blocks in
    the heap for reuse, as a caching allocator would. Set EMBER_NO_MALLOC_TUNING=1 to skip.
    """
    import os
    import sys

    if sys.platform != "linux" or os.environ.get("EMBER_NO_MALLOC_TUNING"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 256 * 1024 * 1024)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 512 * 1024 * 1024)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):  # not glibc: nothing to tune
        pass


_tune_malloc()

from ._core import dtype as _dtype_mod
from ._core.device import device
from ._core.dtype import (
    bfloat16, can_cast, complex64, complex128, dtype, finfo, float16, float32, float64,
    get_default_dtype, iinfo, int8, int16, int32, int64, promote_types, result_type,
    set_default_dtype, uint8, uint16, uint32, uint64,
)
from ._core.dtype import qint8, qint32, quint2x4, quint4x2, quint8  # quantized (ember.ao)
from ._core.dtype import (  # 8-bit floats (NOTE [ Float8 dtypes ])
    float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu,
)
from ._core.dtype import (  # bytes no kernel reads (NOTE [ Opaque dtypes ])
    bits1x8, bits2x4, bits4x2, bits8, bits16, complex32, float4_e2m1fn_x2, int1, int2, int3,
    int4, int5, int6, int7, uint1, uint2, uint3, uint4, uint5, uint6, uint7,
)
from .ao._qscheme import (  # noqa: E402
    per_channel_affine, per_channel_affine_float_qparams, per_channel_symmetric,
    per_tensor_affine, per_tensor_symmetric, qscheme,
)
from ._core.layout import (
    channels_last, channels_last_3d, contiguous_format, layout, memory_format,
    jagged, preserve_format, sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr, strided,
)
from ._core.size import Size
from ._core.storage import StorageBase, TypedStorage, UntypedStorage
from ._core.storage import legacy_storage_classes as _legacy_storages
from ._core.stream import AcceleratorError, Event, Stream
from ._core.tag import Tag
from ._core.tensor import Tensor

globals().update(_legacy_storages)  # FloatStorage, ... (NOTE [ Legacy storage classes ])
Storage = _legacy_storages["FloatStorage"]  # PyTorch's default storage class
legacy_contiguous_format = contiguous_format  # an old name PyTorch keeps for the same format

Tensor.__module__ = "ember"  # NOTE [ Printed module name ]

bool = _dtype_mod.bool_
half, float, double = float16, float32, float64
short, int, long = int16, int32, int64
cfloat, cdouble, chalf = complex64, complex128, complex32

from . import _ops
from ._ops import list_ops

globals().update(_ops.functions)
from ._overrides import settle as _settle  # noqa: E402

for _name, _f in _ops.functions.items():  # pickle finds them here
    _settle(_f, __name__, _name)
del _name, _f

from ._ops._legacy_types import cpu_types as _legacy_types  # noqa: E402

globals().update(_legacy_types)  # FloatTensor, LongTensor, ... (NOTE [ Legacy tensor types ])

from . import cuda  # noqa: E402  (imports CuPy only on first use of a CUDA device)
from .cuda import OutOfMemoryError  # noqa: E402  (torch.OutOfMemoryError is torch.cuda's)
from ._overrides import DisableTorchFunction, DisableTorchFunctionSubclass  # noqa: E402
from . import autograd  # noqa: E402  (registers the autograd hooks in the dispatcher)
from .autograd.grad_mode import (  # noqa: E402
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
    set_grad_enabled,
)

from ._core import _print as _tensor_str  # noqa: E402  (PyTorch's private module name)
from ._core._print import set_printoptions  # noqa: E402

from . import _C, library, multiprocessing, nn, ops, optim, overrides, utils  # noqa: E402
from . import profiler  # noqa: E402  (torch.profiler: NOTE [ Profiler recording ])
from .backends import meta as _meta  # noqa: E402

_meta.register()  # the meta device, through ember.library (NOTE [ Meta device ])
from .utils._device import get_default_device, set_default_device  # noqa: E402
from .serialization import load, save  # noqa: E402
from .ao._fake_quant_ops import (  # noqa: E402
    fake_quantize_per_channel_affine, fake_quantize_per_tensor_affine,
)
from .ao._qtensor import dequantize, quantize_per_channel, quantize_per_tensor  # noqa: E402
from . import special  # noqa: E402
from . import fft, linalg  # noqa: E402
from . import sparse  # noqa: E402  (the namespace only: NOTE [ Sparse tensors ])

from ._core.generator import Generator, default_generator  # noqa: E402
from . import random  # noqa: E402
from .random import (  # noqa: E402
    get_rng_state, initial_seed, manual_seed, seed, set_rng_state,
)

from . import amp, cpu  # noqa: E402  (mixed precision: NOTE [ Autocast ])
from .amp import GradScaler  # noqa: E402  (torch.GradScaler is torch.amp.GradScaler)
from .amp import autocast  # noqa: E402
from .amp._scaler_kernels import (  # noqa: E402  (NOTE [ Fused inf checks ])
    _amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_,
)
from . import __config__  # noqa: E402  (torch.__config__: show(), parallel_info())
from . import _foreach  # noqa: E402  (torch._foreach_*: one op over a list of tensors)

globals().update({_n: getattr(_foreach, _n) for _n in _foreach.__all__})
from .amp.autocast_mode import (  # noqa: E402
    autocast_decrement_nesting, autocast_increment_nesting, clear_autocast_cache,
    get_autocast_cpu_dtype, get_autocast_dtype, get_autocast_gpu_dtype, get_autocast_ipu_dtype,
    get_autocast_xla_dtype, is_autocast_cache_enabled, is_autocast_cpu_enabled,
    is_autocast_enabled, is_autocast_ipu_enabled, is_autocast_xla_enabled,
    set_autocast_cache_enabled, set_autocast_cpu_dtype, set_autocast_cpu_enabled,
    set_autocast_dtype, set_autocast_enabled, set_autocast_gpu_dtype, set_autocast_ipu_dtype,
    set_autocast_ipu_enabled, set_autocast_xla_dtype, set_autocast_xla_enabled,
)

from . import backends, accelerator, mps, xpu, distributed, onnx  # noqa: E402
from . import _dynamo, _inductor, compiler, jit  # noqa: E402  (NOTE [ Eager compile ])
from . import futures  # noqa: E402
from .futures import Future  # noqa: E402  (torch.Future: the futures' class)
from .jit import fork, wait  # noqa: E402  (torch.fork / torch.wait: eager, as jit's)
from . import func  # noqa: E402  (function transforms: grad, vmap, jacrev, ...)
from .func import vmap  # noqa: E402  (torch.vmap is torch.func.vmap)
from . import testing  # noqa: E402
from ._dynamo.eval_frame import compile  # noqa: E402

from . import types, version  # noqa: E402
from .torch_version import TorchVersion as _TorchVersion  # noqa: E402

# PyTorch's version with ember's as a local label (NOTE [ Version string ])
__version__ = _TorchVersion(version.__version__)

from ._settings import (  # noqa: E402  (NOTE [ Process-wide settings ])
    are_deterministic_algorithms_enabled, get_deterministic_debug_mode,
    get_float32_matmul_precision, get_num_interop_threads, get_num_threads, init_num_threads,
    is_deterministic_algorithms_warn_only_enabled, is_warn_always_enabled,
    set_deterministic_debug_mode, set_float32_matmul_precision, set_num_interop_threads,
    set_num_threads, set_warn_always, use_deterministic_algorithms,
)
from ._top_level import (  # noqa: E402
    SymBool, SymFloat, SymInt, compiled_with_cxx11_abi, get_device, get_device_module,
    get_file_path, has_lapack, has_mkl, has_openmp, has_spectral, is_anomaly_check_nan_enabled,
    is_anomaly_enabled, is_inference, is_nonzero, is_same_size, is_signed, is_vulkan_available,
    set_anomaly_enabled,
    set_default_tensor_type, set_flush_denormal, sym_float, sym_int, sym_ite, sym_max, sym_min,
    sym_not, sym_sqrt, sym_sum, typename,
)
from ._small_functions import (  # noqa: E402
    USE_GLOBAL_DEPS, USE_RTLD_GLOBAL_WITH_LIBTORCH, classproperty, is_distributed,
    ldexp_, prepare_multiprocessing_environment,
    profiler_allow_cudagraph_cupti_lazy_reinit_cuda12, segment_reduce, slice_inverse,
    sym_constrain_range, sym_constrain_range_for_size, sym_fresh_size, thread_safe_generator,
    to_dlpack, while_loop,
)
from ._sync_batch_norm import (  # noqa: E402  (NOTE [ Batch-norm primitives ])
    batch_norm_backward_elemt, batch_norm_backward_reduce, batch_norm_elemt,
    batch_norm_gather_stats, batch_norm_gather_stats_with_counts, batch_norm_stats,
    batch_norm_update_stats,
)
from ._top_level import (  # noqa: E402
    PRIVATE_OPS, FatalError, _assert, _assert_async, _check, _check_index, _check_is_size,
    _check_not_implemented, _check_tensor_all, _check_tensor_all_with, _check_type, _check_value,
    _check_with, _softmax_backward_data, cudnn_is_acceptable, mkldnn_convolution,
)
from .ao._qfunctions import (  # noqa: E402  (quantized tensors' function forms)
    choose_qparams_optimized, empty_quantized, fused_moving_avg_obs_fake_quant, int_repr,
    q_per_channel_axis, q_per_channel_scales,
    q_per_channel_zero_points, q_scale, q_zero_point, quantize_per_tensor_dynamic,
    quantized_batch_norm, quantized_max_pool1d, quantized_max_pool2d, quantized_max_pool3d,
)
from .jit._logging import (  # noqa: E402  (statistics loggers, as torch.jit._logging)
    AggregationType, LockingLogger, LoggerBase, NoopLogger,
)
from .jit import CompilationUnit, ScriptFunction  # noqa: E402  (torch.X is torch.jit.X)
from .jit import Error as JITException  # noqa: E402
from ._C import ScriptModule  # noqa: E402  (torch.ScriptModule is torch._C.ScriptModule)
from .jit._types import (  # noqa: E402  (TorchScript's types: NOTE [ JIT types ])
    AnyType, AwaitType, BoolType, ComplexType, DeviceObjType, DictType, EnumType, FloatType,
    FutureType,
    InferredType, IntType, ListType, NoneType, NumberType, OptionalType, PyObjectType,
    RRefType, StreamObjType, StringType, SymBoolType, SymIntType, TensorType, TupleType, Type,
    UnionType, unify_type_list,
)
from .jit._schema import Argument, FunctionSchema, parse_schema  # noqa: E402
from .jit._containers import (  # noqa: E402  (what jit.script makes of lists and dicts)
    ScriptDict, ScriptDictIterator, ScriptDictKeyIterator, ScriptList, ScriptListIterator,
)
from .serialization._file_io import PyTorchFileReader, PyTorchFileWriter  # noqa: E402
from .utils.throughput_benchmark import (  # noqa: E402  (the engine's classes)
    BenchmarkConfig, BenchmarkExecutionStats,
)
from .utils.throughput_benchmark import _Engine as ThroughputBenchmark  # noqa: E402
from ._classes import classes  # noqa: E402  (custom classes' namespace)
from .testing import FileCheck  # noqa: E402  (torch.FileCheck is torch.testing's)

AVG, SUM = AggregationType.AVG, AggregationType.SUM
bit = uint1  # torch.bit is torch.uint1

inf = _math.inf
nan = _math.nan
pi = _math.pi
e = _math.e
newaxis = None  # ``x[:, ember.newaxis]`` inserts a dimension, as NumPy's does


def is_tensor(obj):
    """Whether ``obj`` is an ember Tensor (a subclass counts; a NumPy array does not).

    Args:
        obj (object): anything.

    Returns:
        bool: ``isinstance(obj, ember.Tensor)``.

    Example:
        >>> ember.is_tensor(ember.zeros(1)), ember.is_tensor([0.0])
        (True, False)
    """
    return isinstance(obj, Tensor)


def is_storage(obj):
    """Whether ``obj`` is a storage (``ember.UntypedStorage`` or ``ember.TypedStorage``).

    Args:
        obj (object): anything.

    Returns:
        bool: True for storages, False for tensors and everything else.

    Example:
        >>> x = ember.zeros(2)
        >>> ember.is_storage(x.untyped_storage()), ember.is_storage(x)
        (True, False)
    """
    return isinstance(obj, (UntypedStorage, TypedStorage))


def is_floating_point(input):
    """Whether ``input`` has a floating dtype (float16, bfloat16, float32 or float64).

    Args:
        input (Tensor): the tensor.

    Returns:
        bool: the same as ``input.is_floating_point()``.

    Example:
        >>> ember.is_floating_point(ember.tensor([1.0])), ember.is_floating_point(ember.tensor([1]))
        (True, False)
    """
    return input.is_floating_point()


def is_complex(input):
    """Whether ``input`` has a complex dtype.

    Args:
        input (Tensor): the tensor.

    Returns:
        bool: the same as ``input.is_complex()``.

    Example:
        >>> ember.is_complex(ember.tensor([1j])), ember.is_complex(ember.tensor([1.0]))
        (True, False)
    """
    return input.is_complex()


def numel(input):
    """The number of elements of ``input``.

    Args:
        input (Tensor): the tensor.

    Returns:
        int: the product of its sizes (1 for a zero-dim tensor).

    Example:
        >>> ember.numel(ember.zeros(2, 3)), ember.numel(ember.tensor(5.0))
        (6, 1)
    """
    return input.numel()


def _standard_gamma(input, generator=None):
    """Draws from Gamma(``input``, 1), one per element, as PyTorch's CPU kernel draws them
    from the same seed (NOTE [ Gamma draws on the generator's stream ]); differentiable in
    ``input`` by the implicit reparameterisation gradient.

    Args:
        input (Tensor): concentrations, float32 or float64.
        generator (Generator, optional): where the draws come from (the default one).

    Returns:
        Tensor: draws of ``input``'s shape and dtype.

    Example::

        >>> _ = ember.manual_seed(0)
        >>> ember._standard_gamma(ember.tensor([2.0], dtype=ember.float64))
        tensor([4.5526], dtype=ember.float64)
    """
    from .distributions._sampling import standard_gamma

    return standard_gamma(input, generator)


def _sample_dirichlet(input, generator=None):
    """Draws from Dirichlet(``input``) over the last dimension: gamma draws as
    :func:`_standard_gamma` takes them, each row divided by its sum.

    Args:
        input (Tensor): concentrations, float32 or float64, the last dimension the categories.
        generator (Generator, optional): where the draws come from (the default one).

    Returns:
        Tensor: draws of ``input``'s shape and dtype, rows summing to one.

    Example::

        >>> _ = ember.manual_seed(0)
        >>> ember._sample_dirichlet(ember.tensor([2.0, 3.0], dtype=ember.float64))
        tensor([0.6726, 0.3274], dtype=ember.float64)
    """
    from .distributions._sampling import dirichlet

    return dirichlet(input, generator)


def _gamma_grad_args(op, tensors):
    # PyTorch's kernels take float32 or float64, all of one dtype
    dt = tensors[0].dtype
    if dt not in (float32, float64):
        name = {float16: "Half", bfloat16: "BFloat16"}.get(dt) or \
            str(dt).split(".")[-1].capitalize().replace("Int64", "Long")
        raise NotImplementedError(f'"{op}_cpu" not implemented for \'{name}\'')
    for t in tensors[1:]:
        if t.dtype != dt:
            names = {float32: "Float", float64: "Double"}
            raise RuntimeError(f"Found dtype {names.get(t.dtype, t.dtype)} but expected "
                               f"{names[dt]}")
    return [t.detach().cpu().numpy().astype("float64") for t in tensors]


def _standard_gamma_grad(self, output):
    """The derivative of Gamma(``self``, 1) draws ``output`` with respect to ``self``, by
    PyTorch's approximation (NOTE [ Approximate gamma and Dirichlet gradients, PyTorch's
    values ]): what :func:`_standard_gamma`'s backward multiplies the incoming gradient by.

    Args:
        self (Tensor): concentrations, float32 or float64.
        output (Tensor): draws (same dtype; shapes broadcast).

    Returns:
        Tensor: ``d output / d self``, of the broadcast shape, not differentiable.

    Example::

        >>> ember._standard_gamma_grad(ember.tensor([2.0]), ember.tensor([1.0]))
        tensor([0.7507])
    """
    from . import tensor
    from .distributions._gamma_grads import standard_gamma_grad

    a, x = _gamma_grad_args("_standard_gamma_grad", (self, output))
    return tensor(standard_gamma_grad(a, x), dtype=self.dtype, device=self.device)


def _dirichlet_grad(x, alpha, total):
    """The derivative of each Dirichlet draw coordinate ``x_i`` with respect to its own
    concentration ``alpha_i``, ``total`` the concentrations' sum, by PyTorch's approximation
    (NOTE [ Approximate gamma and Dirichlet gradients, PyTorch's values ]).

    Args:
        x (Tensor): the draws, float32 or float64.
        alpha (Tensor): their concentrations (same dtype).
        total (Tensor): the sums of the concentrations over the categories (same dtype;
            shapes broadcast).

    Returns:
        Tensor: ``d x_i / d alpha_i``, of the broadcast shape, not differentiable.

    Example::

        >>> a = ember.tensor([1.0, 2.0])
        >>> ember._dirichlet_grad(ember.tensor([0.3, 0.7]), a, a.sum().expand(2))
        tensor([0.4123, 0.4161])
    """
    from . import tensor
    from .distributions._gamma_grads import dirichlet_grad

    xs, a, tot = _gamma_grad_args("_dirichlet_grad", (x, alpha, total))
    return tensor(dirichlet_grad(xs, a, tot), dtype=x.dtype, device=x.device)


# Subpackages written on top of the whole of ember (``import ember`` inside them) load on
# first use, so the package's own import never goes round in a circle.
_ON_FIRST_USE = frozenset({"distributions", "quasirandom", "signal", "hub", "fx", "masked",
                           "functional", "storage", "mtia", "monitor", "export", "ao",
                           "quantization", "_logging", "nested", "_utils", "_tensor",
                           "_prims_common", "_custom_ops"})
# ... and some under a second name, as PyTorch's own import leaves them (torch.windows)
_ON_FIRST_USE_AS = {"windows": "signal.windows"}


def __getattr__(name):
    # NOTE: only reached for names ember does not define; says which torch API is missing
    if name in _ON_FIRST_USE or name in _ON_FIRST_USE_AS:
        import importlib

        return importlib.import_module(f"{__name__}.{_ON_FIRST_USE_AS.get(name, name)}")
    if name == "torch":  # torch.torch is the package itself (kornia writes torch.torch.Tensor)
        return __import__("sys").modules[__name__]
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"module 'ember' has no attribute '{name}' (torch.{name} is not implemented in "
        "ember yet)")
