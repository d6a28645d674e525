"""float32 products on onnxruntime's MLAS, for a NumPy whose OpenBLAS is pinned below the CPU.

NOTE [ Products past a pinned OpenBLAS ]
OpenBLAS picks its kernels for the CPU it finds, unless ``OPENBLAS_CORETYPE`` names one: the
development machines set ``OPENBLAS_CORETYPE=Haswell`` on AVX-512 CPUs, which caps NumPy's
GEMMs at AVX2 -- one thread ran a (2048, 256) @ (256, 1024) float32 product at 131 GF/s with
the Haswell kernels against 241 GF/s with the SkylakeX ones the same OpenBLAS picks when the
variable is unset -- while PyTorch's oneDNN and MKL kernels are not capped. ember leaves the
variable and NumPy's OpenBLAS as the user set them. onnxruntime (the ``fast``, ``onnx``
and ``test`` extras) brings MLAS, whose GEMM kernels follow the CPU's features: (2048, 256) @
(256, 1024) at two threads in 2.2 ms against OpenBLAS-Haswell's 4.2 (and 9.6 for PyTorch's
MKL at one thread). Where that pays (below) ember hands its large float32 products (through
``ember/_kernels/_blas.py``'s ``matmul``: linear layers, ``matmul``/``mm``/``bmm``, the
convolutions' products) to MLAS through a one-node onnxruntime session (``Gemm`` with the
transposes as attributes, or ``MatMul`` for stacks), bound to the operands' and result's own
buffers: no copies, ~7 us of call overhead, so only products of at least ``MIN_WORK``
multiply-adds (a stack's members together: the F(4x4) Winograd convolutions' 36 (64, 64) @
(64, 192) position products took 0.18 ms there against 0.61 on NumPy's stacked matmul) with
at least ``MIN_ROWS`` rows go there (a (32, 256) @ (256, 1024) LSTM step ran as fast on
OpenBLAS). MLAS splits a product's rows and columns over its threads, never the
reduction, so its results do not depend on the thread count; they differ from OpenBLAS's in
the last bits (another summation order), as any two BLAS libraries' do.

Which engine runs them: ``EMBER_GEMM=mlas`` asks for MLAS, ``EMBER_GEMM=numpy`` (or
``openblas``) for NumPy's BLAS, and unset (or ``auto``) takes MLAS exactly where it pays --
onnxruntime is installed, the CPU has AVX-512 (F, BW, VL, DQ) and NumPy's BLAS is an OpenBLAS
running kernels below it (threadpoolctl's ``architecture`` is not one of OpenBLAS's AVX-512
sets SkylakeX, Cooperlake, SapphireRapids): an unpinned OpenBLAS on the same CPU runs its
SkylakeX kernels, as fast as MLAS's, and keeps every product where it was. Measured with the
step's process at real-time priority (``chrt -f 10``), in-process A/B, MLAS/OpenBLAS-Haswell:
MLP 0.69, GPT-mini 0.71, MNIST CNN 0.96, ResNet-18 0.96, LSTM LM 0.99 (before the Winograd
and whole-sequence products were routed here too).

NOTE [ Forked children and onnxruntime's exit handlers ]
onnxruntime is not fork-safe at exit: creating its environment (importing the Python module
does) starts a helper thread that waits on a condition variable, and a C++ exit handler
destroys that variable at process exit. A child made by ``os.fork`` inherits the variable
with the parent's waiter counted but not the thread, so glibc's ``pthread_cond_destroy`` waits
for ever: the child hangs once it leaves through ``sys.exit`` or the end of its script
(``multiprocessing``'s children leave through ``os._exit`` and never run the handlers;
``subprocess`` children exec). ember loads onnxruntime only when it chooses MLAS, and from then
on every forked child registers, first thing, two C exit handlers of its own: glibc runs exit
handlers newest first, so at the child's exit they run before every inherited one -- one
flushes C stdio (``fflush(NULL)``), the other ends the process with the exit status
(``on_exit`` passes it to ``_exit``). Python's own finalisation (``atexit`` functions, its
streams) has already run by then, exactly as it has when a ``multiprocessing`` child calls
``os._exit``. Where there is no glibc ``on_exit`` (other C libraries, other systems) ``auto``
does not choose MLAS. ``_forget_sessions`` below keeps a child from using or freeing its
parent's sessions.

The one-node models are written here as protobuf bytes (``_model``), so the product engine
needs onnxruntime alone, not the ``onnx`` package (15 MB more resident, 70 ms more import).
"""

from __future__ import annotations

