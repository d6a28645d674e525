"""``ember.profiler.profile``: PyTorch's profiler API over ember's recording session.

A ``profile`` drives recording sessions (NOTE [ Profiler recording ] in ``_recorder.py``)
through the steps of a ``schedule``: each ``step()`` asks the schedule what to do next and
starts, stops or hands the finished trace to ``on_trace_ready``. Without a schedule every
step records and the trace is ready when the profile exits.
"""

from __future__ import annotations

import enum
import gzip
import json
import os
import socket
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from ..autograd.profiler_util import DeviceType, EventList, ProfilerActivity
from . import _recorder
from ._convert import function_events

__all__ = ["ProfilerAction", "ProfilerActivity", "DeviceType", "profile", "schedule",
           "supported_activities", "tensorboard_trace_handler", "kineto_available",
           "is_fbcode", "ExecutionTraceObserver", "KinetoStepTracker", "RecordScope"]


class ProfilerAction(enum.Enum):
    """What the profiler does at a step, as a ``schedule`` decides.

    ``NONE``: nothing; ``WARMUP``: get ready (nothing is kept); ``RECORD``: record;
    ``RECORD_AND_SAVE``: record, and hand the trace to ``on_trace_ready`` when the step ends.

    Example::

        >>> ProfilerAction.RECORD
        <ProfilerAction.RECORD: 2>
    """

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


class RecordScope(enum.Enum):
    """The kind of code an event comes from (kept for PyTorch compatibility).

    Example:
        >>> from ember.profiler import RecordScope
        >>> RecordScope.USER_SCOPE.value
        7
    """

    FUNCTION = 0
    BACKWARD_FUNCTION = 1
    TORCHSCRIPT_FUNCTION = 2
    KERNEL_FUNCTION_DTYPE = 3
    CUSTOM_CLASS = 4
    BUILD_FEATURE = 5
    LITE_INTERPRETER = 6
    USER_SCOPE = 7
    STATIC_RUNTIME_OP = 8
    STATIC_RUNTIME_MODEL = 9


def supported_activities():
    """The activities this build can record: CPU always, CUDA when ember's CUDA backend
    is available.

    Returns:
        set: of ``ProfilerActivity``.

    Example::

        >>> ProfilerActivity.CPU in supported_activities()
        True
    """
    acts = {ProfilerActivity.CPU}
    if _cuda_available():
        acts.add(ProfilerActivity.CUDA)
    return acts


def kineto_available() -> bool:
    """True: ember's profiler offers the Kineto-based API (``ember.profiler.profile``).

    Example::

        >>> ember.profiler.kineto_available()
        True
    """
    return True


def is_fbcode() -> bool:
    """False: this is not Meta's internal build.

    Returns:
        bool: always False.

    Example:
        >>> from ember.profiler import is_fbcode
        >>> is_fbcode()
        False
    """
    return False


