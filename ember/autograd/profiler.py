"""``ember.autograd.profiler``: PyTorch's legacy profiler API (``torch.autograd.profiler``).

``profile`` here is the older interface -- ``use_cuda``/``use_device``, ``enabled``, the
events as ``prof.function_events`` -- over the same recording session as
``ember.profiler.profile`` (NOTE [ Profiler recording ] in ember/profiler/_recorder.py).
"""

from __future__ import annotations

import enum
import logging
import warnings

from .. import _dispatch
from ..futures import Future  # noqa: F401  (PyTorch's module has the name too)
from ..profiler import _recorder
from ..profiler._convert import function_events as _function_events
from ..profiler.profiler import KinetoStepTracker, kineto_available  # noqa: F401
from ..profiler.record_function import record_function
from .profiler_util import (  # noqa: F401  (PyTorch's names in this module)
    DeviceType, EventList, FunctionEvent, FunctionEventAvg, MemRecordsAcc, ProfilerActivity,
)

__all__ = ["profile", "record_function", "emit_itt", "emit_nvtx", "load_nvprof",
           "EnforceUnique", "parse_nvprof_trace", "KinetoStepTracker", "EventList",
           "FunctionEvent", "MemRecordsAcc"]

#: the module's logger, as PyTorch's module has one
log = logging.getLogger(__name__)

MEMORY_EVENT_NAME = "[memory]"
OUT_OF_MEMORY_EVENT_NAME = "[OutOfMemory]"


class ProfilerState(enum.Enum):
    """The profiler's recording state (PyTorch's ``ProfilerState``).

    Example:
        >>> from ember.autograd import ProfilerState
        >>> ProfilerState.CPU.value
        1
    """

    Disabled = 0
    CPU = 1
    CUDA = 2
    NVTX = 3
    ITT = 4
    PRIVATEUSE1 = 5
    KINETO = 6
    KINETO_GPU_FALLBACK = 7
    KINETO_PRIVATEUSE1_FALLBACK = 8
    KINETO_PRIVATEUSE1 = 9


class ProfilerConfig:
    """The options a profile runs with (PyTorch's ``ProfilerConfig``).

    Args:
        state: a :class:`ProfilerState`, what is recorded.
        report_input_shapes: record each op's input shapes.
        profile_memory: record allocations and frees.
        with_stack: record the Python stack of each op.
        with_flops: estimate each op's floating-point operations.
        with_modules: record the module hierarchy of each op.
        experimental_config: kept for PyTorch compatibility (unused).
        trace_id: a name for the trace.

    Example:
        >>> from ember.autograd import ProfilerConfig, ProfilerState
        >>> ProfilerConfig(ProfilerState.CPU, report_input_shapes=True).report_input_shapes
        True
    """

    def __init__(self, state, report_input_shapes=False, profile_memory=False,
                 with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, trace_id=""):
        self.state = state
        self.report_input_shapes = report_input_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.experimental_config = experimental_config
        self.trace_id = trace_id


