"""Turn a finished recording session's raw events into ``FunctionEvent``s.

Times become microseconds from the session's start; each event learns its parent and
children; memory becomes inclusive (an event's bytes plus its children's), as PyTorch's
``cpu_memory_usage`` is. ``ProfilerStep#N`` blocks are listed as ``ProfilerStep*`` (their
trace keeps the numbered name), as in PyTorch.
"""

from __future__ import annotations

import gc

from ..autograd.profiler_util import EventList, FunctionEvent
from ._recorder import shape_lists, stack_lines


def function_events(session, meta=None) -> EventList:
    """The ``EventList`` of ``session`` (a stopped ``_recorder._Session``)."""
    # Building tens of thousands of events, none of them garbage, sets off the cyclic
    # collector over and over, and each pass walks every object made so far: that
    # doubled the cost of a long profile's conversion. No cycle can be freed meanwhile.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _function_events(session, meta)
    finally:
        if enabled:
            gc.enable()


def _function_events(session, meta):
    t0 = session.start_ns
    made = {}
    out = []
    thread = 1
    use_device = (meta or {}).get("use_device")
    end_ns = session.end_ns
    for i, raw in enumerate(session.raw):
        name = raw.name
        trace_name = name
        if raw.kind == "user" and name.startswith("ProfilerStep#"):
            name = "ProfilerStep*"
        end = raw.end if raw.end is not None else end_ns
        ev = FunctionEvent(
            id=i + 1, name=name, trace_name=trace_name, thread=thread,
            start_us=(raw.start - t0) / 1e3, end_us=(end - t0) / 1e3,
            fwd_thread=thread if raw.seq >= 0 else 0,
            input_shapes=shape_lists(raw.shapes) if raw.shapes is not None else [],
            input_dtypes=raw.dtypes, stack=stack_lines(raw.stack), cpu_memory_usage=raw.mem,
            sequence_nr=raw.seq, flops=raw.flops,
            is_user_annotation=raw.kind == "user",
            use_device=use_device)
        ev._kind = raw.kind
        made[id(raw)] = ev
        parent = made.get(id(raw.parent)) if raw.parent is not None else None
        if parent is not None:
            ev.set_cpu_parent(parent)
            parent.append_cpu_child(ev)
        out.append(ev)
    timer = session.device_timer
    if timer is not None:
        _attach_kernels(timer, session, made, out, use_device or "cuda")
    # memory is inclusive: children first (they come after their parents in start order)
    for ev in reversed(out):
        if ev.cpu_parent is not None:
            ev.cpu_parent.cpu_memory_usage += ev.cpu_memory_usage
    events = EventList(out, use_device=use_device,
                       profile_memory=session.profile_memory, with_flops=session.with_flops,
                       _trace_meta=meta)
    events._sessions = [session]
    return events


def _attach_kernels(timer, session, made, out, use_device):
    """Add the GPU work of the ops that ran there (NOTE [ CUDA event timing ] in
    ``_cuda.py``), shaped as PyTorch's: a device event (``DeviceType.CUDA``, on the stream's
    track) per op, named ``<op> kernels``, and the same time as a ``Kernel`` of the op."""
    from ..autograd.profiler_util import DeviceType
    from . import _cuda
    device = timer.device_index()
    next_id = len(out) + 1
    kernels = []
    for raw, start_us, dur_us, stream in _cuda.resolve(timer, session):
        op = made[id(raw)]
        name = op.name + " kernels"
        op.append_kernel(name, device, dur_us)
        k = FunctionEvent(id=next_id, name=name, thread=stream, start_us=start_us,
                          end_us=start_us + dur_us, device_type=DeviceType.CUDA,
                          device_index=device, use_device=use_device)
        k._kind = "kernel"
        k._launched_by = op
        next_id += 1
        kernels.append(k)
    out.extend(kernels)