def _cuda_available():
    try:
        from .. import cuda
        return bool(cuda.is_available())
    except Exception:
        return False


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable:
    """A schedule for ``profile``: which steps to skip, warm up on, record and save.

    After ``skip_first`` steps, each cycle waits ``wait`` steps, warms up for ``warmup``,
    records ``active`` (saving at the last), and the cycle repeats ``repeat`` times (0:
    until the profile ends). ``skip_first_wait=1`` drops the first cycle's wait.

    Args:
        wait (int): idle steps at the start of each cycle.
        warmup (int): warm-up steps before recording.
        active (int): recorded steps (> 0).
        repeat (int): number of cycles; 0 for no limit. Default: 0.
        skip_first (int): steps to ignore at the start. Default: 0.
        skip_first_wait (int): 1 to skip the wait of the first cycle. Default: 0.

    Returns:
        callable: ``step -> ProfilerAction``.

    Example::

        >>> s = schedule(wait=1, warmup=1, active=2)
        >>> [s(i).name for i in range(4)]
        ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE']
    """
    if not (wait >= 0 and warmup >= 0 and active > 0 and repeat >= 0 and skip_first >= 0):
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), repeat={repeat} "
            f"(need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    cycle = wait + warmup + active

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        k = step % cycle
        if k < wait:
            return ProfilerAction.NONE
        if k < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if k < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _default_schedule_fn(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False, use_python_export: bool = False):
    """An ``on_trace_ready`` that writes each trace to ``dir_name`` for TensorBoard.

    Files are named ``{worker_name}.{time in ns}.pt.trace.json`` (``.gz`` added with
    ``use_gzip``); ``worker_name`` defaults to ``{hostname}_{pid}``.

    Args:
        dir_name (str): the folder (made if missing).
        worker_name (str, optional): the file name's prefix.
        use_gzip (bool): gzip the trace. Default: False.
        use_python_export (bool): accepted for PyTorch compatibility.

    Returns:
        callable: ``prof -> None``.

    Example::

        >>> import tempfile, os, ember
        >>> d = tempfile.mkdtemp()
        >>> with ember.profiler.profile(on_trace_ready=tensorboard_trace_handler(d)):
        ...     _ = ember.ones(2) + 1
        >>> os.listdir(d)[0].endswith(".pt.trace.json")
        True
    """

    def handler_fn(prof) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn


#: PyTorch's memory categories, in the order of its timeline's columns (after index 0)
_MEMORY_CATEGORIES = ("PARAMETER", "OPTIMIZER_STATE", "INPUT", "TEMPORARY", "ACTIVATION",
                      "GRADIENT", "AUTOGRAD_DETAIL", "Unknown")
_MEMORY_COLORS = ("darkgreen", "goldenrod", "black", "mediumpurple", "red", "mediumblue",
                  "royalblue", "grey")


_UNKNOWN_INDEX = len(_MEMORY_CATEGORIES) - 1


def _categorise(s):
    """``{event index: category}`` for the memory events of session ``s``, and
    ``{("pre", address): category}`` for the arrays with a known role that existed before
    it began (NOTE [ Memory categories ] in _recorder.py)."""
    from . import _recorder as r

    events, ctx = s.mem_events, s.mem_ctx
    roots = sorted(s.mem_roots, key=lambda x: x[0])
    cats = {}
    latest = {}      # address -> index of the live allocation under it
    allocated = set()
    free_of = {}     # allocation index -> its free's time
    k = 0
    for i, (t, n, _, addr) in enumerate(events):
        while k < len(roots) and roots[k][0] <= t:
            _name(roots[k], latest, allocated, cats)
            k += 1
        if n > 0:
            latest[addr] = i
            allocated.add(addr)
        else:
            j = latest.pop(addr, None)
            if j is not None:
                free_of[j] = t
                cats[i] = j     # resolved below, to its allocation's category
    while k < len(roots):
        _name(roots[k], latest, allocated, cats)
        k += 1
    starts = s.backward_starts
    for i, (t, n, _, _) in enumerate(events):
        if n <= 0 or i in cats:
            continue
        c = ctx[i] if i < len(ctx) else r._FORWARD
        if c == r._BACKWARD:
            cats[i] = r._AUTOGRAD_DETAIL
        elif c == r._OPTIMIZER:
            cats[i] = r._TEMPORARY
        else:
            end = free_of.get(i)
            alive = any(b > t and (end is None or b < end) for b in starts)
            cats[i] = r._ACTIVATION if alive else r._TEMPORARY
    for i, (_, n, _, _) in enumerate(events):
        if n <= 0 and i in cats:
            cats[i] = cats[cats[i]]
    return cats


def _name(root, latest, allocated, cats):
    """Give ``root``'s array its category: the allocation live under its address, or, when
    none was made during the profile, the array as one that existed before it."""
    _, cat, addr, _ = root
    i = latest.get(addr)
    if i is not None:
        cats.setdefault(i, cat)
    elif addr not in allocated:
        cats.setdefault(("pre", addr), cat)


