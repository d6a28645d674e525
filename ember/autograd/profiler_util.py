"""``ember.autograd.profiler_util``: the events a profile hands back, and their reports.

A finished profile is an ``EventList`` of ``FunctionEvent``s, one per op call, user block
(``record_function``), backward node or profiler step, in start order, each knowing its
parent and children on its thread. ``EventList.key_averages()`` groups them into
``FunctionEventAvg``s (by name, and optionally by input shapes or call stack), and ``table``
prints the same table PyTorch prints: the same columns, widths, units and footer.

Times are microseconds (floats), memory is bytes, as in PyTorch.

The pieces live in three modules: ``_profiler_events`` (the events, the enums),
``_profiler_table`` (the table's formatting), and this one, which holds ``EventList`` and
re-exports PyTorch's names, so imports from ``torch.autograd.profiler_util`` keep working.
"""

from __future__ import annotations

import json
import os

from ._profiler_events import (  # noqa: F401  (PyTorch's names in this module)
    MEMORY_EVENT_NAME, OUT_OF_MEMORY_EVENT_NAME, DeviceType, EventMetadata,
    FormattedTimesMixin, FunctionEvent, FunctionEventAvg, Interval, Kernel, MemRecordsAcc,
    ProfilerActivity, StringTable, _device_type, _format_time,
)
from ._profiler_table import (  # noqa: F401
    _auto_scale_flops, _build_table, _format_memory, _format_time_share, _format_time_unit,
)

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "Interval", "Kernel",
           "MemRecordsAcc", "StringTable", "FormattedTimesMixin", "EventMetadata",
           "MEMORY_EVENT_NAME", "OUT_OF_MEMORY_EVENT_NAME"]


#: the characters a folded stack line cannot hold in a frame's name, each written as ``_``
_FOLDED = str.maketrans(" ;\t\n", "____")


class EventList(list):
    """A list of ``FunctionEvent`` objects with the reports PyTorch offers on it.

    Args:
        *args: the events, as ``list``'s argument.
        use_device (str, optional): the device whose times the reports show
            (``"cuda"``). Default: None.
        profile_memory (bool): whether the reports show memory columns. Default: False.
        with_flops (bool): whether the reports show FLOPs. Default: False.

    Returns:
        The list, with ``table``, ``key_averages``, ``total_average`` and
        ``export_chrome_trace``.

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

    def __str__(self):
        # ``print(prof.key_averages())`` shows the table, as in PyTorch; repr stays a list's
        return self.table()

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
        """Write one line per event that has a stack, in the folded format that flame-graph
        tools read: ``outer;...;inner value`` (blanks as ``_``). Events have stacks under
        ``with_stack=True`` with ``experimental_config=_ExperimentalConfig(verbose=True)``,
        as in PyTorch; otherwise the file is empty.

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
                # the stack alone, outermost first, blanks and separators as ``_``, as
                # PyTorch writes it (the event's own name is not on the line)
                frames = ";".join(s.translate(_FOLDED) for s in reversed(evt.stack))
                f.write(f"{frames} {int(value)}\n")

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
        stats = {}
        cpu = DeviceType.CPU
        # events without device time (every event of a CPU profile) take the quick sum
        quick = not FunctionEvent._device_seen and not any(
            e.kernels or e.device_time_total_override is not None
            for e in self if type(e) is FunctionEvent)
        for e in self:
            k = (e.key, e.node_id, e.device_type, e.is_legacy, e.is_user_annotation)
            if group_by_input_shapes:
                k += (str(e.input_shapes),)
            if group_by_stack_n > 0:
                k += tuple(e.stack[:group_by_stack_n])
            if group_by_overload_name:
                k += (e.overload_name,)
            avg = stats.get(k)
            if avg is None:
                avg = stats[k] = FunctionEventAvg()
            if quick and type(e) is FunctionEvent and e.device_type is cpu and not e.is_async:
                avg._add_cpu_event(e)
            else:
                avg.add(e)
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


def _write_json(path, obj):
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f)
