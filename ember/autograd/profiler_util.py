"""``ember.autograd.profiler_util``: the events a profile hands back, and their reports.

A finished profile is an ``EventList`` of ``FunctionEvent``s, one per op call, user block
(``record_function``), backward node or profiler step, in start order, each knowing its
parent and children on its thread. ``EventList.key_averages()`` groups them into
``FunctionEventAvg``s (by name, and optionally by input shapes or call stack), and ``table``
prints the same table PyTorch prints: the same columns, widths, units and footer.

Times are microseconds (floats), memory is bytes, as in PyTorch.
"""

from __future__ import annotations

import enum
import json
import math
import os
from collections import defaultdict

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "Interval", "Kernel",
           "MemRecordsAcc", "StringTable"]


class _IntLikeEnum(enum.Enum):
    def __int__(self):
        return self.value

    __index__ = __int__


class DeviceType(_IntLikeEnum):
    """The device an event ran on (PyTorch's ``torch.autograd.DeviceType``).

    Example::

        >>> DeviceType.CPU
        <DeviceType.CPU: 0>
    """

    CPU = 0
    CUDA = 1
    MKLDNN = 2
    OPENGL = 3
    OPENCL = 4
    IDEEP = 5
    HIP = 6
    FPGA = 7
    MAIA = 8
    XLA = 9
    Vulkan = 10
    Metal = 11
    XPU = 12
    MPS = 13
    Meta = 14
    HPU = 15
    VE = 16
    Lazy = 17
    IPU = 18
    MTIA = 19
    PrivateUse1 = 20


class ProfilerActivity(_IntLikeEnum):
    """What a profile records: ``CPU`` (ops on the host) or a device's kernels.

    Example::

        >>> ProfilerActivity.CPU
        <ProfilerActivity.CPU: 0>
    """

    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


def _device_type():
    return DeviceType


class Interval:
    """A time range ``[start, end]`` in microseconds.

    Args:
        start (float): start time.
        end (float): end time.

    Example::

        >>> Interval(1.0, 3.5).elapsed_us()
        2.5
    """

    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        """The length of the range, in microseconds."""
        return self.end - self.start


class Kernel:
    """A device kernel launched by an op (name, device index, duration in us)."""

    def __init__(self, name, device, duration):
        self.name = name
        self.device = device
        self.duration = duration


