"""``ember.cuda.graphs``: CUDA graphs through CuPy's stream capture.

NOTE [ CUDA graphs on CuPy ]
A capture records the kernels queued on a side stream (``cupy.cuda.Stream.begin_capture``)
into a graph that ``replay`` launches again with one call. Replays read and write the very
addresses used while capturing, so (as PyTorch's private graph pool does) every block
allocated during the capture is kept by the graph's pool until ``reset`` or the graph dies
(NOTE [ Counting CuPy's pool ] in ember/cuda/_allocator.py). Graphs that share a pool
(``pool=other.pool()`` or ``graph_pool_handle()``) keep their blocks in one list.

ember's allocator may call ``cudaMalloc`` during a capture, which CUDA's stricter capture
modes forbid, so captures always run in CUDA's *relaxed* mode; ``capture_error_mode`` is
checked for PyTorch's values and otherwise ignored. As in PyTorch, run the work once before
capturing (CuPy compiles and loads kernels on first use, which a capture cannot record), and
keep everything the graph touches on the GPU: a capture cannot copy to or from the host.
CuPy refuses to call cuBLAS while a stream captures (NotImplementedError "calling cuBLAS
API during stream capture is currently unsupported"), so matrix products (``matmul``,
``nn.Linear``) cannot be captured yet; elementwise work, reductions and copies can.

Without CuPy or a GPU, ``CUDAGraph()``, ``graph_pool_handle()`` and
``is_current_stream_capturing()`` raise RuntimeError, as PyTorch's CPU build does.
"""

from __future__ import annotations

import gc

from . import _runtime

__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing",
           "make_graphed_callables"]

_MODES = ("global", "thread_local", "relaxed")


def _require(what: str):
    if not _runtime.is_compiled() or _runtime.gpu_count() == 0:
        raise RuntimeError(f"ember.cuda.{what} needs CUDA (CuPy and a visible NVIDIA GPU)")
    from .. import cuda

    cuda._lazy_init()
    return _runtime.cupy()


class _GraphPool:
    """The blocks kept alive for one or more graphs (PyTorch's graph memory pool handle)."""

    __slots__ = ("blocks",)

    def __init__(self):
        self.blocks: list = []

    def __repr__(self):
        return f"<ember.cuda graph pool: {len(self.blocks)} blocks>"


def graph_pool_handle() -> _GraphPool:
    """A new memory pool for graphs to share (pass it as ``pool=`` to ``graph`` or
    ``CUDAGraph.capture_begin``).

    Returns:
        An opaque handle.

    Raises:
        RuntimeError: without CuPy or a GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     pool = ember.cuda.graph_pool_handle()
    """
    _require("graph_pool_handle")
    return _GraphPool()


def is_current_stream_capturing() -> bool:
    """Whether the current CUDA stream is recording a graph.

    Returns:
        bool

    Raises:
        RuntimeError: without CuPy or a GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     assert not ember.cuda.is_current_stream_capturing()
    """
    cp = _require("is_current_stream_capturing")
    return bool(cp.cuda.get_current_stream().is_capturing())


