"""Running the benchmark: machine information, reports and the ``python -m bench`` command.

See bench/README.md for usage and NOTE [ Timing method ] in bench/common.py for the method.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

from bench.common import REGISTRY, available_frameworks, load_groups, run_workload

# ------------------------------------------------------------------------------------------------
# machine information and reports


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git_commit():
    """The checked-out commit, with "+dirty" when the working tree has changes."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=5, cwd=here).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5, cwd=here).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return (head + ("+dirty" if dirty.strip() else "")) or None


def _load():
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def machine_info(modules):
    """What the numbers depend on: CPU, cores, versions, threads, load."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count()
    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "cpu": _cpu_model(),
        "cpus": cpus,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "ember": getattr(modules["ember"], "__version__", "?"),
        "git_commit": _git_commit(),
        "load_avg_start": _load(),
        # NumPy's OpenBLAS chooses its GEMM kernels by CPU unless this pins them; on AVX-512
        # machines a pin to an AVX2 core type halves every matmul and convolution
        "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
    }
    if "torch" in modules:
        torch = modules["torch"]
        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
    return info


def busy_note(info):
    """A warning when the machine was loaded when the run started or ended, else ''."""
    cpus = info.get("cpus") or 1
    worst = max((l[0] for l in (info.get("load_avg_start"), info.get("load_avg_end")) if l),
                default=0.0)
    # this process keeps about one core busy itself
    if worst > cpus:
        return (f"machine busy: 1-minute load average {worst:.2f} on {cpus} CPUs; "
                "ratios may be off, re-run on a quiet machine")
    return ""


def fmt_time(ns):
    if ns is None:
        return "—"
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.2f} µs"
    if ns < 1e9:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.2f} s"


def fmt_ratio(r):
    return "—" if r is None or not math.isfinite(r) else f"{r:.2f}x"


def fmt_rss(row):
    """``ember / torch`` peak RSS in MiB, or an em dash for rows without memory figures."""
    if row.ember_peak_rss is None and row.torch_peak_rss is None:
        return "—"
    return " / ".join("?" if b is None else f"{b / 2**20:.0f}"
                      for b in (row.ember_peak_rss, row.torch_peak_rss)) + " MiB"


HEADER = ("workload", "ember", "torch", "ember/torch", "(thread CPU)", "peak RSS ember / torch",
          "note")


def _cells(row):
    return (f"{row.group}: {row.name}", fmt_time(row.ember_ns), fmt_time(row.torch_ns),
            fmt_ratio(row.ratio), fmt_ratio(row.cpu_ratio), fmt_rss(row), row.note)


def text_table(rows):
    """An aligned plain-text table for the terminal."""
    lines = [HEADER] + [_cells(r) for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER) - 1)]
    out = []
    for k, line in enumerate(lines):
        cells = [line[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(line[1:-1], widths[1:])]
        out.append("  ".join(cells + [line[-1]]).rstrip())
        if k == 0:
            out.append("  ".join("-" * w for w in widths) + "  ----")
    return "\n".join(out)


def markdown(rows, info, settings):
    """The report as Markdown: machine, settings, table."""
    lines = [
        "# ember vs PyTorch benchmark",
        "",
        f"- date: {info['date']}",
        f"- machine: {info['cpu']}, {info['cpus']} CPUs, {info['platform']}",
        f"- versions: Python {info['python']}, NumPy {info['numpy']}, ember {info['ember']}"
        f" (commit {info['git_commit'] or '?'}), PyTorch {info.get('torch', 'not installed')}"
        f" ({info.get('torch_threads', '?')} threads)",
        "- NumPy's BLAS kernels: "
        + (f"pinned by OPENBLAS_CORETYPE={info['openblas_coretype']}"
           if info.get("openblas_coretype") else "OpenBLAS's own choice for this CPU"),
        f"- load average (1, 5, 15 min) at start: {_fmt_load(info.get('load_avg_start'))}, "
        f"at end: {_fmt_load(info.get('load_avg_end'))}",
        f"- timing: median of {settings['samples']} samples, each ≥ "
        f"{settings['min_sample_s'] * 1e3:g} ms of calls, frameworks alternating"
        + (" (quick smoke run: not for comparison)" if settings.get("quick") else ""),
    ]
    if settings.get("memory"):
        lines.append("- peak RSS: resident memory a training workload adds over its framework's "
                     "import (setup and 3 steps), each framework in a fresh process")
    note = busy_note(info)
    if note:
        lines.append(f"- **{note}**")
    lines += ["", "| " + " | ".join(HEADER) + " |", "|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        cells = [c.replace("|", "\\|") for c in _cells(r)]
        cells[0] = f"`{cells[0]}`"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _fmt_load(load):
    return "?" if not load else ", ".join(f"{x:.2f}" for x in load)


def write_reports(rows, info, settings, out_dir: Path, stem: str):
    """Write ``<stem>.json`` and ``<stem>.md`` under ``out_dir``; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    data = {
        "machine": info,
        "settings": settings,
        "busy": busy_note(info) or None,
        "results": [
            {**dataclasses.asdict(r), "ratio": r.ratio, "cpu_ratio": r.cpu_ratio,
             "noisy": r.noisy,
             "preempted": r.preempted} for r in rows
        ],
    }
    json_path = out_dir / f"{stem}.json"
    md_path = out_dir / f"{stem}.md"
    json_path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    md_path.write_text(markdown(rows, info, settings))
    return json_path, md_path


