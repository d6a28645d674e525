"""Turn a finished recording session's raw events into ``FunctionEvent``s.

Times become microseconds from the session's start; each event learns its parent and
children; memory becomes inclusive (an event's bytes plus its children's), as PyTorch's
``cpu_memory_usage`` is. ``ProfilerStep#N`` blocks are listed as ``ProfilerStep*`` (their
trace keeps the numbered name), as in PyTorch.
"""

from __future__ import annotations

import gc

from ..autograd.profiler_util import MEMORY_EVENT_NAME, EventList, FunctionEvent
from ._inputs import node_inputs, torch_inputs
from ._recorder import dtype_names, shape_lists


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
    mem = session.mem
    for raw in session.recordings():
        if type(raw) is tuple:
            # an op (NOTE [ Profiler recording ])
            if len(raw) == 6:
                idx, parent, name, start, end, seq = raw
                shapes = dtypes = call = None
                flops = 0
            else:
                (idx, parent, name, start, end, seq, shapes, dtypes, _, flops, key,
                 strides, values, kw, _) = raw
                call = None if strides is None else (key, strides, values, kw)
            kind = "op"
            trace_name = name
        else:
            idx, parent, name, start, end, seq = (raw.idx, raw.parent, raw.name, raw.start,
                                                  raw.end, raw.seq)
            shapes, dtypes, flops, kind, call = (raw.shapes, raw.dtypes, 0, raw.kind,
                                                 raw.call)
            trace_name = name
            if kind == "user" and name.startswith("ProfilerStep#"):
                name = "ProfilerStep*"
            if end is None:
                end = end_ns
        torch_form = None
        if call is not None and shapes is not None:
            # NOTE [ Recorded inputs ] in _inputs.py
            torch_form = node_inputs(shapes, dtypes, call[1]) if kind == "bwd" else \
                torch_inputs(name, call[0], shapes, dtypes, call[1:])
        if torch_form is not None:
            input_shapes, input_dtypes, concrete = torch_form[:3]
        else:
            input_shapes = shape_lists(shapes) if shapes is not None else []
            input_dtypes = dtype_names(dtypes)
            concrete = None
        ev = FunctionEvent(
            id=idx + 1, name=name, trace_name=trace_name,
            thread=thread if kind == "op" or raw.thread is None else raw.thread,
            start_us=(start - t0) / 1e3, end_us=(end - t0) / 1e3,
            # PyTorch names the forward thread on backward nodes' events only
            fwd_thread=thread if seq >= 0 and kind.startswith("bwd") else 0,
            input_shapes=input_shapes, concrete_inputs=concrete,
            input_dtypes=input_dtypes,
            cpu_memory_usage=mem.get(idx, 0) if mem else 0,
            sequence_nr=seq, flops=flops,
            is_user_annotation=kind == "user",
            use_device=use_device)
        ev._kind = kind
        # the trace's ``Input Dims`` (a Tensor list's shapes) and ``Input Strides``
        ev._dims, ev._strides = torch_form[3:] if torch_form is not None else (None, None)
        if kind == "python":   # NOTE [ Python function events ] in _python_tracer.py
            ev.is_python_function = True
        made[idx] = ev
        if parent >= 0:
            p = made.get(parent)
            if p is not None:
                ev.set_cpu_parent(p)
                p.append_cpu_child(ev)
        out.append(ev)
    if session.with_stack and session.verbose:
        _python_callers_as_stacks(out)
    if session.loose_mem:
        out = _with_memory_events(session, out, thread, use_device)
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


# NOTE [ Stacks as PyTorch records them ]
# PyTorch's ``with_stack=True`` records the Python calls as events (NOTE [ Python function
# events ] in _python_tracer.py) and leaves every event's ``stack`` empty: ``export_stacks``
# writes an empty file and ``group_by_stack_n`` splits nothing. Only with
# ``experimental_config=_ExperimentalConfig(verbose=True)`` does an event's ``stack`` list
# the Python events around it, innermost first, by their names (``script.py(12): step``,
# the function's first line; ``nn.Module: Linear_0``), less the entries of PyTorch's own
# autograd entrances that it filters out. Ember reads those stacks off the finished tree
# the same way, so recording takes no stack per op: the Python events are the stack.

#: (part, part) pairs: a stack entry holding both is left out, as PyTorch leaves it out
_HIDDEN_ENTRIES = (("autograd/__init__", "_make_grads"), ("autograd/__init__", "backward"),
                   ("torch/tensor", "backward"), ("_internal/common_utils", "prof_callable"),
                   ("_internal/common_utils", "prof_func_call"),
                   ("_internal/common_utils", "prof_meth_call"))


def _python_callers_as_stacks(out):
    """Give every event of ``out`` (parents before children) the names of the Python and
    module events around it as its ``stack``, innermost first (NOTE [ Stacks as PyTorch
    records them ])."""
    own = {}   # id(event) -> the stack its children inherit
    for ev in out:
        p = ev.cpu_parent
        stack = own.get(id(p), []) if p is not None else []
        ev.stack = list(stack)
        if ev._kind in ("python", "module") and \
                all(a not in ev.name or b not in ev.name for a, b in _HIDDEN_ENTRIES):
            own[id(ev)] = [ev.name] + stack
        else:
            own[id(ev)] = stack


def _with_memory_events(session, out, thread, use_device):
    """``out`` with a ``[memory]`` event for each allocation or free outside every event
    (``_Session.loose_mem``), placed by time among the events that have no parent, as
    PyTorch lists them: an instant (no duration) whose memory is the bytes (negative for a
    free)."""
    t0 = session.start_ns
    next_id = max((e.id for e in out), default=0) + 1
    loose = []
    for t, n in session.loose_mem:
        ev = FunctionEvent(id=next_id, name=MEMORY_EVENT_NAME, thread=thread,
                           start_us=(t - t0) / 1e3, end_us=(t - t0) / 1e3,
                           cpu_memory_usage=n, sequence_nr=-1, use_device=use_device)
        ev._kind = "memory"
        ev._dims = ev._strides = None
        next_id += 1
        loose.append(ev)
    merged = []
    i = 0
    for ev in out:
        if ev.cpu_parent is None:
            while i < len(loose) and loose[i].time_range.start < ev.time_range.start:
                merged.append(loose[i])
                i += 1
        merged.append(ev)
    merged.extend(loose[i:])
    return merged


def _attach_kernels(timer, session, made, out, use_device):
    """Add the GPU work of the ops that ran there (NOTE [ CUDA event timing ] in
    ``_cuda.py``), shaped as PyTorch's: a device event (``DeviceType.CUDA``, on the stream's
    track) per op, named ``<op> kernels``, and the same time as a ``Kernel`` of the op."""
    from ..autograd.profiler_util import DeviceType
    from . import _cuda
    device = timer.device_index()
    next_id = max((e.id for e in out), default=0) + 1
    kernels = []
    for idx, start_us, dur_us, stream in _cuda.resolve(timer, session):
        op = made[idx]
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