class CUDAGraph:
    """A recorded sequence of GPU work, replayed with one launch (see NOTE [ CUDA graphs on
    CuPy ]).

    Args:
        keep_graph: accepted for PyTorch's signature (CuPy instantiates at capture end).

    Raises:
        RuntimeError: without CuPy or a GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     g = ember.cuda.CUDAGraph()
        ...     x = ember.zeros(3, device="cuda")
        ...     y = x + 1  # warm up: kernels are compiled before the capture
        ...     with ember.cuda.graph(g):
        ...         y = x + 1
        ...     x.fill_(2.0)
        ...     g.replay()
    """

    def __init__(self, keep_graph: bool = False):
        self._cp = _require("CUDAGraph")
        self._graph = None
        self._pool = None
        self._stream = None

    def capture_begin(self, pool=None, capture_error_mode: str = "global") -> None:
        """Start recording the work queued on the current stream (not the default stream).

        Args:
            pool: a ``graph_pool_handle()`` or another graph's ``pool()`` to share.
            capture_error_mode: 'global', 'thread_local' or 'relaxed' (see the note).

        Returns:
            None
        """
        if capture_error_mode not in _MODES:
            raise RuntimeError(f"Unknown capture error mode. Expected `global`, `thread_local`, "
                               f"or `relaxed`, got {capture_error_mode}")
        cp = self._cp
        stream = cp.cuda.get_current_stream()
        if stream.ptr == 0:
            raise RuntimeError("CUDA graphs must be captured on a non-default stream. (However, "
                               "after capture, it's ok to replay them on the default stream.)")
        if self._graph is not None:
            raise RuntimeError("This CUDAGraph instance already owns a captured graph. To "
                               "capture a new graph, create a new instance or call reset().")
        from . import memory

        self._pool = pool if isinstance(pool, _GraphPool) else _GraphPool()
        memory._allocator.captures.append(self._pool.blocks)
        self._stream = stream
        try:
            stream.begin_capture(cp.cuda.runtime.streamCaptureModeRelaxed)
        except Exception:
            memory._allocator.captures.remove(self._pool.blocks)
            raise

    def capture_end(self) -> None:
        """Stop recording; the graph is ready to ``replay``.

        Returns:
            None
        """
        from . import memory

        try:
            self._graph = self._stream.end_capture()
        finally:
            if self._pool is not None and self._pool.blocks in memory._allocator.captures:
                memory._allocator.captures.remove(self._pool.blocks)

    def replay(self) -> None:
        """Launch the recorded work on the current stream.

        Returns:
            None
        """
        if self._graph is None:
            raise RuntimeError("CUDAGraph.replay: nothing was captured (call capture_begin "
                               "and capture_end, or use ember.cuda.graph)")
        self._graph.launch(self._cp.cuda.get_current_stream())

    def reset(self) -> None:
        """Drop the recorded graph and the memory it kept (when no other graph shares it).

        Returns:
            None
        """
        self._graph = None
        self._pool = None

    def pool(self) -> _GraphPool:
        """This graph's memory pool, to share with graphs captured later.

        Returns:
            An opaque handle.
        """
        if self._pool is None:
            raise RuntimeError("CUDAGraph.pool: the graph has not started a capture yet")
        return self._pool


class graph:
    """A block whose GPU work is captured into ``cuda_graph`` on a side stream.

    Args:
        cuda_graph: a ``CUDAGraph``.
        pool: a pool to share with other graphs (``graph_pool_handle()``).
        stream: the stream to capture on (default: a new one).
        capture_error_mode: PyTorch's values; see NOTE [ CUDA graphs on CuPy ].

    Example::

        >>> if ember.cuda.is_available():
        ...     g = ember.cuda.CUDAGraph()
        ...     x = ember.ones(2, device="cuda")
        ...     _ = x * 2
        ...     with ember.cuda.graph(g):
        ...         y = x * 2
        ...     g.replay()
    """

    default_capture_stream = None

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode: str = "global"):
        from .streams import Stream

        _require("graph")
        if not isinstance(cuda_graph, CUDAGraph):
            raise TypeError(f"ember.cuda.graph: expected a CUDAGraph, got "
                            f"{type(cuda_graph).__name__}")
        if stream is None:
            if graph.default_capture_stream is None:
                graph.default_capture_stream = Stream()
            stream = graph.default_capture_stream
        self.cuda_graph = cuda_graph
        self.pool = pool
        self.capture_stream = stream
        self.capture_error_mode = capture_error_mode
        self._context = None

    def __enter__(self):
        from . import memory, synchronize
        from .streams import stream as stream_context

        synchronize()
        gc.collect()
        memory.empty_cache()
        self._context = stream_context(self.capture_stream)
        self._context.__enter__()
        try:
            self.cuda_graph.capture_begin(self.pool, self.capture_error_mode)
        except BaseException:
            self._context.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type, exc, tb):
        try:
            self.cuda_graph.capture_end()
        except Exception:
            if exc_type is None:
                raise
            # the block's own error says what went wrong; the aborted capture adds nothing
        finally:
            self._context.__exit__(exc_type, exc, tb)
        return False