class FunctionEvent:
    """One recorded event: an op call, a ``record_function`` block or a backward node.

    Times are in microseconds from the start of the profile; ``cpu_time_total`` includes
    children, ``self_cpu_time_total`` excludes them. Memory fields are bytes allocated
    (negative for frees) by the event and its children (``cpu_memory_usage``) or by the
    event alone (``self_cpu_memory_usage``).

    Example::

        >>> import ember
        >>> with ember.profiler.profile() as prof:
        ...     _ = ember.ones(2) + 1
        >>> prof.events()[-1].name
        'aten::add'
    """

    def __init__(self, id, name, thread, start_us, end_us, fwd_thread=None, input_shapes=None,
                 stack=None, scope=0, use_device=None, cpu_memory_usage=0,
                 device_memory_usage=0, is_async=False, is_remote=False, sequence_nr=-1,
                 node_id=-1, device_type=None, device_index=0, device_resource_id=None,
                 is_legacy=False, flops=None, trace_name=None, concrete_inputs=None,
                 kwinputs=None, is_user_annotation=False, overload_name="", input_dtypes=None):
        self.id = id
        self.node_id = node_id
        self.name = name
        self.overload_name = overload_name
        self.trace_name = trace_name if trace_name is not None else name
        self.time_range = Interval(start_us, end_us)
        self.thread = thread
        self.fwd_thread = fwd_thread
        self.kernels = []
        self.count = 1
        self.cpu_children = []
        self.cpu_parent = None
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.input_dtypes = input_dtypes if input_dtypes is not None else []
        self.concrete_inputs = concrete_inputs if concrete_inputs is not None else []
        self.kwinputs = kwinputs if kwinputs is not None else {}
        self.stack = stack if stack is not None else []
        self.scope = scope
        self.use_device = use_device
        self.cpu_memory_usage = cpu_memory_usage
        self.device_memory_usage = device_memory_usage
        self.is_async = is_async
        self.is_remote = is_remote
        self.sequence_nr = sequence_nr
        self.device_type = device_type if device_type is not None else _device_type().CPU
        self.device_index = device_index
        self.device_resource_id = device_resource_id if device_resource_id is not None \
            else thread
        self.is_legacy = is_legacy
        self.flops = flops if flops is not None else 0
        self.is_user_annotation = is_user_annotation
        self.self_cpu_percent = -1
        self.total_cpu_percent = -1
        self.total_device_percent = -1
        self.metadata_json = None
        self.event_metadata = None
        self.python_id = None
        self.python_parent_id = None
        self.python_module_id = None
        self.external_id = id
        self.linked_correlation_id = 0
        self.flow_id = None
        self.flow_type = None
        self.flow_start = False
        self.activity_type = None
        self.is_python_function = False
        self.structured_input_shapes = None
        self.structured_input_strides = None
        self.device_time_total_override = None

    def append_kernel(self, name, device, duration):
        """Attach a device kernel (``duration`` in us) to this event."""
        self.kernels.append(Kernel(name, device, duration))

    def append_cpu_child(self, child):
        """Record ``child`` as running inside this event on the same thread."""
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent):
        """Record ``parent`` as the event this one runs inside."""
        self.cpu_parent = parent

    @property
    def self_cpu_memory_usage(self):
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_device_memory_usage(self):
        return self.device_memory_usage - sum(c.device_memory_usage for c in self.cpu_children)

    @property
    def self_cuda_memory_usage(self):
        return self.self_device_memory_usage

    @property
    def cpu_time_total(self):
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def device_time_total(self):
        if self.device_time_total_override is not None:
            return self.device_time_total_override
        return sum(k.duration for k in self.kernels) + \
            sum(c.device_time_total for c in self.cpu_children)

    @property
    def self_device_time_total(self):
        return sum(k.duration for k in self.kernels)

    cuda_time_total = device_time_total
    self_cuda_time_total = self_device_time_total

    @property
    def cpu_time(self):
        return self.cpu_time_total / max(1, self.count)

    @property
    def device_time(self):
        return self.device_time_total / max(1, self.count)

    cuda_time = device_time

    @property
    def key(self):
        return self.name

    @property
    def cpu_time_str(self):
        return _format_time(self.cpu_time)

    @property
    def cpu_time_total_str(self):
        return _format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self):
        return _format_time(self.self_cpu_time_total)

    @property
    def device_time_str(self):
        return _format_time(self.device_time)

    @property
    def device_time_total_str(self):
        return _format_time(self.device_time_total)

    @property
    def self_device_time_total_str(self):
        return _format_time(self.self_device_time_total)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} overload_name="
                f"{self.overload_name} device_type={self.device_type} node_id={self.node_id} "
                f"cpu_time={self.cpu_time_str} start_us={self.time_range.start:.3f} "
                f"end_us={self.time_range.end:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} "
                f"{self.use_device}_time={self.device_time_str} name={self.name} "
                f"thread={self.thread} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage} "
                f"{self.use_device}_memory_usage={self.device_memory_usage} "
                f"is_async={self.is_async} is_remote={self.is_remote} "
                f"seq_nr={self.sequence_nr} is_legacy={self.is_legacy}>")


