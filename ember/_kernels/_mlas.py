"""float32 products on onnxruntime's MLAS, for a NumPy whose OpenBLAS is pinned below the CPU.

NOTE [ Products past a pinned OpenBLAS ]
OpenBLAS picks its kernels for the CPU it finds, unless ``OPENBLAS_CORETYPE`` names one: the
development machines set ``OPENBLAS_CORETYPE=Haswell`` on AVX-512 CPUs, which caps NumPy's
GEMMs at AVX2 -- one thread ran a (2048, 256) @ (256, 1024) float32 product at 131 GF/s with
the Haswell kernels against 241 GF/s with the SkylakeX ones the same OpenBLAS picks when the
variable is unset -- while PyTorch's oneDNN and MKL kernels are not capped. ember leaves the
variable and NumPy's OpenBLAS as the user set them. onnxruntime (the ``onnx`` and ``test``
extras) brings MLAS, whose GEMM kernels follow the CPU's features: (2048, 256) @ (256, 1024)
at two threads in 2.2 ms against OpenBLAS-Haswell's 4.2 (and 9.6 for PyTorch's MKL at one
thread). With ``EMBER_GEMM=mlas`` ember hands its large float32 products (through
``ember/_kernels/_blas.py``'s ``matmul``: linear layers, ``matmul``/``mm``/``bmm``, the
convolutions' products) to MLAS through a one-node onnxruntime session (``Gemm`` with the
transposes as attributes, or ``MatMul`` for stacks), bound to the operands' and result's own
buffers: no copies, ~7 us of call overhead, so only products of at least ``MIN_WORK``
multiply-adds with at least ``MIN_ROWS`` rows go there (a (32, 256) @ (256, 1024) LSTM step ran
as fast on OpenBLAS). MLAS splits a product's rows and columns over its threads, never the
reduction, so its results do not depend on the thread count; they differ from OpenBLAS's in
the last bits (another summation order), as any two BLAS libraries' do.

It is a choice, not the default, because onnxruntime is not fork-safe: in a process that has
imported it (a session need not even have run), a child made by ``os.fork`` hangs in
onnxruntime's C++ exit handlers if it leaves through ``sys.exit`` or the end of its script
(children of ``multiprocessing`` leave through ``os._exit`` and are fine, as are ``subprocess``
children). A default that could hang a forking program at exit is worse than a slower
product. Measured with the step's process at real-time priority (``chrt -f 10``, the machine
otherwise loaded), in-process A/B, MLAS/OpenBLAS-Haswell: MLP 0.69, GPT-mini 0.71, MNIST CNN
0.96, ResNet-18 0.96 (its convolution products mostly do not pass through ``matmul``), LSTM LM
0.99 (its products are plain ``@``). ``_forget_sessions`` below keeps a child from using or
freeing its parent's sessions.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from .. import _parallel

#: products with fewer multiply-adds than this stay on NumPy's BLAS (call overhead)
MIN_WORK = 1 << 22
#: nor do products with fewer result rows than this (MLAS is no faster there)
MIN_ROWS = 64

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


def _decide():
    if os.environ.get("EMBER_GEMM", "").strip().lower() != "mlas":
        return False
    try:
        import onnx  # noqa: F401 -- builds the one-node models
        import onnxruntime
    except ImportError:
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


def _session(ort, kind, ta, tb, threads):
    key = (kind, ta, tb, threads)
    s = _sessions.get(key)
    if s is not None:
        return s
    with _lock:
        s = _sessions.get(key)
        if s is None:
            from onnx import TensorProto, helper

            if kind == "gemm":
                node = helper.make_node("Gemm", ["A", "B"], ["C"], transA=ta, transB=tb)
            else:
                node = helper.make_node("MatMul", ["A", "B"], ["C"])
            value = helper.make_tensor_value_info
            graph = helper.make_graph([node], "ember_product",
                                      [value("A", TensorProto.FLOAT, None),
                                       value("B", TensorProto.FLOAT, None)],
                                      [value("C", TensorProto.FLOAT, None)])
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
            model.ir_version = 7
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            # workers sleep between products: spinning ones would hold the core that ember's
            # own pool and OpenBLAS's workers need
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            s = ort.InferenceSession(model.SerializeToString(), opts,
                                     providers=["CPUExecutionProvider"])
            _sessions[key] = s
    return s


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
    from ._blas import one_thread

    return 1 if one_thread(m, n, k) else _parallel._threads()


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
    if m < MIN_ROWS or m * n * k < MIN_WORK or b.shape[-2] != k:
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
        if not (a.flags.c_contiguous and b.flags.c_contiguous):
            return None
        A, B, kind, ta, tb = a, b, "matmul", 0, 0
    else:
        pa, pb = _operand(a), _operand(b)
        if pa is None or pb is None:
            return None
        (A, ta), (B, tb) = pa, pb
        kind = "gemm"
    if out is None:
        out = np.empty(shape, _F32)
    elif out.dtype is not _F32 or out.shape != shape or not out.flags.c_contiguous:
        return None
    s = _session(ort, kind, ta, tb, _threads(m, n, k))
    io = s.io_binding()
    io.bind_cpu_input("A", A)
    io.bind_cpu_input("B", B)
    io.bind_output("C", "cpu", 0, _F32, list(shape), out.ctypes.data)
    s.run_with_iobinding(io)
    return out


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