class profile:
    """The legacy profiler: records op calls, ``record_function`` blocks and backward
    nodes inside ``with``; then ``key_averages().table()``, ``export_chrome_trace`` ...

    Args:
        enabled (bool): False makes this a no-op. Default: True.
        use_cuda (bool): deprecated; record CUDA activity (warns, and is dropped, when
            CUDA is unavailable).
        use_device (str, optional): the device whose activity to record (``"cuda"``).
        record_shapes (bool): record input shapes. Default: False.
        with_flops (bool): count flops of matrix products and convolutions.
        profile_memory (bool): record the bytes ops allocate and free.
        with_stack (bool): record the Python stack of each op.
        with_modules (bool): accepted as PyTorch's; ``nn.Module`` calls are recorded
            with ``with_stack``, as in PyTorch.
        use_kineto, use_cpu, experimental_config, acc_events, custom_trace_id_callback:
            accepted for PyTorch compatibility.

    Example::

        >>> import ember
        >>> x = ember.ones(3, 3, requires_grad=True)
        >>> with ember.autograd.profiler.profile() as prof:
        ...     (x @ x).sum().backward()
        >>> any(e.name.startswith("autograd::engine::evaluate_function")
        ...     for e in prof.function_events)
        True
    """

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, experimental_config=None, acc_events=False,
                 custom_trace_id_callback=None, post_processing_timeout_s=None,
                 activity_filters=None):
        self.enabled = enabled
        if not enabled:
            return
        self.use_cuda = use_cuda
        if use_cuda:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use "
                          "``use_device = 'cuda'`` instead.", FutureWarning, stacklevel=2)
            use_device = "cuda"
        if use_device == "cuda":
            from ..profiler.profiler import _cuda_available
            if not _cuda_available():
                warnings.warn("CUDA is not available, disabling CUDA profiling",
                              stacklevel=2)
                use_device = None
        self.use_device = use_device
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.use_cpu = use_cpu
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.experimental_config = experimental_config
        self.trace_id = ""
        self._function_events = None
        self._unconverted = []     # finished sessions not yet in ``function_events``
        self.entered = False
        self._session = None
        self._events_list = []

    @property
    def function_events(self):
        """The recorded events, an ``EventList`` (None before the profile ends); built from
        the recordings when first read (NOTE [ Profiler recording ] in
        ember/profiler/_recorder.py)."""
        while self._unconverted:
            session, meta = self._unconverted.pop(0)
            events = _function_events(session, meta)
            if self._function_events is not None:
                merged = EventList(list(self._function_events) + list(events),
                                   use_device=self.use_device,
                                   profile_memory=self.profile_memory,
                                   with_flops=self.with_flops, _trace_meta=meta)
                merged._sessions = self._function_events._sessions + events._sessions
                events = merged
            self._function_events = events
        return self._function_events

    @function_events.setter
    def function_events(self, events):
        self._unconverted = []
        self._function_events = events

    def default_trace_id(self):
        """A new random trace id: 32 upper-case hex digits.

        Returns:
            str: the id.

        Example::

            >>> import ember
            >>> len(ember.autograd.profiler.profile().default_trace_id())
            32
        """
        import uuid
        return f"{uuid.uuid4().int:032X}"

    def create_trace_id(self):
        """The id of a new trace: ``custom_trace_id_callback()`` when given, else
        ``default_trace_id()``.

        Returns:
            str: the id.

        Example::

            >>> import ember
            >>> ember.autograd.profiler.profile(
            ...     custom_trace_id_callback=lambda: "run-1").create_trace_id()
            'run-1'
        """
        if self.custom_trace_id_callback:
            return self.custom_trace_id_callback()
        return self.default_trace_id()

    def config(self, create_trace_id=False):
        """This profile's options as a ``ProfilerConfig``; ``create_trace_id=True`` first
        gives the profile a new ``trace_id``."""
        if create_trace_id:
            self.trace_id = self.create_trace_id()
        return ProfilerConfig(ProfilerState.KINETO, self.record_shapes, self.profile_memory,
                              self.with_stack, self.with_flops, self.with_modules,
                              trace_id=self.trace_id)

    def toggle_collection_dynamic(self, enabled: bool, activities):
        """Pause (``enabled=False``) or resume the recording of ``activities`` while the
        profile runs; only ``ProfilerActivity.CPU`` (the ops) can be paused in ember.

        Args:
            enabled (bool): resume (True) or pause (False).
            activities (iterable of ProfilerActivity): the activities to toggle.

        Returns:
            None

        Example::

            >>> import ember
            >>> from ember.profiler import ProfilerActivity
            >>> with ember.autograd.profiler.profile() as prof:
            ...     prof.toggle_collection_dynamic(False, [ProfilerActivity.CPU])
            ...     _ = ember.ones(2) + 1
            ...     prof.toggle_collection_dynamic(True, [ProfilerActivity.CPU])
            >>> [e.name for e in prof.function_events]
            []
        """
        s = self._session
        if s is None or not s.active or ProfilerActivity.CPU not in set(activities):
            return
        if enabled and s._mode not in _dispatch.state.modes:
            _dispatch.push_mode(s._mode)
        elif not enabled and s._mode in _dispatch.state.modes:
            _dispatch.pop_mode(s._mode)

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._start_trace()
        return self

    def _start_trace(self):
        self.config(create_trace_id=True)
        timer = None
        if self.use_device == "cuda":   # NOTE [ CUDA event timing ] in ember/profiler/_cuda.py
            from ..profiler import _cuda
            timer = _cuda.timer()
        self._session = _recorder._Session(
            record_shapes=self.record_shapes, profile_memory=self.profile_memory,
            with_stack=self.with_stack, with_flops=self.with_flops,
            with_modules=self.with_modules, device_timer=timer,
            verbose=bool(getattr(self.experimental_config, "verbose", False)))
        self._session.start()

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.enabled:
            return False
        self._session.stop()
        meta = {"record_shapes": self.record_shapes, "profile_memory": self.profile_memory,
                "with_flops": self.with_flops, "with_stack": self.with_stack,
                "use_device": self.use_device}
        if not self.acc_events:
            self.function_events = None
        self._unconverted.append((self._session, meta))
        self.entered = False
        return False

    def __repr__(self):
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return repr(self.function_events)

    def __str__(self):
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return str(self.function_events.table())

    def _check_finish(self):
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        """The events as PyTorch's table; see ``EventList.table``."""
        self._check_finish()
        return self.function_events.table(
            sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width, header=header,
            top_level_events_only=top_level_events_only, time_unit=time_unit)

    def export_chrome_trace(self, path):
        """Write the trace as Chrome/Perfetto JSON; see ``EventList.export_chrome_trace``."""
        self._check_finish()
        return self.function_events.export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total"):
        """Write the stacks in flame-graph folded format; needs ``with_stack=True``."""
        self._check_finish()
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        return self.function_events.export_stacks(path, metric)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """The events averaged by name; see ``EventList.key_averages``."""
        self._check_finish()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n,
                                                 group_by_overload_name)

    def total_average(self):
        """One average over every event."""
        self._check_finish()
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self):
        """The total self CPU time of all events (us)."""
        self._check_finish()
        return self.function_events.self_cpu_time_total