class FunctionEventAvg:
    """The sum of several ``FunctionEvent``s with one key (``key_averages`` makes these).

    Totals add up; ``cpu_time`` and ``device_time`` are per call (``count`` calls).

    Example::

        >>> import ember
        >>> with ember.profiler.profile() as prof:
        ...     for _ in range(3):
        ...         _ = ember.ones(2) + 1
        >>> [a.count for a in prof.key_averages() if a.key == "aten::add"]
        [3]
    """

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.use_device = None
        self.cpu_time_total = 0
        self.device_time_total = 0
        self.self_cpu_time_total = 0
        self.self_device_time_total = 0
        self.input_shapes = None
        self.overload_name = None
        self.stack = None
        self.scope = None
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.self_device_memory_usage = 0
        self.cpu_children = None
        self.cpu_parent = None
        self.device_type = _device_type().CPU
        self.is_legacy = False
        self.flops = 0
        self.is_user_annotation = False

    @property
    def cuda_time_total(self):
        return self.device_time_total

    @property
    def self_cuda_time_total(self):
        return self.self_device_time_total

    @property
    def cuda_memory_usage(self):
        return self.device_memory_usage

    @property
    def self_cuda_memory_usage(self):
        return self.self_device_memory_usage

    def add(self, other):
        """Fold ``other`` (a ``FunctionEvent`` or ``FunctionEventAvg``) into this average."""
        if self.key is None:
            self.key = other.key
            self.node_id = other.node_id
            self.is_async = other.is_async
            self.is_remote = other.is_remote
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
            self.overload_name = other.overload_name
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.scope = other.scope
            self.device_type = other.device_type
            self.is_legacy = other.is_legacy
            self.use_device = other.use_device
            self.is_user_annotation = other.is_user_annotation
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise TypeError(f"FunctionEventAvg.add: expected a FunctionEvent or "
                            f"FunctionEventAvg, got {type(other).__name__}")
        if other.key != self.key:
            raise ValueError(f"FunctionEventAvg.add: cannot add an event with key "
                             f"{other.key!r} to the average of {self.key!r}")
        self.cpu_time_total += other.cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.self_device_time_total += other.self_device_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.device_memory_usage += other.device_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.self_device_memory_usage += other.self_device_memory_usage
        self.count += other.count
        if self.flops is None:
            self.flops = other.flops
        elif other.flops is not None:
            self.flops += other.flops
        return self

    def __iadd__(self, other):
        return self.add(other)

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def device_time(self):
        return 0.0 if self.count == 0 else self.device_time_total / self.count

    cuda_time = device_time

    def __repr__(self):
        device = "cuda" if self.use_device is None else self.use_device
        return (f"<FunctionEventAvg key={self.key} self_cpu_time="
                f"{_format_time(self.self_cpu_time_total)} cpu_time="
                f"{_format_time(self.cpu_time)}  self_{device}_time="
                f"{_format_time(self.self_device_time_total)} {device}_time="
                f"{_format_time(self.device_time)} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage} "
                f"{device}_memory_usage={self.device_memory_usage}>")