import os
import sys
import threading

import numpy as np

from .. import _parallel

#: stacks of products with fewer multiply-adds than this stay on NumPy's BLAS
MIN_WORK = 1 << 22
#: as do stacks whose members have fewer result rows than this (the MNIST CNN's (16, 32, 64)
#: @ (16, 64, 144) position products, 0.075 ms against NumPy's 0.090 alone, made its step 5%
#: slower on MLAS, run inside the convolution's batch pieces)
MIN_ROWS = 64
#: 2-D products of at least this many multiply-adds, with at least ``MIN_SIDE_2D`` rows and
#: columns, go to MLAS (NOTE [ Medium products on MLAS ])
MIN_WORK_2D = 1 << 20
MIN_SIDE_2D = 16

# NOTE [ Medium products on MLAS ]
# 2-D products once went to MLAS from 2**22 multiply-adds and 64 rows, the stacks' rule.
# Measured alone (one thread, medians, in-process alternation with NumPy), MLAS wins from
# 2**20 whatever the rows: (32, 512) @ (512, 512) 105 against OpenBLAS-Haswell's 167 us,
# (63, 256) @ (256, 256) 49 against 83, (1024, 32) @ (32, 32) 17 against 20, (32, 128) @
# (128, 256) 20 against 22, (2, 1024) @ (1024, 512) 72 against 113; at 2**19 it lost (1.14-
# 1.2x, bar the two-row ones): its call costs ~5 us through the raw bindings (``_run``)
# against NumPy's ~1.3. MLAS also reduces every row and column of a product in the same
# order, so equal rows of ``a`` give equal rows of the product (and equal columns of ``b``
# equal columns), as PyTorch's CPU products nearly always do; OpenBLAS's kernels round a row
# by its position in their block (9 of 10 random shapes break a row of equal inputs;
# PyTorch's MKL 1 in 14, MLAS none in 600). Products under 2**20 keep OpenBLAS, and with it
# that difference (NOTE [ Equal rows of a small product ] in
# tests/compat/test_research_repos_8.py). So do products with fewer than 16 rows or columns:
# a few-channel convolution's (8, 147) @ (147, 968) and its weight gradient's (147, 968) @
# (968, 8) on MLAS moved a 4-epoch CycleGAN (research_9/cyclegan_patchgan, NumPy kernels) by
# 2e-3 from PyTorch's losses where OpenBLAS stays within 1e-5 -- rounding a GAN amplifies,
# not an error, but the few-row products' gain is small ((8, 512) @ (512, 512) 68 -> 56 us).

_F32 = np.dtype(np.float32)
_state = [None]          # None: not decided yet; False: off; else the onnxruntime module
_sessions: dict = {}
_lock = threading.Lock()


def _forget_sessions():
    # A forked child has none of its parent's session threads: a session made before the fork
    # would wait for them for ever, so the child makes its own. Nor may the child destroy the
    # inherited ones (their destructor waits on the parent's threads too): each keeps a
    # reference no one drops, so that not even the interpreter's exit frees it.
    global _sessions, _lock
    import ctypes

    for s in _sessions.values():
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(s))
    _sessions = {}
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_sessions)


def _libc():
    """glibc, when this process runs on it and it has ``on_exit``; else None."""
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        for name in ("on_exit", "__cxa_atexit", "_exit", "fflush"):
            getattr(libc, name)
    except (OSError, AttributeError, TypeError):  # TypeError: no CDLL(None) on Windows
        return None
    return libc


def _exit_before_inherited_handlers():
    # NOTE [ Forked children and onnxruntime's exit handlers ]: registered in each forked
    # child, newest first at exit: flush C stdio, then end with the exit status, before any
    # inherited handler (onnxruntime's among them) runs
    import ctypes

    libc = _libc()
    if libc is None:
        return
    address = ctypes.c_void_p
    libc.on_exit.argtypes = [address, address]
    libc.__cxa_atexit.argtypes = [address, address, address]
    libc.on_exit(ctypes.cast(libc._exit, address), None)
    libc.__cxa_atexit(ctypes.cast(libc.fflush, address), None, None)


_guarded = [False]


def _guard_forks():
    """From now on, every forked child leaves without running the exit handlers it inherits
    (NOTE [ Forked children and onnxruntime's exit handlers ]); False where that cannot be
    done."""
    if _guarded[0]:
        return True
    if not hasattr(os, "register_at_fork") or _libc() is None:
        return False
    os.register_at_fork(after_in_child=_exit_before_inherited_handlers)
    _guarded[0] = True
    return True