def _coalesce(raw):
    """PyTorch's ``[times_us, sizes]`` from raw events: one row per distinct microsecond,
    the bytes alive per category (column 0 unused); arrays that existed before the profile
    are counted from its first time."""
    times, sizes = [], []
    width = len(_MEMORY_CATEGORIES) + 1
    t_min = -1
    for t, _, n, cat in raw:
        if t != -1:
            t //= 1000
        if t_min == -1 or 0 < t < t_min:
            t_min = t
        if not times:
            times.append(t)
            sizes.append([0] * width)
        elif t != times[-1]:
            times.append(t)
            sizes.append(sizes[-1].copy())
        sizes[-1][cat + 1] += n
    return [t_min if t < 0 else t for t in times], sizes


def _memory_timeline_html(path, times, sizes):
    """The timeline as a stacked plot in an HTML page, as PyTorch draws it."""
    import importlib.util
    if importlib.util.find_spec("matplotlib") is None:
        print("export_memory_timeline_html failed because matplotlib was not found.")
        return
    import base64
    import io

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    t = np.array(times if times else [0], dtype=np.float64)
    t -= t.min()
    sz = np.array(sizes if sizes else [[0] * (len(_MEMORY_CATEGORIES) + 1)], dtype=np.float64)
    stacked = np.cumsum(sz, axis=1) / 1024 ** 3
    fig = plt.figure(figsize=(20, 12), dpi=80)
    axes = fig.gca()
    for i, color in enumerate(_MEMORY_COLORS):
        axes.fill_between(t / 1e3, stacked[:, i], stacked[:, i + 1], color=color, alpha=0.7)
    fig.legend(list(_MEMORY_CATEGORIES))
    axes.set_xlabel("Time (ms)")
    axes.set_ylabel("Memory (GB)")
    peak = float(stacked[:, -1].max())
    axes.set_title(f"Max memory allocated: {peak:.2f} GiB \nMax memory reserved: 0.00 GiB")
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    encoded = base64.b64encode(buf.getvalue()).decode("utf-8")
    with open(path, "w", encoding="utf-8") as f:
        f.write("<html>\n<head><meta charset=\"utf-8\" /><title>GPU Memory Timeline HTML"
                "</title></head>\n<body>\n  <img src='data:image/png;base64," + encoded +
                "'>\n</body>\n</html>")