class emit_nvtx:
    """Mark every op as an NVTX range, for NVIDIA's profilers (nsys, nvprof).

    As in PyTorch it synchronises CUDA on entry, so without CUDA it raises the
    ``AssertionError`` that ``ember.cuda.synchronize()`` raises; with CUDA, ranges are
    pushed through CuPy's NVTX binding.

    Args:
        enabled (bool): False makes this a no-op. Default: True.
        record_shapes (bool): append the input shapes to each range's name.

    Returns:
        A context manager.

    Example:
        >>> import ember
        >>> with ember.autograd.profiler.emit_nvtx(enabled=False):  # True needs CUDA
        ...     y = ember.ones(2) * 2
    """

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self.entered = False
        self.record_shapes = record_shapes
        self._mode = None

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("NVTX annotation context manager is not reentrant")
        self.entered = True
        from .. import cuda
        cuda.synchronize()
        self._mode = _NvtxMode(self.record_shapes)
        _dispatch.push_mode(self._mode)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.enabled:
            return False
        from .. import cuda
        cuda.synchronize()
        _dispatch.pop_mode(self._mode)
        self.entered = False
        return False


def _nvtx():
    try:
        from cupy.cuda import nvtx
        return nvtx
    except Exception:
        return None


class _NvtxMode(_dispatch.Mode):
    """A mode-stack layer pushing an NVTX range around each op (see ``emit_nvtx``)."""

    level = 40

    def __init__(self, record_shapes):
        self.record_shapes = record_shapes
        self.nvtx = _nvtx()

    def dispatch(self, handle, args, kwargs):
        nvtx = self.nvtx
        if nvtx is None:
            return handle(*args, **kwargs)
        name = _recorder._event_name(handle)
        if self.record_shapes:
            name += f", sizes = {_recorder._shapes(args, kwargs)}"
        nvtx.RangePush(name)
        try:
            return handle(*args, **kwargs)
        finally:
            nvtx.RangePop()


class emit_itt:
    """Mark every op as an Intel ITT range; ember has no ITT binding, so this only checks
    its arguments and does nothing (as PyTorch built without ITT would).

    Args:
        enabled (bool): False makes this a no-op. Default: True.
        record_shapes (bool): append the input shapes to each range's name. Default: False.

    Returns:
        A context manager; entering it twice at once raises ``RuntimeError``.

    Example:
        >>> import ember
        >>> with ember.autograd.profiler.emit_itt():
        ...     y = ember.ones(2) * 2
    """

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self.entered = False
        self.record_shapes = record_shapes

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("ITT annotation context manager is not reentrant")
        self.entered = True
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.entered = False
        return False


