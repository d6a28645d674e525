"""The events of a profile: ``FunctionEvent`` (one call or block), ``FunctionEventAvg``
(several with one key), the device and activity enums, and the time formatting they share.

Split out of ``profiler_util`` (which re-exports every name here): this module is the data,
``_profiler_table`` the table PyTorch prints, ``profiler_util`` the ``EventList`` of reports.
Times are microseconds (floats), memory is bytes, as in PyTorch.
"""

from __future__ import annotations

import enum
from collections import defaultdict
from typing import Any, NamedTuple

__all__ = ["DeviceType", "ProfilerActivity", "Interval", "Kernel", "FormattedTimesMixin",
           "FunctionEvent", "FunctionEventAvg", "MemRecordsAcc", "StringTable",
           "EventMetadata", "MEMORY_EVENT_NAME", "OUT_OF_MEMORY_EVENT_NAME"]

#: the name of the instant events that record allocations in traces and event lists
MEMORY_EVENT_NAME = "[memory]"
#: the name of the events that record a failed allocation
OUT_OF_MEMORY_EVENT_NAME = "[OutOfMemory]"

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
    """A device kernel launched by an op (name, device index, duration in us).

    Args:
        name (str): the kernel's name.
        device (int): the index of the device it ran on.
        duration (float): how long it ran, in microseconds.

    Returns:
        The record, with the three as attributes.

    Example:
        >>> from ember.autograd.profiler_util import Kernel
        >>> k = Kernel("gemm", 0, 12.5)
        >>> k.name, k.duration
        ('gemm', 12.5)
    """

    def __init__(self, name, device, duration):
        self.name = name
        self.device = device
        self.duration = duration


def _time_str(attr):
    return property(lambda self: _format_time(getattr(self, attr)),
                    doc=f"``{attr}`` formatted as PyTorch's table shows it.")


class FormattedTimesMixin:
    """Per-call times and their formatted strings, for classes with ``*_time_total`` fields
    and a ``count`` (``FunctionEvent`` and ``FunctionEventAvg``).

    Example::

        >>> class Times(FormattedTimesMixin):
        ...     count, cpu_time_total, device_time_total = 4, 2000.0, 0.0
        >>> Times().cpu_time, Times().cpu_time_str
        (500.0, '500.000us')
    """

    cpu_time_str = _time_str("cpu_time")
    cpu_time_total_str = _time_str("cpu_time_total")
    self_cpu_time_total_str = _time_str("self_cpu_time_total")
    device_time_str = _time_str("device_time")
    device_time_total_str = _time_str("device_time_total")
    self_device_time_total_str = _time_str("self_device_time_total")

    @property
    def cpu_time(self):
        """Mean CPU time per call (us); 0 when there are no calls."""
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def device_time(self):
        """Mean device time per call (us); 0 when there are no calls."""
        return 0.0 if self.count == 0 else self.device_time_total / self.count

    @property
    def cuda_time(self):
        """Deprecated alias of ``device_time``."""
        return self.device_time


class EventMetadata(NamedTuple):
    """Metadata of a device kernel, memory copy or collective event (PyTorch's fields; ember
    records CPU events, so these come back empty: every field defaults to None).

    Args:
        fields: PyTorch's 24 fields (``registers_per_thread``, ``grid``, ``block``,
            ``stream``, ``bytes``, ``collective_name``, ...), by name or in order.
            Default: None each.

    Returns:
        The named tuple.

    Example::

        >>> EventMetadata().stream is None
        True
    """

    registers_per_thread: int | None = None
    shared_memory: int | None = None
    grid: list[int] | None = None
    block: list[int] | None = None
    priority: int | None = None
    blocks_per_sm: float | None = None
    warps_per_sm: float | None = None
    occupancy: dict[str, Any] | None = None
    est_occupancy_pct: float | None = None
    queued: int | None = None
    graph_id: int | None = None
    graph_node_id: int | None = None
    stream: int | None = None
    context: int | None = None
    channel: int | None = None
    channel_type: int | None = None
    bytes: int | None = None
    bandwidth_gb_s: float | None = None
    collective_name: str | None = None
    dtype: str | None = None
    in_msg_nelems: int | None = None
    out_msg_nelems: int | None = None
    in_split_size: str | None = None
    out_split_size: str | None = None