def make_graphed_callables(callables, sample_args, num_warmup_iters: int = 3,
                           allow_unused_input: bool = False, pool=None):
    """Callables that replay CUDA graphs of ``callables``' forward (and backward) passes.

    Each callable is run ``num_warmup_iters`` times on its sample arguments, then its forward
    pass is captured; when an input or parameter requires grad, the backward pass
    (``autograd.grad`` of the outputs) is captured too. The returned callable copies its
    arguments into the captured inputs, replays, and returns the captured outputs, through
    an autograd Function whose backward replays the backward graph. Arguments must have the
    sample arguments' shapes, dtypes and devices, as in PyTorch. Matrix products cannot be
    captured through CuPy yet (see NOTE [ CUDA graphs on CuPy ]).

    Args:
        callables: a callable (function or Module), or a tuple of them.
        sample_args: a tuple of tensors for one callable, or a tuple of such tuples.
        num_warmup_iters: runs before the capture.
        allow_unused_input: let inputs that the outputs do not depend on get no gradient.
        pool: a memory pool to share (``graph_pool_handle()``).

    Returns:
        The graphed callable, or a tuple of them when ``callables`` was a tuple.

    Raises:
        RuntimeError: without CuPy or a GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     f = ember.cuda.make_graphed_callables(ember.sigmoid,
        ...                                           (ember.randn(8, device="cuda"),))
        ...     y = f(ember.randn(8, device="cuda"))
    """
    _require("make_graphed_callables")
    just_one = not isinstance(callables, tuple)
    if just_one:
        callables, sample_args = (callables,), (sample_args,)
    pool = pool if pool is not None else graph_pool_handle()
    out = tuple(_graph_one(fn, tuple(args), num_warmup_iters, allow_unused_input, pool)
                for fn, args in zip(callables, sample_args))
    return out[0] if just_one else out


def _graph_one(fn, sample_args, num_warmup_iters, allow_unused_input, pool):
    import ember
    from .. import autograd
    from .streams import Stream, current_stream, stream as stream_context

    params = tuple(p for p in getattr(fn, "parameters", lambda: ())() if p.requires_grad)
    diff_inputs = tuple(a for a in sample_args if isinstance(a, ember.Tensor)
                        and a.requires_grad) + params
    side = Stream()
    side.wait_stream(current_stream())

    def run_forward():
        outs = fn(*sample_args)
        return outs if isinstance(outs, tuple) else (outs,)

    def run_backward(outs, grads_out):
        pairs = [(o, g) for o, g in zip(outs, grads_out) if o.requires_grad]
        return autograd.grad([o for o, _ in pairs], diff_inputs, [g for _, g in pairs],
                             allow_unused=allow_unused_input)

    with stream_context(side):
        for _ in range(num_warmup_iters):
            outs = run_forward()
            if diff_inputs:
                run_backward(outs, [ember.ones_like(o) for o in outs])
    current_stream().wait_stream(side)

    fwd = CUDAGraph()
    with graph(fwd, pool=pool, stream=side):
        static_outs = run_forward()
    static_grad_outs = tuple(ember.zeros_like(o) for o in static_outs)
    bwd = None
    static_grads = ()
    if diff_inputs:
        bwd = CUDAGraph()
        with graph(bwd, pool=pool, stream=side):
            static_grads = run_backward(static_outs, static_grad_outs)
    n_inputs = len(sample_args)
    diff_mask = [isinstance(a, ember.Tensor) and a.requires_grad for a in sample_args]

    class Graphed(autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            for static, new in zip(sample_args, inputs[:n_inputs]):
                if isinstance(static, ember.Tensor) and static.data_ptr() != new.data_ptr():
                    static.detach().copy_(new)
            fwd.replay()
            return tuple(o.detach() for o in static_outs)

        @staticmethod
        def backward(ctx, *grads):
            for static, g in zip(static_grad_outs, grads):
                if g is not None:
                    static.copy_(g)
            bwd.replay()
            it = (None if g is None else g.detach() for g in static_grads)
            result = [next(it) if need else None for need in diff_mask]
            result += [next(it) for _ in params]
            return tuple(result)

    def graphed(*args):
        if len(args) != n_inputs:
            raise TypeError(f"graphed callable: expected {n_inputs} arguments, got {len(args)}")
        if diff_inputs and ember.is_grad_enabled():
            outs = Graphed.apply(*args, *params)
        else:
            for static, new in zip(sample_args, args):
                if isinstance(static, ember.Tensor) and static.data_ptr() != new.data_ptr():
                    static.detach().copy_(new)
            fwd.replay()
            outs = tuple(o.detach() for o in static_outs)
        return outs[0] if len(outs) == 1 else outs

    if isinstance(fn, ember.nn.Module):
        fn.forward = graphed
        return fn
    return graphed