def load_nvprof(path):
    """Read an nvprof trace (an SQLite file) into an ``EventList``.

    Args:
        path (str): the trace file.

    Returns:
        EventList: its events, as ``parse_nvprof_trace`` reads them.

    Example:
        >>> import os, sqlite3, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "trace.nvvp")
        >>> with sqlite3.connect(path) as db:
        ...     _ = db.executescript(
        ...         "CREATE TABLE StringTable (_id_ INTEGER, value TEXT);"
        ...         "INSERT INTO StringTable VALUES (1, 'step');"
        ...         "CREATE TABLE CUPTI_ACTIVITY_KIND_MARKER "
        ...         "(id INTEGER, name INTEGER, timestamp INTEGER);"
        ...         "INSERT INTO CUPTI_ACTIVITY_KIND_MARKER VALUES (7, 1, 1000), (7, 0, 5000);")
        >>> [e.name for e in load_nvprof(path)]
        ['step']
    """
    return EventList(parse_nvprof_trace(path))


def parse_nvprof_trace(path):
    """The events of an nvprof trace file, as ``FunctionEvent``s (needs ``sqlite3``).

    Args:
        path (str): the trace file (nvprof's SQLite output).

    Returns:
        list: a ``FunctionEvent`` per NVTX range, in order of start time.

    Example:
        >>> import os, sqlite3, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "trace.nvvp")
        >>> with sqlite3.connect(path) as db:
        ...     _ = db.executescript(
        ...         "CREATE TABLE StringTable (_id_ INTEGER, value TEXT);"
        ...         "INSERT INTO StringTable VALUES (1, 'aten::add');"
        ...         "CREATE TABLE CUPTI_ACTIVITY_KIND_MARKER "
        ...         "(id INTEGER, name INTEGER, timestamp INTEGER);"
        ...         "INSERT INTO CUPTI_ACTIVITY_KIND_MARKER VALUES (7, 1, 1000), (7, 0, 5000);")
        >>> [(e.name, e.time_range.elapsed_us()) for e in parse_nvprof_trace(path)]
        [('aten::add', 4.0)]
    """
    import sqlite3
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    strings = {r["_id_"]: r["value"] for r in conn.execute("SELECT _id_, value FROM StringTable")}
    events = []
    query = ("SELECT start.id AS marker_id, start.name, start.timestamp AS start_time, "
             "end.timestamp AS end_time FROM CUPTI_ACTIVITY_KIND_MARKER AS start INNER JOIN "
             "CUPTI_ACTIVITY_KIND_MARKER AS end ON start.id = end.id WHERE start.name != 0 "
             "AND end.name = 0")
    for i, row in enumerate(conn.execute(query)):
        events.append(FunctionEvent(id=i, name=strings.get(row["name"], str(row["name"])),
                                    thread=0, start_us=row["start_time"] / 1e3,
                                    end_us=row["end_time"] / 1e3))
    events.sort(key=lambda e: e.time_range.start)
    return events


class EnforceUnique:
    """Raise if the same key is seen twice (a helper PyTorch exports).

    Returns:
        The checker; ``see(*key)`` records a key and raises ``RuntimeError`` on a repeat.

    Example:
        >>> from ember.autograd.profiler import EnforceUnique
        >>> unique = EnforceUnique()
        >>> unique.see("a", 1)
        >>> unique.see("a", 1)
        Traceback (most recent call last):
        ...
        RuntimeError: duplicate key: ('a', 1)
    """

    def __init__(self):
        self.seen = set()

    def see(self, *key):
        """Record ``key``; RuntimeError if it was seen before."""
        if key in self.seen:
            raise RuntimeError("duplicate key: " + str(key))
        self.seen.add(key)


class ProfilerEvent:
    """A raw event of the legacy profiler (PyTorch's ``torch.autograd.ProfilerEvent``):
    ``name()``, ``kind()``, ``thread_id()`` and the times of a ``FunctionEvent``.

    Args:
        event: the ``FunctionEvent`` (from ``profile().function_events``) it describes.
        kind: ``"mark"``, ``"push"`` or ``"pop"``.

    Example:
        >>> import ember
        >>> from ember.autograd import ProfilerEvent
        >>> x = ember.ones(2)
        >>> with ember.autograd.profiler.profile() as prof:
        ...     _ = x + 1
        >>> ProfilerEvent(prof.function_events[0]).name()
        'aten::add'
    """

    def __init__(self, event: FunctionEvent, kind: str = "mark"):
        self._event = event
        self._kind = kind

    def name(self) -> str:
        return self._event.name

    def kind(self) -> str:
        return self._kind

    def thread_id(self) -> int:
        return self._event.thread

    def cpu_elapsed_us(self, other: ProfilerEvent) -> float:
        """Microseconds from this event's start to ``other``'s."""
        return other._event.time_range.start - self._event.time_range.start

    def shapes(self):
        return self._event.input_shapes