#: OpenBLAS's AVX-512 kernel sets, as threadpoolctl names them
_AVX512_KERNELS = frozenset({"skylakex", "cooperlake", "sapphirerapids"})


def blas_below_cpu() -> bool:
    """Whether NumPy's BLAS runs kernels below this CPU's: an OpenBLAS whose kernel set is
    not an AVX-512 one, on a CPU with AVX-512 (as ``OPENBLAS_CORETYPE=Haswell`` makes it).

    Returns:
        bool: True when NumPy's products are pinned below the CPU.

    Example::

        >>> blas_below_cpu() in (True, False)
        True
    """
    from .._core.rng_math import _cpu_flags

    if not {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= _cpu_flags():
        return False
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return False
    for info in threadpool_info():
        if info.get("user_api") == "blas" and "numpy" in info.get("filepath", ""):
            return (info.get("internal_api") == "openblas"
                    and str(info.get("architecture") or "").lower() not in _AVX512_KERNELS)
    return False


def _decide():
    asked = os.environ.get("EMBER_GEMM", "").strip().lower() or "auto"
    if asked not in ("auto", "mlas"):
        return False
    if asked == "auto" and not blas_below_cpu():
        return False
    try:
        import onnxruntime
    except ImportError:
        return False
    if not _guard_forks() and asked == "auto":
        return False
    return onnxruntime


def engine() -> str:
    """The library ember's large float32 CPU products run on (NOTE [ Products past a pinned
    OpenBLAS ]).

    Returns:
        str: ``"mlas"`` (onnxruntime's MLAS) or ``"numpy"`` (NumPy's BLAS).

    Example::

        >>> engine() in ("mlas", "numpy")
        True
    """
    if _state[0] is None:
        _state[0] = _decide()
    return "mlas" if _state[0] else "numpy"


def _field(number, payload):
    """One protobuf field: a varint for ints, length-delimited bytes for bytes and str."""
    def varint(v):
        out = bytearray()
        while True:
            byte, v = v & 0x7F, v >> 7
            out.append(byte | (0x80 if v else 0))
            if not v:
                return bytes(out)

    if isinstance(payload, int):
        return varint(number << 3) + varint(payload)
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def _model(kind, ta, tb):
    """The serialised one-node ONNX model of a product: ``Gemm`` (with ``transA``/``transB``),
    ``MatMul``, or onnxruntime's ``FusedMatMul`` (a stack product taking ``transA``/``transB``,
    NOTE [ Stacks of transposed members ]) of float inputs ``A`` and ``B`` of any shape into
    ``C``, opset 13.

    Example::

        >>> _model("matmul", 0, 0)[:2]
        b'\x08\x07'
    """
    # field numbers: onnx.proto's ModelProto, GraphProto, NodeProto, AttributeProto,
    # ValueInfoProto, TypeProto(.Tensor) and OperatorSetIdProto
    def value(name):
        return _field(1, name) + _field(2, _field(1, _field(1, 1)))  # elem_type FLOAT

    attributes = b"".join(_field(5, _field(1, name) + _field(3, flag) + _field(20, 2))
                          for name, flag in (("transA", ta), ("transB", tb)))
    node = _field(1, "A") + _field(1, "B") + _field(2, "C")
    opsets = _field(8, _field(1, "") + _field(2, 13))
    if kind == "gemm":
        node += _field(4, "Gemm") + attributes
    elif kind == "fused":
        node += _field(4, "FusedMatMul") + attributes + _field(7, _CONTRIB)
        opsets += _field(8, _field(1, _CONTRIB) + _field(2, 1))
    else:
        node += _field(4, "MatMul")
    graph = (_field(1, node) + _field(2, "ember_product") + _field(11, value("A"))
             + _field(11, value("B")) + _field(12, value("C")))
    return _field(1, 7) + _field(7, graph) + opsets


#: the domain of onnxruntime's own operators (``FusedMatMul``)
_CONTRIB = "com.microsoft"

# NOTE [ Stacks of transposed members ]
# A convolution's weight adjoint is a stack of products each reducing over a chunk's tiles,
# with one operand's members transposed: ``dM[xi]^T @ V[xi]`` on channels-last tiles,
# ``dM[xi] @ V[xi]^T`` on planar ones. ONNX's ``MatMul`` takes no transposes, so such stacks
# once ran on NumPy's stacked matmul (OpenBLAS-Haswell, ~50 GMAC/s) or as one MLAS call a
# member (~20 us each). onnxruntime's ``FusedMatMul`` is its ``MatMul`` with ``transA`` /
# ``transB`` (MLAS packs a transposed member as it packs a transposed ``Gemm`` operand), so
# the whole stack is one call on its operands' own buffers. One thread, CPU time, medians,
# (16 members, reduction T, result O x C), fused / NumPy stacked / MLAS a member, ms:
# the MNIST CNN's conv2 channels-last T=288 64x32 0.148 / 0.189 / 0.211; ResNet-18's
# planar 64x64 T=512 0.331 / 0.664 / 0.454 and 128x128 T=256 0.674 / 1.283 / 0.865;
# channels-last 256x256 T=64 0.676 / 1.224 / 0.846, 512x512 T=32 1.457 / 2.788 / 1.522.
# An onnxruntime without the operator (``_fused_ok`` finds out once) keeps the copy that
# makes such a stack contiguous for ``MatMul``.
_fused = [None]


def _fused_ok(ort):
    """Whether this onnxruntime runs ``FusedMatMul`` (NOTE [ Stacks of transposed members ])."""
    if _fused[0] is None:
        try:
            _session(ort, "fused", 1, 0, 1)
        except Exception:   # a build without onnxruntime's own operators
            _fused[0] = False
        else:
            _fused[0] = True
    return _fused[0]


def _member_layout(x):
    """(array MLAS reads, transposed?) for a stack (3-D) operand whose members are
    C-contiguous or transposed views of C-contiguous ones; None otherwise."""
    if x.flags.c_contiguous:
        return x, 0
    t = x.transpose(0, 2, 1)
    if t.flags.c_contiguous:
        return t, 1
    return None


def _session(ort, kind, ta, tb, threads):
    key = (kind, ta, tb, threads)
    s = _sessions.get(key)
    if s is not None:
        return s
    with _lock:
        s = _sessions.get(key)
        if s is None:
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            # workers sleep between products: spinning ones would hold the core that ember's
            # own pool and OpenBLAS's workers need
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            s = ort.InferenceSession(_model(kind, ta, tb), opts,
                                     providers=["CPUExecutionProvider"])
            _sessions[key] = s
    return s


# NOTE [ A transposed first operand ]
# MLAS runs ``A^T @ B`` about 15% slower than ``A @ B`` with A already laid out row by row
# (one thread, AVX-512): (576, 128)^T @ (128, 8192), a stride-2 convolution's input adjoint,
# 6.31 against 5.47 ms; (1152, 256)^T @ (256, 2048) 5.89 against 5.10; a transposed B costs
# nothing (5.17, 5.00). So a transposed A is copied first where the copy is small (a
# weight, not an activation: at most _COPY_A_ELEMENTS) and each of its elements then serves
# at least _COPY_A_COLUMNS multiply-adds, ~1 ns of copying against ~1.3 ps saved per
# multiply-add: (576, 128) copies in 0.07 ms.
_COPY_A_COLUMNS = 1024
_COPY_A_ELEMENTS = 1 << 20


def _operand(x):
    """(array MLAS reads, transposed?) for a 2-D operand, or None when it is neither C- nor
    Fortran-contiguous."""
    f = x.flags
    if f.c_contiguous:
        return x, 0
    if f.f_contiguous:
        return x.T, 1
    return None


def _threads(m, n, k):
    if _parallel._held[0] or getattr(_parallel._piece, "busy", False):
        return 1
    # (_blas imports this module, so it is found at call time, without an import statement)
    return 1 if sys.modules[__package__]._blas.one_thread(m, n, k) else _parallel._threads()


def matmul(a, b, out=None):
    """``a @ b`` on MLAS when that is the choice for it (NOTE [ Products past a pinned
    OpenBLAS ]), else None.

    Args:
        a: (m, k) or (s, m, k) float32 NumPy array.
        b: (k, n) or (s, k, n) float32 NumPy array.
        out: optional C-contiguous float32 result array of the product's shape.

    Returns:
        ndarray or None: the product, or None when the product is not one for MLAS
        (small, another dtype or layout, MLAS not chosen); the caller then computes it.

    Example::

        >>> a = np.ones((256, 256), np.float32)
        >>> r = matmul(a, a)
        >>> r is None or float(r[0, 0]) == 256.0
        True
    """
    if a.dtype is not _F32 or b.dtype is not _F32 or a.ndim < 2 or b.ndim < 2 \
            or a.ndim > 3 or b.ndim > a.ndim:
        return None
    m, k = a.shape[-2:]
    n = b.shape[-1]
    # a stack counts its members' work together: MLAS spreads the members over its threads
    work = a.size * n
    if b.shape[-2] != k:
        return None
    if a.ndim == 2:
        if min(m, n) < MIN_SIDE_2D or work < MIN_WORK_2D:   # NOTE [ Medium products on MLAS ]
            return None
    elif m < MIN_ROWS or work < MIN_WORK:
        return None
    ort = _state[0]
    if ort is None:
        engine()
        ort = _state[0]
    if not ort:
        return None
    shape = a.shape[:-1] + (n,)
    if a.ndim == 3:
        if b.ndim == 3 and b.shape[0] != a.shape[0]:
            return None
        A, B, kind, ta, tb = a, b, "matmul", 0, 0
        if not (a.flags.c_contiguous and b.flags.c_contiguous):
            pa = _member_layout(a)
            pb = _member_layout(b) if b.ndim == 3 else None
            if pa is not None and pb is not None and _fused_ok(ort):
                # NOTE [ Stacks of transposed members ]
                (A, ta), (B, tb) = pa, pb
                kind = "fused"
            else:
                # a stack's operand in another layout is copied (MatMul takes no
                # transposes) when the product does at least MIN_ROWS multiply-adds per
                # element copied: a (16, 128, 128) stack of transposed members times (16,
                # 128, 256) took 0.70 ms with its copy against NumPy's 0.98
                if not a.flags.c_contiguous:
                    if n < MIN_ROWS:
                        return None
                    A = np.ascontiguousarray(a)
                if not b.flags.c_contiguous:   # (m is at least MIN_ROWS)
                    B = np.ascontiguousarray(b)
    else:
        pa, pb = _operand(a), _operand(b)
        if pa is None or pb is None:
            return None
        (A, ta), (B, tb) = pa, pb
        if ta and n >= _COPY_A_COLUMNS and a.size <= _COPY_A_ELEMENTS:
            # NOTE [ A transposed first operand ]
            A, ta = np.ascontiguousarray(a), 0
        kind = "gemm"
    if out is None:
        out = np.empty(shape, _F32)
    elif out.dtype is not _F32 or out.shape != shape or not out.flags.c_contiguous:
        return None
    _run(ort, _session(ort, kind, ta, tb, _threads(work // (n * k), n, k)), A, B, out)
    return out


# onnxruntime's own binding classes and CPU device, for ``_run``; False where this
# onnxruntime lacks them (the public IOBinding then serves)
_raw = [None]


def _raw_api(ort):
    try:
        c = ort.capi._pybind_state
        _raw[0] = (c.SessionIOBinding, ort.OrtDevice.make("cpu", 0)._get_c_device())
    except Exception:   # another onnxruntime's layout
        _raw[0] = False
    return _raw[0]


def _run(ort, s, a, b, out):
    """Run the product session ``s`` on ``a`` and ``b`` into ``out``. onnxruntime's Python
    IOBinding wraps each bind in checks that, with the session's run, cost ~9 us for a small
    product; its underlying bindings take ~5 (NOTE [ Medium products on MLAS ]): those are
    used where this onnxruntime has them."""
    raw = _raw[0]
    if raw is None:
        raw = _raw_api(ort)
    if raw:
        try:
            sess = s._sess
            io = raw[0](sess)
            io.bind_input("A", a)
            io.bind_input("B", b)
            io.bind_output("C", raw[1], _F32, out.shape, out.ctypes.data)
        except (AttributeError, TypeError):   # not the bindings this code knows
            _raw[0] = False
        else:
            sess.run_with_iobinding(io, None)
            return
    io = s.io_binding()
    io.bind_cpu_input("A", a)
    io.bind_cpu_input("B", b)
    io.bind_output("C", "cpu", 0, _F32, list(out.shape), out.ctypes.data)
    s.run_with_iobinding(io)


def product(a, b, out=None):
    """``np.matmul(a, b)`` (into ``out`` when given) for NumPy arrays: on MLAS when that is the
    choice for it (``matmul`` above), else NumPy's. For kernels that run their products
    themselves (the Winograd convolutions' per-position products), where ``_blas.matmul``'s
    thread choice is already made around them.

    Args:
        a: (..., m, k) NumPy array.
        b: (..., k, n) NumPy array.
        out: optional result array, as for ``np.matmul``.

    Returns:
        ndarray: the product.

    Example::

        >>> a = np.arange(6, dtype=np.float32).reshape(2, 3)
        >>> product(a, a.T).tolist()
        [[5.0, 14.0], [14.0, 50.0]]
    """
    if _state[0] is not False:
        r = matmul(a, b, out)
        if r is not None:
            return r
    return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)
