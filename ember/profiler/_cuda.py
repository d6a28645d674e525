"""GPU time of profiled ops, from CUDA events (``ProfilerActivity.CUDA``).

NOTE [ CUDA event timing ]
PyTorch's profiler reads kernel times from CUPTI. ember queues GPU work through CuPy, so it
times each op the way a user would by hand: when a profile asks for CUDA activity and
ember's CUDA backend runs, the op recorder (``_OpRecorder`` in ``_recorder.py``) records a
CUDA event on CuPy's current stream before and after each op, and keeps the pair when the
op touched GPU memory (an input or a result is a CuPy array); the GPU time between the two
events is the op's kernel time. At the session's start a reference event is recorded just
after a device synchronisation, at a known ``perf_counter_ns``, so that event times land on
the profile's CPU timeline: an op's kernels start at ``ref_us + elapsed(ref, start)``.
Nothing is read back while recording; ``stop`` synchronises once and ``resolve`` computes
the times when the events become ``FunctionEvent``s.

What it gives, shaped as PyTorch's results: per such op a device event (``device_type``
CUDA, on the stream's track) named ``<op> kernels`` -- CuPy does not name the kernels it
launches -- and the same time as a ``Kernel`` of the op's event, so the table has ``Self
CUDA`` / ``CUDA total`` columns and rows for the kernels, and the trace a ``kernel`` event
on the GPU's stream track with an ``ac2g`` flow arrow from the op. The time covers every
kernel the op queued (several for a composite op), and any wait on the stream between the
two events.

CuPy is imported only when a session asks for CUDA activity (``timer()``); the recorder
sees only the small interface below, so tests drive it with a fake clock on machines
without a GPU.
"""

from __future__ import annotations

from time import perf_counter_ns

__all__ = []


class CudaEventTimer:
    """Times ops with CUDA events on CuPy's current stream (NOTE [ CUDA event timing ]).

    Args:
        cp: the ``cupy`` module.
    """

    device_name = "cuda"

    def __init__(self, cp):
        self._cp = cp
        self._array_type = cp.ndarray
        self._pool = []
        self.ref = None
        self.ref_ns = 0

    def start(self):
        """Synchronise and record the reference event (at the session's start)."""
        cp = self._cp
        cp.cuda.get_current_stream().synchronize()
        self.ref = self.mark()
        self.ref.synchronize()
        self.ref_ns = perf_counter_ns()

    def stop(self):
        """Wait for every recorded event (at the session's end)."""
        self._cp.cuda.Device().synchronize()

    def mark(self):
        """A new event recorded now on the current stream."""
        ev = self._pool.pop() if self._pool else self._cp.cuda.Event()
        ev.record()
        return ev

    def release(self, ev):
        """Give back an event that was not kept (the op did not touch the GPU)."""
        self._pool.append(ev)

    def on_device(self, args, result) -> bool:
        """Whether a call with ``args`` giving ``result`` touched GPU arrays."""
        at = self._array_type
        for a in (result if type(result) in (tuple, list) else (result,)):
            if type(getattr(a, "_data", None)) is at:
                return True
        for a in args:
            if type(getattr(a, "_data", None)) is at:
                return True
            if type(a) in (tuple, list):
                for t in a:
                    if type(getattr(t, "_data", None)) is at:
                        return True
        return False

    def elapsed_us(self, a, b) -> float:
        """Microseconds of GPU time from event ``a`` to event ``b``."""
        return self._cp.cuda.get_elapsed_time(a, b) * 1e3

    def stream_id(self) -> int:
        """The id of the stream events are recorded on now (the trace's GPU track)."""
        s = self._cp.cuda.get_current_stream()
        return int(s.ptr) if s.ptr else 7   # 7: PyTorch's number for the default stream

    def device_index(self) -> int:
        """The GPU's index."""
        return int(self._cp.cuda.Device().id)


def timer():
    """A ``CudaEventTimer``, or None when CuPy or a GPU is missing."""
    try:
        from ..cuda import _runtime
        cp = _runtime.cupy()
        if cp.cuda.runtime.getDeviceCount() < 1:
            return None
    except Exception:
        return None
    return CudaEventTimer(cp)


def resolve(timer, session):
    """``[(event idx, gpu start us, gpu duration us, stream id)]`` for the ops of
    ``session`` that ran on the GPU (NOTE [ Profiler recording ]: op events are tuples whose
    last item is the pair of CUDA events), times on the profile's timeline (microseconds
    from its start)."""
    ref_us = (timer.ref_ns - session.start_ns) / 1e3
    out = []
    ref = timer.ref
    for raw in session.ops:
        pair = raw[-1] if len(raw) > 6 else None
        if pair is None:
            continue
        start, end, stream = pair
        out.append((raw[0], ref_us + timer.elapsed_us(ref, start),
                    timer.elapsed_us(start, end), stream))
    return out