class _KinetoProfile:
    """Recording without a schedule: ``start()`` ... ``stop()``, then the reports.

    Args: as ``profile``, less ``schedule`` and ``on_trace_ready``.
    """

    def __init__(self, *, activities: Iterable | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False,
                 experimental_config=None, execution_trace_observer=None,
                 acc_events: bool = False, custom_trace_id_callback=None,
                 post_processing_timeout_s=None):
        self.activities = set(activities) if activities else supported_activities()
        for a in self.activities:
            if not isinstance(a, ProfilerActivity):
                raise TypeError(f"profile: activities must be ProfilerActivity values, "
                                f"got {a!r}")
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.experimental_config = experimental_config
        self.execution_trace_observer = execution_trace_observer
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.post_processing_timeout_s = post_processing_timeout_s
        self.use_device = None
        if ProfilerActivity.CUDA in self.activities:
            if _cuda_available():
                self.use_device = "cuda"
            else:
                warnings.warn("CUDA is not available, disabling CUDA profiling", stacklevel=3)
                self.activities.discard(ProfilerActivity.CUDA)
        self.preset_metadata: dict = {}
        self.profiler = None          # the current session
        self._event_list = None       # EventList of the last finished session(s)
        self._unconverted = []        # finished sessions not yet in it, with their meta
        self._trace_id = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self):
        """Start recording."""
        self.prepare_trace()
        self.start_trace()

    def stop(self):
        """Stop recording."""
        self.stop_trace()

    def prepare_trace(self):
        if self.profiler is None or not self.profiler.active:
            self.profiler = _recorder._Session(
                record_shapes=self.record_shapes, profile_memory=self.profile_memory,
                with_stack=self.with_stack, with_flops=self.with_flops,
                with_modules=self.with_modules, device_timer=self._device_timer(),
                verbose=bool(getattr(self.experimental_config, "verbose", False)))

    def start_trace(self):
        if self.profiler is None:
            self.prepare_trace()
        if not self.profiler.active and self.profiler.start_ns is None:
            self.profiler.start()
        if self.custom_trace_id_callback is not None:
            self._trace_id = self.custom_trace_id_callback()

    def stop_trace(self):
        s = self.profiler
        if s is None or not s.active:
            return
        s.stop()
        # the recordings become events when first asked for (NOTE [ Profiler recording ]):
        # a profile whose results are never read pays nothing for them
        if not self.acc_events:
            self._event_list = None
            self._unconverted = []
        self._unconverted.append((s, self._trace_meta()))

    @property
    def _events(self):
        """The ``EventList`` of the finished sessions (all of them with ``acc_events``, else
        the last), or None; built here from the recordings not converted yet."""
        while self._unconverted:
            s, meta = self._unconverted.pop(0)
            events = function_events(s, meta)
            if self._event_list is not None:
                merged = EventList(list(self._event_list) + list(events),
                                   use_device=self.use_device,
                                   profile_memory=self.profile_memory,
                                   with_flops=self.with_flops, _trace_meta=events._trace_meta)
                merged._sessions = self._event_list._sessions + events._sessions
                events = merged
            self._event_list = events
        return self._event_list

    def _device_timer(self):
        """The CUDA event timer when CUDA activity is recorded (NOTE [ CUDA event timing ]
        in ``_cuda.py``), else None; CuPy is imported only then."""
        if self.use_device != "cuda":
            return None
        from . import _cuda
        return _cuda.timer()

    def _trace_meta(self):
        return {"record_shapes": self.record_shapes, "profile_memory": self.profile_memory,
                "with_flops": self.with_flops, "with_stack": self.with_stack,
                "trace_id": self.get_trace_id(),
                "metadata": dict(self.preset_metadata), "use_device": self.use_device}

    def toggle_collection_dynamic(self, enable: bool, activities: Iterable):
        """Pause (``enable=False``) or resume recording of CPU activity mid-profile."""
        s = self.profiler
        if s is None or not s.active or ProfilerActivity.CPU not in set(activities):
            return
        from .. import _dispatch
        if enable and s._mode not in _dispatch.state.modes:
            _dispatch.push_mode(s._mode)
        elif not enable and s._mode in _dispatch.state.modes:
            _dispatch.pop_mode(s._mode)

    # -- results -----------------------------------------------------------------------------

    def events(self):
        """The recorded events (an ``EventList`` of ``FunctionEvent``), in start order."""
        if self._events is None:
            raise AssertionError("profile: no events recorded yet; stop the profiler (or "
                                 "leave its `with` block) before asking for events")
        return self._events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False):
        """The events averaged by name; see ``EventList.key_averages``.

        Args:
            group_by_input_shape (bool): one row per (name, input shapes); needs
                ``record_shapes=True``.
            group_by_stack_n (int): one row per (name, innermost n frames); needs
                ``with_stack=True``.
            group_by_overload_name (bool): one row per op overload.

        Returns:
            EventList: of ``FunctionEventAvg`` (call ``.table()`` on it).

        Example::

            >>> import ember
            >>> with ember.profiler.profile() as prof:
            ...     _ = ember.ones(2) + 1
            >>> "aten::add" in [a.key for a in prof.key_averages()]
            True
        """
        return self.events().key_averages(group_by_input_shape, group_by_stack_n,
                                          group_by_overload_name)

    def export_chrome_trace(self, path: str, use_python_export: bool = False):
        """Write the trace as Chrome/Perfetto JSON (gzipped when ``path`` ends in ``.gz``)."""
        self.events().export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total"):
        """Write the recorded stacks in flame-graph folded format; needs ``with_stack``."""
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        self.events().export_stacks(path, metric)

    def export_memory_timeline(self, path: str, device: str | None = None) -> None:
        """Write the bytes ops allocated and freed over time (``profile_memory=True``), in
        the files PyTorch writes, chosen by ``path``'s ending.

        ``.json`` (or ``.json.gz``): ``[times_us, sizes]``, where ``sizes[i]`` lists the
        bytes alive at ``times_us[i]`` per category in PyTorch's order (index 0 unused,
        then parameter, optimizer state, input, temporary, activation, gradient, autograd
        detail, unknown), as ember sorts them (NOTE [ Memory categories ] in
        _recorder.py); parameters, gradients, optimizer state and inputs that existed
        before the profile are counted from its start. ``.raw.json.gz``: one ``(time_ns,
        action, bytes, category)`` per array that existed before (time -1, action 1),
        allocation (action 2) and free (action 4, negative bytes). ``.html``: the stacked
        plot as an embedded PNG (needs matplotlib). Deprecated in PyTorch, which warns
        with a ``FutureWarning``; so does ember.

        Args:
            path (str): the file to write.
            device (str, optional): accepted for PyTorch compatibility; ember records the
                memory of the CPU arrays ops allocate.

        Returns:
            None

        Example::

            >>> import ember, json, os, tempfile, warnings
            >>> with ember.profiler.profile(profile_memory=True) as prof:
            ...     _ = ember.ones(256) + 1
            >>> path = os.path.join(tempfile.mkdtemp(), "mem.json")
            >>> with warnings.catch_warnings():
            ...     warnings.simplefilter("ignore", FutureWarning)
            ...     prof.export_memory_timeline(path)
            >>> times, sizes = json.load(open(path))
            >>> len(sizes[0]), max(row[4] for row in sizes)    # temporaries
            (9, 2048)
        """
        warnings.warn(
            "`export_memory_timeline` is deprecated and will be removed in a future version. "
            "Please use `torch.cuda.memory._record_memory_history` and "
            "`torch.cuda.memory._export_memory_snapshot` instead.", FutureWarning,
            stacklevel=2)
        raw = self._memory_events()
        if path.endswith("raw.json.gz"):
            with gzip.open(path, "wt") as f:
                f.write(json.dumps(raw))
            return
        times, sizes = _coalesce(raw)
        if path.endswith(".html"):
            _memory_timeline_html(path, times, sizes)
            return
        data = json.dumps([times, sizes])
        if path.endswith(".gz"):
            with gzip.open(path, "wt") as f:
                f.write(data)
        else:
            with open(path, "w") as f:
                f.write(data)

    def _memory_events(self):
        """Every memory event of the recording as PyTorch's raw timeline lists them,
        ``[time_ns, action, bytes, category]`` in time order: action 1 for an array that
        existed before the profile (time -1), 2 an allocation, 4 a free (negative bytes);
        the category an index into ``_MEMORY_CATEGORIES`` (NOTE [ Memory categories ] in
        _recorder.py)."""
        out, pre = [], []
        for s in self.events()._sessions:
            wall = s.start_wall_ns - s.start_ns
            cats = _categorise(s)
            seen = set()
            for _, cat, addr, n in s.mem_roots:
                if cats.get(("pre", addr)) == cat and addr not in seen:
                    seen.add(addr)
                    pre.append([-1, 1, n, cat])
            for i, (t, n, _, _) in enumerate(s.mem_events):
                out.append([t + wall, 2 if n > 0 else 4, n, cats.get(i, _UNKNOWN_INDEX)])
        return pre + out

    def add_metadata(self, key: str, value: str):
        """Add a ``key: value`` string to the trace's top level."""
        self.preset_metadata[key] = value

    def add_metadata_json(self, key: str, value: str):
        """Add ``key`` with a JSON-encoded ``value`` to the trace's top level."""
        self.preset_metadata[key] = json.loads(value)

    def preset_metadata_json(self, key: str, value: str):
        """As ``add_metadata_json``, set before the trace starts."""
        self.preset_metadata[key] = json.loads(value)

    def get_trace_id(self):
        """The trace's id (a hex string), from ``custom_trace_id_callback`` when given."""
        if self._trace_id is None:
            import uuid
            self._trace_id = uuid.uuid4().hex.upper()
        return self._trace_id

    def set_custom_trace_id_callback(self, callback):
        """Use ``callback()`` for the id of each new trace."""
        self.custom_trace_id_callback = callback

    def _memory_profile(self):
        raise NotImplementedError("profile._memory_profile: the categorised memory profile "
                                  "is not implemented in ember; use export_memory_timeline")