class EventList(list):
    """A list of ``FunctionEvent``s with the reports PyTorch offers on it.

    Example::

        >>> import ember
        >>> with ember.profiler.profile() as prof:
        ...     _ = ember.ones(2, 2) @ ember.ones(2, 2)
        >>> "aten::mm" in prof.key_averages().table() or "aten::matmul" in \\
        ...     prof.key_averages().table()
        True
    """

    def __init__(self, *args, **kwargs):
        use_device = kwargs.pop("use_device", None)
        profile_memory = kwargs.pop("profile_memory", False)
        with_flops = kwargs.pop("with_flops", False)
        self._trace_meta = kwargs.pop("_trace_meta", None)
        super().__init__(*args, **kwargs)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._tree_built = False

    def _build_tree(self):
        self._tree_built = True

    def _populate_cpu_children(self):
        pass

    def _remove_dup_nodes(self):
        pass

    def _set_backward_stacktraces(self):
        pass

    @property
    def self_cpu_time_total(self):
        """The sum of every event's self CPU time (us)."""
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        """The events as a text table laid out as PyTorch's.

        Args:
            sort_by (str, optional): an attribute to sort rows by, largest first
                (``"cpu_time_total"``, ``"self_cpu_memory_usage"``, ``"count"``, ...).
                Default: the order of first appearance.
            row_limit (int): at most this many rows (-1 for all). Default: 100.
            max_src_column_width (int): width cap of the ``Source Location`` column.
            max_name_column_width (int): width cap of the ``Name`` column.
            max_shapes_column_width (int): width cap of the ``Input Shapes`` column.
            header (str, optional): a title printed above the table.
            top_level_events_only (bool): list only events with no parent.
            time_unit (str, optional): ``"s"``, ``"ms"`` or ``"us"`` for every time cell
                instead of a unit chosen per cell.

        Returns:
            str: the table, ending with the ``Self CPU time total`` line.

        Example::

            >>> import ember
            >>> with ember.profiler.profile() as prof:
            ...     _ = ember.ones(2) + 1
            >>> prof.key_averages().table().splitlines()[1].split()[0]
            'Name'
        """
        return _build_table(self, sort_by=sort_by, row_limit=row_limit,
                            max_src_column_width=max_src_column_width,
                            max_name_column_width=max_name_column_width,
                            max_shapes_column_width=max_shapes_column_width, header=header,
                            profile_memory=self._profile_memory, with_flops=self._with_flops,
                            top_level_events_only=top_level_events_only, time_unit=time_unit)

    def export_chrome_trace(self, path):
        """Write the events as a Chrome/Perfetto trace (JSON) to ``path``.

        Args:
            path (str): the file to write.

        Example::

            >>> import ember, tempfile, os, json
            >>> with ember.profiler.profile() as prof:
            ...     _ = ember.ones(2) + 1
            >>> p = os.path.join(tempfile.mkdtemp(), "trace.json")
            >>> prof.events().export_chrome_trace(p)
            >>> "traceEvents" in json.load(open(p))
            True
        """
        from ..profiler._trace import write_chrome_trace
        write_chrome_trace(self, path, self._trace_meta)

    def supported_export_stacks_metrics(self):
        """The metric names ``export_stacks`` accepts."""
        return ["self_cpu_time_total", "self_cuda_time_total", "self_xpu_time_total",
                "self_privateuse1_time_total"]

    def export_stacks(self, path: str, metric: str):
        """Write one line per event that has a recorded stack, in the folded format that
        flame-graph tools read: ``outer;...;inner;op value``.

        Args:
            path (str): the file to write.
            metric (str): one of ``supported_export_stacks_metrics()``.

        Example::

            >>> import ember, tempfile, os
            >>> with ember.profiler.profile(with_stack=True) as prof:
            ...     _ = ember.ones(2) + 1
            >>> p = os.path.join(tempfile.mkdtemp(), "stacks.txt")
            >>> prof.export_stacks(p, "self_cpu_time_total")
            >>> os.path.exists(p)
            True
        """
        if metric not in self.supported_export_stacks_metrics():
            raise ValueError("metric should be one of: "
                             + str(self.supported_export_stacks_metrics()))
        attr = metric.replace("cuda", "device").replace("xpu", "device") \
            .replace("privateuse1", "device")
        with open(path, "w") as f:
            for evt in self:
                if not evt.stack:
                    continue
                value = getattr(evt, attr)
                if int(value) <= 0:
                    continue
                frames = ";".join(s.replace(";", ",") for s in reversed(evt.stack))
                f.write(f"{frames};{evt.name} {int(value)}\n")

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """Average the events by name (and optionally by input shapes, stack or overload).

        Args:
            group_by_input_shapes (bool): separate rows per input shapes (needs
                ``record_shapes=True`` when profiling).
            group_by_stack_n (int): separate rows per the innermost ``n`` stack frames
                (needs ``with_stack=True``).
            group_by_overload_name (bool): separate rows per op overload.

        Returns:
            EventList: of ``FunctionEventAvg``, in order of first appearance.

        Example::

            >>> import ember
            >>> with ember.profiler.profile() as prof:
            ...     for _ in range(2):
            ...         _ = ember.ones(2) + 1
            >>> {a.key: a.count for a in prof.key_averages()}["aten::add"]
            2
        """
        stats = defaultdict(FunctionEventAvg)

        def key_of(e):
            k = [str(e.key), str(e.node_id), str(e.device_type), str(e.is_legacy),
                 str(e.is_user_annotation)]
            if group_by_input_shapes:
                k.append(str(e.input_shapes))
            if group_by_stack_n > 0:
                k += e.stack[:group_by_stack_n]
            if group_by_overload_name:
                k.append(e.overload_name)
            return tuple(k)

        for e in self:
            stats[key_of(e)].add(e)
        averages = EventList(stats.values(), use_device=self._use_device,
                             profile_memory=self._profile_memory, with_flops=self._with_flops)
        for avg in averages:
            avg.stack = avg.stack[:group_by_stack_n] if group_by_stack_n else []
            if not group_by_input_shapes:
                avg.input_shapes = ""
            if not group_by_overload_name:
                avg.overload_name = ""
        return averages

    def total_average(self):
        """One ``FunctionEventAvg`` summing every event, with key ``"Total"``."""
        total = FunctionEventAvg()
        for e in self:
            total.add(e)
            total.key = None
        total.key = "Total"
        return total


