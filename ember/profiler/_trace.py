"""Chrome / Perfetto trace export (the ``export_chrome_trace`` file).

The file has the layout PyTorch's profiler writes: top-level metadata, then
``traceEvents``: ``"M"`` metadata naming the process and thread, one ``"X"`` (complete)
event per recorded event with ``ts``/``dur`` in microseconds (category ``cpu_op`` for ops
and backward nodes, ``user_annotation`` for ``record_function`` blocks,
``python_function`` for module calls and, under ``with_stack``, Python calls, with their
``Python id``/``Python parent id``), ``"i"`` instant events named ``[memory]`` for
allocations and frees under ``profile_memory`` (``Addr`` pairs a free with its
allocation), and ``"s"``/``"f"`` flow events of
category ``fwdbwd`` from a forward op to the backward node it created (matched by
sequence number). Events on one thread nest by time, which is how the viewers draw them.
With CUDA activity, ops that ran on the GPU add ``kernel`` events on the GPU's stream track,
linked to their op by ``ac2g`` flows (NOTE [ CUDA event timing ] in ``_cuda.py``).
"""

from __future__ import annotations

import gzip
import json
import os
import socket
import threading

from ._inputs import concrete_texts


def write_chrome_trace(events, path, meta=None):
    """Write ``events`` (an ``EventList``) to ``path`` as trace JSON (gzip for ``.gz``)."""
    meta = meta or {}
    pid = os.getpid()
    tid = threading.get_native_id() if hasattr(threading, "get_native_id") else 1
    sessions = getattr(events, "_sessions", None) or []
    # absolute times: the wall clock at the first session's start, plus profile offsets
    # times are microseconds after ``baseTimeNanoseconds`` (a whole second before the
    # start), small enough for a double to keep nanoseconds
    base_us = 0.0
    base_ns = 0
    if sessions:
        wall = sessions[0].start_wall_ns
        base_ns = wall - wall % 10**9
        base_us = (wall - base_ns) / 1e3
    trace = []
    trace.append({"ph": "M", "name": "process_name", "ts": base_us, "pid": pid, "tid": 0,
                  "args": {"name": "python"}})
    trace.append({"ph": "M", "name": "process_labels", "ts": base_us, "pid": pid, "tid": 0,
                  "args": {"labels": "CPU"}})
    trace.append({"ph": "M", "name": "process_sort_index", "ts": base_us, "pid": pid,
                  "tid": 0, "args": {"sort_index": pid}})
    trace.append({"ph": "M", "name": "thread_name", "ts": base_us, "pid": pid, "tid": tid,
                  "args": {"name": f"thread {tid} (python)"}})
    trace.append({"ph": "M", "name": "thread_sort_index", "ts": base_us, "pid": pid,
                  "tid": tid, "args": {"sort_index": tid}})

    forward_by_seq = {}
    backward_by_seq = {}
    side_rows = set()
    for idx, e in enumerate(events):
        kind = getattr(e, "_kind", "op")
        if kind == "kernel" or kind == "memory":
            continue            # on the GPU's track, and instants from ``mem_events``, below
        cat = {"user": "user_annotation", "module": "python_function",
               "python": "python_function"}.get(kind, "cpu_op")
        if kind == "python" or kind == "module":
            parent = e.cpu_parent
            while parent is not None and getattr(parent, "_kind", None) not in ("python",
                                                                               "module"):
                parent = parent.cpu_parent
            args = {"Python parent id": None if parent is None else parent.id,
                    "Python id": e.id, "Ev Idx": idx}
        else:
            args = {"External id": e.id, "Record function id": 0, "Ev Idx": idx}
        if e.sequence_nr >= 0:
            args["Sequence number"] = e.sequence_nr
            args["Fwd thread id"] = 1 if kind.startswith("bwd") else 0
        if kind == "op" or kind == "bwd":
            dims = getattr(e, "_dims", None)
            if dims is not None:
                # one entry per argument of torch's op (NOTE [ Recorded inputs ] in _inputs.py)
                args["Concrete Inputs"] = concrete_texts(e.concrete_inputs)
                args["Input type"] = e.input_dtypes
                args["Input Strides"] = e._strides
                args["Input Dims"] = dims
            else:
                if e.input_shapes:
                    args["Input Dims"] = e.input_shapes
                if e.input_dtypes:
                    args["Input type"] = e.input_dtypes
        if e.flops:
            args["flops"] = e.flops
        row = tid
        if e.thread != 1:  # an event that ran beside the recording thread (``begin_async``)
            row = tid + e.thread - 1
            if row not in side_rows:
                side_rows.add(row)
                trace.append({"ph": "M", "name": "thread_name", "ts": base_us, "pid": pid,
                              "tid": row, "args": {"name": f"thread {row} (collectives)"}})
        trace.append({"ph": "X", "cat": cat, "name": e.trace_name, "pid": pid, "tid": row,
                      "ts": round(base_us + e.time_range.start, 3),
                      "dur": round(round(base_us + e.time_range.end, 3)
                                   - round(base_us + e.time_range.start, 3), 3),
                      "args": args})
        if e.sequence_nr >= 0:
            if kind == "op":
                # the innermost op with the number made the node (``aten::addmm``, not the
                # ``aten::linear`` around it): PyTorch's arrow starts there
                forward_by_seq[e.sequence_nr] = e
            elif kind == "bwd":
                backward_by_seq.setdefault(e.sequence_nr, e)

    flow_id = 0
    for seq, b in backward_by_seq.items():
        f = forward_by_seq.get(seq)
        if f is None:
            continue
        flow_id += 1
        trace.append({"ph": "s", "id": flow_id, "pid": pid, "tid": tid,
                      "ts": round(base_us + f.time_range.start, 3), "cat": "fwdbwd",
                      "name": "fwdbwd"})
        trace.append({"ph": "f", "id": flow_id, "pid": pid, "tid": tid,
                      "ts": round(base_us + b.time_range.start, 3), "cat": "fwdbwd",
                      "name": "fwdbwd", "bp": "e"})

    # GPU work timed by CUDA events (NOTE [ CUDA event timing ] in _cuda.py): one kernel
    # event per op on the GPU's stream track, and an ac2g arrow from the op to it
    tracks = set()
    for e in events:
        if getattr(e, "_kind", None) != "kernel":
            continue
        device, stream = e.device_index, e.thread
        if (device, stream) not in tracks:
            tracks.add((device, stream))
            trace.append({"ph": "M", "name": "process_name", "ts": base_us, "pid": device,
                          "tid": 0, "args": {"name": "python"}})
            trace.append({"ph": "M", "name": "process_labels", "ts": base_us, "pid": device,
                          "tid": 0, "args": {"labels": f"GPU {device}"}})
            trace.append({"ph": "M", "name": "thread_name", "ts": base_us, "pid": device,
                          "tid": stream, "args": {"name": f"stream {stream}"}})
        flow_id += 1
        op = e._launched_by
        ts = round(base_us + e.time_range.start, 3)
        trace.append({"ph": "X", "cat": "kernel", "name": e.name, "pid": device,
                      "tid": stream, "ts": ts, "dur": round(e.time_range.elapsed_us(), 3),
                      "args": {"External id": op.id, "device": device, "stream": stream,
                               "correlation": flow_id}})
        trace.append({"ph": "s", "id": flow_id, "pid": pid, "tid": tid,
                      "ts": round(base_us + op.time_range.start, 3), "cat": "ac2g",
                      "name": "ac2g"})
        trace.append({"ph": "f", "id": flow_id, "pid": device, "tid": stream, "ts": ts,
                      "cat": "ac2g", "name": "ac2g", "bp": "e"})

    for s in sessions:
        if not s.profile_memory:
            continue
        for t_ns, nbytes, total, addr in s.mem_events:
            trace.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
                          "pid": pid, "tid": tid,
                          "ts": round(base_us + (t_ns - sessions[0].start_ns) / 1e3, 3),
                          "args": {"Total Reserved": 0, "Total Allocated": total,
                                   "Bytes": nbytes, "Device Id": -1, "Device Type": 0,
                                   "Addr": addr, "finished": False,
                                   "Ev Idx": len(trace)}})

    if sessions:
        s = sessions[0]
        end_ns = sessions[-1].end_ns or s.start_ns
        trace.append({"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)",
                      "pid": "Spans", "tid": "PyTorch Profiler", "ts": round(base_us, 3),
                      "dur": round((end_ns - s.start_ns) / 1e3, 3),
                      "args": {"Op count": 0}})
        trace.append({"ph": "M", "name": "process_sort_index", "ts": round(base_us, 3),
                      "pid": "Spans", "tid": 0, "args": {"sort_index": 536870912}})
        # the profile's start as a global instant, as PyTorch marks it
        trace.append({"ph": "i", "s": "g", "name": "Iteration Start: PyTorch Profiler",
                      "pid": "Traces", "tid": "Trace PyTorch Profiler",
                      "ts": round(base_us, 3)})
        # and the end of the recorded window, the last event of PyTorch's trace
        trace.append({"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "",
                      "ts": round(base_us + (end_ns - s.start_ns) / 1e3, 3)})

    doc = {"schemaVersion": 1, "deviceProperties": []}
    doc["trace_id"] = meta.get("trace_id", "")
    for flag in ("with_stack", "profile_memory", "record_shapes", "with_flops"):
        if meta.get(flag):
            doc[flag] = 1
    doc["host_name"] = socket.gethostname()
    doc.update(meta.get("metadata", {}))
    doc["displayTimeUnit"] = "ms"
    doc["baseTimeNanoseconds"] = base_ns
    doc["traceEvents"] = trace
    doc["traceName"] = path
    text = json.dumps(doc)
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    if path.endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        with open(path, "w") as f:
            f.write(text)