class profile(_KinetoProfile):
    """Profile the code inside ``with``: op calls, ``record_function`` blocks and backward.

    Args:
        activities (iterable of ProfilerActivity, optional): what to record. Default:
            ``supported_activities()``. CUDA when CUDA is unavailable warns and is dropped.
        schedule (callable, optional): ``step -> ProfilerAction`` (see ``schedule``).
            Default: record every step.
        on_trace_ready (callable, optional): called with this profile each time a cycle's
            trace is ready (e.g. ``tensorboard_trace_handler(dir)``).
        record_shapes (bool): record each op's input shapes. Default: False.
        profile_memory (bool): record the bytes each op's outputs allocate, and frees.
        with_stack (bool): record the Python stack of each op.
        with_flops (bool): count flops of matrix products, convolutions, add and mul.
        with_modules (bool): accepted as PyTorch's (whose module hierarchy is
            TorchScript's); ``nn.Module: Linear_0`` events come with ``with_stack``, as in
            PyTorch.
        experimental_config, execution_trace_observer: accepted for PyTorch compatibility.
        acc_events (bool): keep events across schedule cycles. Default: False.
        use_cuda (bool, optional): deprecated; adds ``ProfilerActivity.CUDA``.

    Example::

        >>> import ember
        >>> from ember.profiler import profile, record_function, ProfilerActivity
        >>> x = ember.ones(4, 4)
        >>> with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        ...     with record_function("block"):
        ...         y = x @ x
        >>> names = [e.name for e in prof.events()]
        >>> names[0], names[1], names[2]
        ('block', 'aten::matmul', 'aten::mm')
    """

    def __init__(self, *, activities: Iterable | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[..., Any] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False,
                 experimental_config=None, execution_trace_observer=None,
                 acc_events: bool = False, use_cuda: bool | None = None,
                 custom_trace_id_callback=None, post_processing_timeout_s=None):
        activities_set = set(activities) if activities else supported_activities()
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead",
                          FutureWarning, stacklevel=2)
            if use_cuda:
                activities_set.add(ProfilerActivity.CUDA)
            else:
                activities_set.discard(ProfilerActivity.CUDA)
        if not activities_set:
            raise AssertionError("No valid profiler activities found")
        super().__init__(activities=activities_set, record_shapes=record_shapes,
                         profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules,
                         experimental_config=experimental_config,
                         execution_trace_observer=execution_trace_observer,
                         acc_events=acc_events,
                         custom_trace_id_callback=custom_trace_id_callback,
                         post_processing_timeout_s=post_processing_timeout_s)
        if schedule is not None:
            self.schedule = schedule
            self.record_steps = True
        else:
            self.schedule = _default_schedule_fn
            self.record_steps = False
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn = None
        self._warned_cycle = False

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()
        return False

    def start(self):
        """Begin the schedule at step 0 (``__enter__`` calls this)."""
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self._open_step()

    def stop(self):
        """End the schedule: stop recording, and call ``on_trace_ready`` if a trace was
        being recorded (``__exit__`` calls this)."""
        if self.record_steps and self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit_action(self.current_action, None)

    def step(self):
        """Signal that a training step ended: move the schedule on by one step."""
        if self.record_steps and self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev_action = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit_action(prev_action, self.current_action)
        if self.record_steps:
            self._open_step()

    def _open_step(self):
        from .record_function import record_function
        self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
        self.step_rec_fn.__enter__()

    def _trace_ready(self):
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _new_cycle(self):
        if not self.acc_events and (self._event_list is not None or self._unconverted) \
                and not self._warned_cycle:
            warnings.warn("Warning: Profiler clears events at the end of each cycle. Only "
                          "events from the current cycle will be reported. To keep events "
                          "across cycles, set acc_events=True.", stacklevel=4)
            self._warned_cycle = True
        self.profiler = None
        self.prepare_trace()
        self._trace_id = None

    def _transit_action(self, prev, cur):
        A = ProfilerAction
        recording = (A.RECORD, A.RECORD_AND_SAVE)
        if prev == A.RECORD_AND_SAVE and cur is not None:
            # the cycle ends here: stop, hand over, and start afresh if asked
            self.stop_trace()
            self._trace_ready()
            if cur in (A.WARMUP, A.RECORD, A.RECORD_AND_SAVE):
                self._new_cycle()
            if cur in recording:
                self.start_trace()
            return
        if cur is None:
            if prev == A.WARMUP:
                self.start_trace()
                self.stop_trace()
            elif prev in recording:
                self.stop_trace()
                self._trace_ready()
            return
        if prev == A.NONE:
            if cur == A.WARMUP:
                self._new_cycle()
            elif cur in recording:
                self._new_cycle()
                self.start_trace()
        elif prev == A.WARMUP:
            if cur == A.NONE:
                warnings.warn("Incorrect schedule: WARMUP followed by NONE", stacklevel=3)
                self.start_trace()
                self.stop_trace()
            elif cur in recording:
                self.start_trace()
        elif prev == A.RECORD:
            if cur in (A.NONE, A.WARMUP):
                warnings.warn(f"Incorrect schedule: RECORD followed by {cur.name}",
                              stacklevel=3)
                self.stop_trace()


