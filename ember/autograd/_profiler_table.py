"""The table ``key_averages().table()`` prints: PyTorch's columns, widths, units and footer.

Split out of ``profiler_util`` (formats only; the events are in ``_profiler_events``).
"""

from __future__ import annotations

import math

from ._profiler_events import DeviceType, FunctionEvent, _format_time

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
        events = sorted(events, key=lambda e: getattr(e, sort_by.replace("cuda", "device"), 0),
                        reverse=True)

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

    def trim_name(s):
        # as PyTorch cuts: at the column cap (not the column's width), and a name that just
        # fits the cap is cut too
        if max_name_column_width is not None and len(s) >= max_name_column_width - 3:
            return s[:max_name_column_width - 3] + "..."
        return s

    def trim_path(s):
        # a source location keeps its end (the file name and line)
        if len(s) > src_width:
            s = s[len(s) - src_width:]
            if len(s) > 3:
                s = "..." + s[3:]
        return s

    def t(us):
        return _format_time(us) if time_unit is None else _format_time_unit(us, time_unit)

    self_cpu_total = sum(e.self_cpu_time_total for e in events)
    # device time is counted once: on the device's own events (kernels), or on CPU events
    # of the legacy profiler, which hold their kernels themselves (as PyTorch counts)
    device_total = sum(e.self_device_time_total for e in events
                       if (e.device_type is DeviceType.CPU and e.is_legacy) or
                       (e.device_type is not DeviceType.CPU and not e.is_user_annotation))

    rows = 0
    for e in events:
        if row_limit is not None and row_limit >= 0 and rows == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        rows += 1
        cells = [trim_name(e.key)]
        if has_overload:
            cells.append(trim_name(e.overload_name or ""))
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
            cells.append(str(e.input_shapes)[:shapes_width])
        if has_stack:
            cells.append(trim_path(e.stack[0]) if e.stack else "")
        if with_flops:
            cells.append("--" if not e.flops else f"{e.flops * flops_scale:8.3f}")
        out.append(row_format.format(*cells))
        if has_stack:
            blanks = [""] * (len(cells) - (2 if with_flops else 1))
            for frame in e.stack[1:]:
                extra = [trim_path(frame)] + ([""] if with_flops else [])
                out.append(row_format.format(*(blanks + extra)))
            out.append(row_format.format(*([""] * len(cells))))   # a blank row after each
    out.append(line)
    out.append(f"Self CPU time total: {t(self_cpu_total)}")
    if has_device_time:
        out.append(f"Self {label} time total: {t(device_total)}")
    return "\n".join(out) + "\n"