class MemRecordsAcc:
    """Memory records of a profile in time order, queried by time range.

    Args:
        mem_records (list): ``(time_us, bytes)`` pairs.
    """

    def __init__(self, mem_records):
        self._mem_records = sorted(mem_records, key=lambda r: r[0])
        self._start_uses = [r[0] for r in self._mem_records]

    def in_interval(self, start_us, end_us):
        """The records whose time lies in ``[start_us, end_us]``."""
        import bisect
        lo = bisect.bisect_left(self._start_uses, start_us)
        hi = bisect.bisect_right(self._start_uses, end_us)
        for i in range(lo, hi):
            yield self._mem_records[i]


class StringTable(defaultdict):
    """A table that interns strings (kept for PyTorch compatibility)."""

    def __missing__(self, key):
        self[key] = key
        return key


# --------------------------------------------------------------------------------------------
# formatting (the units and widths of PyTorch's table)


def _format_time(time_us):
    """Microseconds as ``1.234s``, ``1.234ms`` or ``1.234us``."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_unit(time_us, unit):
    if unit == "s":
        return f"{time_us / 1e6:.3f}s"
    if unit == "ms":
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_us):
    """``time_us`` as a percentage of ``total_us``."""
    if total_us == 0:
        if time_us != 0:
            raise ValueError(f"_format_time_share: time {time_us} with a zero total")
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _format_memory(nbytes):
    """Bytes as ``12 B``, ``1.06 KB``, ``3.00 Mb``-style (PyTorch's units)."""
    kb, mb, gb = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= gb:
        return f"{nbytes / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes / kb:.2f} KB"
    return f"{nbytes} B"


def _auto_scale_flops(flops):
    """A power-of-1000 scale and the header naming it, chosen from ``flops`` (> 0)."""
    headers = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
    exponent = int(max(0, min(math.log10(flops) / 3, len(headers) - 1)))
    return 10.0 ** (-3 * exponent), headers[exponent]


def _build_table(events, sort_by=None, header=None, row_limit=100, max_src_column_width=75,
                 max_name_column_width=55, max_shapes_column_width=80, with_flops=False,
                 profile_memory=False, top_level_events_only=False, time_unit=None):
    if len(events) == 0:
        return ""
    has_device_time = any(getattr(e, "self_device_time_total", 0) > 0 for e in events)
    has_device_mem = any(getattr(e, "self_device_memory_usage", 0) > 0 for e in events)
    has_input_shapes = any(e.input_shapes is not None and len(e.input_shapes) > 0
                           for e in events)
    has_overload = any(e.overload_name for e in events)
    use_device = events[0].use_device or "cuda"

    if sort_by is not None:
        events = EventList(sorted(events, key=lambda e: getattr(
            e, sort_by.replace("cuda", "device"), 0), reverse=True),
            use_device=events._use_device, profile_memory=profile_memory,
            with_flops=with_flops)

    name_width = min(max(len(e.key) for e in events) + 4, max_name_column_width)
    shapes_width = min(max(len(str(e.input_shapes)) for e in events) + 4,
                       max_shapes_column_width)
    has_stack = any(e.stack for e in events)
    src_width = 0
    if has_stack:
        src_width = min(max(len(s) for e in events for s in (e.stack or [""])) + 4,
                        max_src_column_width)
    width = 12

    headers = ["Name"]
    if has_overload:
        headers.append("Overload Name")
    headers += ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    label = use_device.upper()
    if has_device_time:
        headers += [f"Self {label}", f"Self {label} %", f"{label} total",
                    f"{label} time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
        if has_device_mem:
            headers += [f"{label} Mem", f"Self {label} Mem"]
    headers.append("# of Calls")
    if any(e.node_id != -1 for e in events if isinstance(e, FunctionEvent)):
        headers.append("Node ID")

    widths = []
    fmt_parts = []
    line_parts = []

    def add_column(w, align=">"):
        widths.append(w)
        fmt_parts.append("{: " + align + str(w) + "}" + "  ")
        line_parts.append("-" * w + "  ")

    add_column(name_width)
    if has_overload:
        add_column(width)
    for _ in headers[1 + int(has_overload):]:
        add_column(width)
    if has_input_shapes:
        headers.append("Input Shapes")
        add_column(shapes_width)
    if has_stack:
        headers.append("Source Location")
        add_column(src_width, align="<")
    flops_scale = 1.0
    if with_flops:
        raw = [e.flops for e in events if e.flops and e.flops > 0]
        if raw:
            flops_scale, flops_header = _auto_scale_flops(min(raw))
            headers.append(f"Total {flops_header}")
            add_column(width)
        else:
            with_flops = False

    row_format = "".join(fmt_parts)
    line = "".join(line_parts)
    line_length = sum(widths) + 2 * (len(widths) - 1)

    out = []
    if header is not None:
        out.append("=" * line_length)
        out.append(header)
    if top_level_events_only:
        out.append("Top-level events only")
    out.append(line)
    out.append(row_format.format(*headers))
    out.append(line)

    def trim(s, w):
        return s[:w - 3] + "..." if len(s) > w else s

    def t(us):
        return _format_time(us) if time_unit is None else _format_time_unit(us, time_unit)

    self_cpu_total = sum(e.self_cpu_time_total for e in events)
    device_total = sum(getattr(e, "self_device_time_total", 0) for e in events)

    rows = 0
    for e in events:
        if row_limit is not None and row_limit >= 0 and rows == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        rows += 1
        cells = [trim(e.key, name_width)]
        if has_overload:
            cells.append(trim(e.overload_name or "", width))
        cells += [_format_time_share(e.self_cpu_time_total, self_cpu_total),
                  t(e.self_cpu_time_total),
                  _format_time_share(e.cpu_time_total, self_cpu_total) if not e.is_async
                  else 0, t(e.cpu_time_total), t(e.cpu_time)]
        if has_device_time:
            cells += [t(e.self_device_time_total),
                      _format_time_share(e.self_device_time_total, device_total),
                      t(e.device_time_total), t(e.device_time)]
        if profile_memory:
            cells += [_format_memory(e.cpu_memory_usage),
                      _format_memory(e.self_cpu_memory_usage)]
            if has_device_mem:
                cells += [_format_memory(e.device_memory_usage),
                          _format_memory(e.self_device_memory_usage)]
        cells.append(e.count)
        if "Node ID" in headers:
            cells.append(e.node_id)
        if has_input_shapes:
            cells.append(trim(str(e.input_shapes), shapes_width))
        if has_stack:
            cells.append(trim(e.stack[0] if e.stack else "", src_width))
        if with_flops:
            cells.append("--" if not e.flops else f"{e.flops * flops_scale:8.3f}")
        out.append(row_format.format(*cells))
        if has_stack:
            blanks = [""] * (len(cells) - (2 if with_flops else 1))
            for frame in e.stack[1:]:
                extra = [trim(frame, src_width)] + ([""] if with_flops else [])
                out.append(row_format.format(*(blanks + extra)))
    out.append(line)
    out.append(f"Self CPU time total: {t(self_cpu_total)}")
    if has_device_time:
        out.append(f"Self {label} time total: {t(device_total)}")
    return "\n".join(out) + "\n"


def _write_json(path, obj):
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f)