class ExecutionTraceObserver:
    """PyTorch's execution-graph observer; ember records no execution graph, so this
    observer registers, writes an empty graph file, and reports itself as not running.

    Example::

        >>> obs = ember.profiler.ExecutionTraceObserver()
        >>> obs.is_registered()
        False
    """

    def __init__(self):
        self._path = None
        self._registered = False
        self._running = False

    def register_callback(self, output_file_path: str):
        """Remember where to write the (empty) execution trace; returns self."""
        self._path = output_file_path
        self._registered = True
        return self

    def unregister_callback(self):
        """Stop and write the file."""
        self.stop()
        self._registered = False

    def is_registered(self) -> bool:
        return self._registered

    def is_running(self) -> bool:
        return self._running

    def start(self):
        self._running = True

    def stop(self):
        if self._running and self._path:
            with open(self._path, "w") as f:
                json.dump({"schema": "1.1.1-chakra.0.0.4", "pid": os.getpid(),
                           "time": time.strftime("%Y-%m-%d %H:%M:%S"), "nodes": []}, f)
        self._running = False

    def get_output_file_path(self):
        return self._path

    def cleanup(self):
        self.unregister_callback()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


class KinetoStepTracker:
    """Counts steps requested by several clients (optimizers, profilers) and keeps the
    global step as the largest of them (PyTorch's ``KinetoStepTracker``).

    Example:
        >>> from ember.profiler import KinetoStepTracker
        >>> KinetoStepTracker.init_step_count("doc")
        >>> step = KinetoStepTracker.increment_step("doc")
        >>> KinetoStepTracker.erase_step_count("doc")
        True
    """

    _current_step = 0
    _step_dict: dict = {}

    @classmethod
    def init_step_count(cls, requester: str):
        cls._step_dict[requester] = cls._current_step

    @classmethod
    def erase_step_count(cls, requester: str) -> bool:
        return cls._step_dict.pop(requester, None) is not None

    @classmethod
    def increment_step(cls, requester: str) -> int:
        if requester not in cls._step_dict:
            cls.init_step_count(requester)
        cls._step_dict[requester] += 1
        new_step = max(cls._step_dict.values())
        if new_step > cls._current_step:
            cls._current_step = new_step
        return cls._current_step

    @classmethod
    def current_step(cls) -> int:
        return cls._current_step