class FunctionEvent(FormattedTimesMixin):
    """One recorded event: an op call, a ``record_function`` block or a backward node.

    Times are in microseconds from the start of the profile; ``cpu_time_total`` includes
    children, ``self_cpu_time_total`` excludes them. Memory fields are bytes allocated
    (negative for frees) by the event and its children (``cpu_memory_usage``) or by the
    event alone (``self_cpu_memory_usage``).

    Args:
        id (int): the event's id in its profile.
        name (str): the op's or block's name (``"aten::add"``).
        thread (int): the id of the thread that ran it.
        start_us (float): when it started, in microseconds.
        end_us (float): when it ended, in microseconds.
        others: the event's other fields, as keyword arguments with PyTorch's names
            (``input_shapes``, ``stack``, ``cpu_memory_usage``, ``device_type``,
            ``flops``, ...). Default: none recorded.

    Returns:
        The event; the profiler makes them, users read them.

    Example::

        >>> import ember
        >>> with ember.profiler.profile() as prof:
        ...     _ = ember.ones(2) + 1
        >>> prof.events()[-1].name
        'aten::add'
    """

    # Fields every new event starts with, as class attributes: an event sets its own only
    # when they change, so the tens of thousands of events a profile makes are cheap to
    # build (an instance attribute per field costs about as much as the rest of __init__).
    count = 1
    cpu_parent = None
    self_cpu_percent = -1
    total_cpu_percent = -1
    total_device_percent = -1
    metadata_json = None
    event_metadata = None
    python_id = None
    python_parent_id = None
    python_module_id = None
    linked_correlation_id = 0
    flow_id = None
    flow_type = None
    flow_start = False
    activity_type = None
    is_python_function = False
    structured_input_shapes = None
    structured_input_strides = None
    device_time_total_override = None
    #: set once any event in this process got a device kernel: ``key_averages`` sums CPU
    #: profiles without the device-time properties until then
    _device_seen = False

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
        self.cpu_children = []
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
        self.device_type = device_type if device_type is not None else DeviceType.CPU
        self.device_index = device_index
        self.device_resource_id = device_resource_id if device_resource_id is not None \
            else thread
        self.is_legacy = is_legacy
        self.flops = flops if flops is not None else 0
        self.is_user_annotation = is_user_annotation
        self.external_id = id

    def append_kernel(self, name, device, duration):
        """Attach a device kernel (``duration`` in us) to this event."""
        FunctionEvent._device_seen = True
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

    # A device event (a GPU kernel, ``device_type`` CUDA) spends no CPU time and its span
    # is device time; a CPU event's device time is that of the kernels it and its children
    # launched, as in PyTorch.

    @property
    def cpu_time_total(self):
        if self.device_type is not DeviceType.CPU:
            return 0
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self):
        if self.is_async or self.device_type is not DeviceType.CPU:
            return 0
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def device_time_total(self):
        if self.device_time_total_override is not None:
            return self.device_time_total_override
        if self.is_async:
            return 0
        if self.device_type is not DeviceType.CPU:
            return self.time_range.elapsed_us()
        if self.is_legacy:
            return sum(k.duration for k in self.kernels)
        return sum(k.duration for k in self.kernels) + \
            sum(c.device_time_total for c in self.cpu_children)

    @property
    def self_device_time_total(self):
        if self.is_async:
            return 0
        if self.device_type is not DeviceType.CPU:
            return self.device_time_total
        return sum(k.duration for k in self.kernels)

    cuda_time_total = device_time_total
    self_cuda_time_total = self_device_time_total

    @property
    def key(self):
        return self.name

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


class FunctionEventAvg(FormattedTimesMixin):
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

    def _add_cpu_event(self, e):
        """``add`` for a ``FunctionEvent`` with no device time, its key already checked
        (``EventList.key_averages``' loop): the same sums, in the same order, without the
        per-event property calls."""
        if self.key is None:
            self.add(e)
            return
        r = e.time_range
        total = r.end - r.start
        children = e.cpu_children
        child_time = 0
        child_mem = 0
        child_dev_mem = 0
        for c in children:
            cr = c.time_range
            child_time += cr.end - cr.start
            child_mem += c.cpu_memory_usage
            child_dev_mem += c.device_memory_usage
        self.cpu_time_total += total
        self.self_cpu_time_total += total - child_time
        self.cpu_memory_usage += e.cpu_memory_usage
        self.device_memory_usage += e.device_memory_usage
        self.self_cpu_memory_usage += e.cpu_memory_usage - child_mem
        self.self_device_memory_usage += e.device_memory_usage - child_dev_mem
        self.count += e.count
        if self.flops is None:
            self.flops = e.flops
        elif e.flops is not None:
            self.flops += e.flops

    def __iadd__(self, other):
        return self.add(other)

    def __repr__(self):
        device = "cuda" if self.use_device is None else self.use_device
        return (f"<FunctionEventAvg key={self.key} self_cpu_time="
                f"{_format_time(self.self_cpu_time_total)} cpu_time="
                f"{_format_time(self.cpu_time)}  self_{device}_time="
                f"{_format_time(self.self_device_time_total)} {device}_time="
                f"{_format_time(self.device_time)} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage} "
                f"{device}_memory_usage={self.device_memory_usage}>")

class MemRecordsAcc:
    """Memory records of a profile in time order, queried by time range.

    Args:
        mem_records (list): ``(time_us, bytes)`` pairs.

    Returns:
        The records, sorted by time; ``in_interval`` yields those in a time range.

    Example:
        >>> from ember.autograd.profiler_util import MemRecordsAcc
        >>> list(MemRecordsAcc([(5, 64), (1, 128), (9, -64)]).in_interval(0, 6))
        [(1, 128), (5, 64)]
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
    """A table that interns strings (kept for PyTorch compatibility).

    Args:
        default_factory: as ``collections.defaultdict``'s (unused: a missing key maps to
            itself).
        *args: the initial contents, as ``dict``'s.

    Returns:
        The table: looking a string up stores and returns it.

    Example:
        >>> from ember.autograd.profiler_util import StringTable
        >>> table = StringTable()
        >>> table["aten::add"], dict(table)
        ('aten::add', {'aten::add': 'aten::add'})
    """

    def __missing__(self, key):
        self[key] = key
        return key


def _format_time(time_us):
    """Microseconds as ``1.234s``, ``1.234ms`` or ``1.234us``."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"