def main(argv=None):
    """``python -m bench [GROUP ...] [--quick] [-k TEXT] [--out DIR]``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m bench", description="Time workloads in ember and PyTorch side by side.")
    parser.add_argument("groups", nargs="*", help="groups to run (default: all)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 3 short samples (numbers not for comparison)")
    parser.add_argument("-k", dest="keyword", default=None,
                        help="only workloads whose name contains this text")
    parser.add_argument("--samples", type=int, default=None, help="samples per workload (7)")
    parser.add_argument("--min-time", type=float, default=None,
                        help="minimum seconds per sample (0.02)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results",
                        help="directory for the JSON and Markdown reports")
    parser.add_argument("--list", action="store_true", help="list workloads and exit")
    parser.add_argument("--no-memory", action="store_true",
                        help="skip the peak-RSS probes of training workloads")
    args = parser.parse_args(argv)

    load_groups()
    groups = sorted({w.group for w in REGISTRY})
    unknown = [g for g in args.groups if g not in groups]
    if unknown:
        parser.error(f"unknown group(s) {', '.join(unknown)}; known: {', '.join(groups)}")
    chosen = [w for w in REGISTRY
              if (not args.groups or w.group in args.groups)
              and (args.keyword is None or args.keyword in w.name)]
    if args.list:
        for w in chosen:
            print(f"{w.group}: {w.name}")
        return 0

    settings = {
        "samples": args.samples or (3 if args.quick else 7),
        "min_sample_s": args.min_time or (0.002 if args.quick else 0.02),
        "warmup_s": 0.005 if args.quick else 0.05,
        "quick": args.quick,
        "memory": not args.no_memory,
    }
    modules = available_frameworks()
    if "torch" not in modules:
        print("PyTorch is not installed: timing ember alone, no ratios.", file=sys.stderr)
    info = machine_info(modules)
    rows = []
    for w in chosen:
        row = run_workload(w, modules, samples=settings["samples"],
                           min_sample_s=settings["min_sample_s"], warmup_s=settings["warmup_s"],
                           memory=settings["memory"])
        rows.append(row)
        print(f"  {w.group}: {w.name}: {fmt_time(row.ember_ns)} vs {fmt_time(row.torch_ns)}",
              file=sys.stderr, flush=True)
    info["load_avg_end"] = _load()

    print(text_table(rows))
    note = busy_note(info)
    if note:
        print("WARNING: " + note)
    stem = "quick" if args.quick else "latest"
    json_path, md_path = write_reports(rows, info, settings, args.out, stem)
    print(f"wrote {json_path} and {md_path}")
    return 0
