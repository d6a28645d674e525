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

from bench.common import (REGISTRY, available_frameworks, framework_info, load_groups,
                          run_workload)

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


def machine_info(frameworks):
    """What the numbers depend on: CPU, cores, versions, threads, load.

    Args:
        frameworks: framework name -> its ``bench.common.framework_info`` (version,
            threads), from this process or from its worker.
    """
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
        "ember": frameworks["ember"]["version"],
        "git_commit": _git_commit(),
        "load_avg_start": _load(),
        # NumPy's OpenBLAS chooses its GEMM kernels by CPU unless this pins them; on AVX-512
        # machines a pin to an AVX2 core type halves every matmul and convolution
        "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
    }
    if "torch" in frameworks:
        info["torch"] = frameworks["torch"]["version"]
        info["torch_threads"] = frameworks["torch"]["threads"]
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
        f"{settings['min_sample_s'] * 1e3:g} ms of calls, frameworks alternating, "
        f"{settings.get('settle_s', 0):g} s of sleep before each sample"
        + (" (quick smoke run: not for comparison)" if settings.get("quick") else ""),
    ]
    if settings.get("same_process"):
        lines.append("- processes: both frameworks in one process (`--same-process`)")
    else:
        lines.append("- processes: each framework timed in a worker process of its own that "
                     "imports only that framework, one process driving both")
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


# ------------------------------------------------------------------------------------------------
# ``--profile``: one workload under ember.profiler


def find_workload(text, workloads):
    """The one workload whose ``group: name`` contains ``text`` (case-insensitive).

    Raises:
        LookupError: when none or several match (the message lists them).
    """
    needle = text.lower()
    found = [w for w in workloads if needle in f"{w.group}: {w.name}".lower()]
    exact = [w for w in found if needle in (w.name.lower(), w.group.lower())]
    if len(found) == 1 or len(exact) == 1:
        return (exact or found)[0]
    names = "\n  ".join(f"{w.group}: {w.name}" for w in (found or workloads))
    what = "several workloads match" if found else "no workload matches"
    raise LookupError(f"--profile {text!r}: {what}; choose one of:\n  {names}")


def _slug(text):
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")[:40]


def profile_overhead(fn, *, rounds=5, steps=2):
    """Median time per call of ``fn`` without and with ``ember.profiler`` recording.

    Rounds alternate unprofiled and profiled blocks of ``steps`` calls, so load changes hit
    both alike; a profiled block runs inside one started profile (its default settings:
    CPU activity, no shapes, memory or stacks) and excludes building the events at stop.
    Both wall-clock and process CPU time are taken: on a machine that other work shares,
    the CPU time of this process is the steadier of the two.

    Returns:
        dict: ``{"wall": (unprofiled_s, profiled_s), "cpu": (unprofiled_s, profiled_s)}``.
    """
    import time

    import ember.profiler as ep

    times = {"wall": ([], []), "cpu": ([], [])}

    def block(k, profiled):
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(steps):
            fn()
            if profiled is not None:
                profiled.step()
        times["wall"][k].append((time.perf_counter() - w0) / steps)
        times["cpu"][k].append((time.process_time() - c0) / steps)

    for _ in range(rounds):
        block(0, None)
        prof = ep.profile(activities=[ep.ProfilerActivity.CPU])
        prof.start()
        block(1, prof)
        prof.stop()
    return {k: (float(np.median(a)), float(np.median(b))) for k, (a, b) in times.items()}


def profile_workload(w, out_dir: Path, *, steps=5, top=15, record_shapes=True,
                     overhead_rounds=5):
    """Run ember's side of workload ``w`` under ``ember.profiler`` and report it.

    Writes ``trace.json`` (Chrome/Perfetto trace) and ``table.txt`` (the top ops by self
    CPU time) into a new run directory under ``out_dir``, prints the table, and, unless
    ``overhead_rounds`` is 0, prints the profiled/unprofiled time per call.

    Returns:
        (run directory, overhead ratio or None)
    """
    import time

    import ember
    import ember.profiler as ep

    fn = w.setups["ember"](ember)
    for _ in range(2):  # warm-up: first-call costs are not what a profile should show
        fn()
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = out_dir / "profile" / f"{_slug(w.name)}-{stamp}"
    run_dir.mkdir(parents=True, exist_ok=True)
    with ep.profile(activities=[ep.ProfilerActivity.CPU], record_shapes=record_shapes,
                    profile_memory=True, with_flops=True) as prof:
        for _ in range(steps):
            with ep.record_function("bench_step"):
                fn()
            prof.step()
    trace = run_dir / "trace.json"
    prof.export_chrome_trace(str(trace))
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=top)
    (run_dir / "table.txt").write_text(table + "\n")
    print(f"{w.group}: {w.name}: {steps} steps under ember.profiler")
    print(table)
    ratio = None
    if overhead_rounds:
        t0 = time.perf_counter()
        times = profile_overhead(fn, rounds=overhead_rounds)
        (plain, profiled), (cpu_plain, cpu_profiled) = times["wall"], times["cpu"]
        ratio = profiled / plain
        cpu_ratio = cpu_profiled / cpu_plain if cpu_plain > 0 else float("nan")
        print(f"profiler overhead: {profiled * 1e3:.1f} ms per step profiled vs "
              f"{plain * 1e3:.1f} ms unprofiled = {ratio:.2f}x wall, {cpu_ratio:.2f}x process "
              f"CPU (median of {overhead_rounds} alternating rounds, "
              f"{time.perf_counter() - t0:.0f} s)")
        (run_dir / "overhead.json").write_text(json.dumps(
            {"unprofiled_s": plain, "profiled_s": profiled, "ratio": ratio,
             "cpu_unprofiled_s": cpu_plain, "cpu_profiled_s": cpu_profiled,
             "cpu_ratio": cpu_ratio, "rounds": overhead_rounds, "load_avg": _load()},
            indent=2) + "\n")
    print(f"wrote {trace} (open it in https://ui.perfetto.dev or chrome://tracing) and "
          f"{run_dir / 'table.txt'}")
    return run_dir, ratio


def main(argv=None):
    """``python -m bench [GROUP ...] [--quick] [-k TEXT] [--out DIR] [--same-process]
    [--profile NAME]``."""
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
    parser.add_argument("--settle", type=float, default=0.25,
                        help="seconds of sleep before each sample, for the other framework's "
                             "spinning worker threads to go idle (0.25; 0 with --quick)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results",
                        help="directory for the JSON and Markdown reports")
    parser.add_argument("--list", action="store_true", help="list workloads and exit")
    parser.add_argument("--same-process", action="store_true",
                        help="time both frameworks in this one process, as before issue 22 "
                             "(default: each framework in a worker process of its own that "
                             "imports only that framework)")
    parser.add_argument("--no-memory", action="store_true",
                        help="skip the peak-RSS probes of training workloads")
    parser.add_argument("--profile", metavar="NAME", default=None,
                        help="run the one workload whose name contains NAME (e.g. gpt) under "
                             "ember.profiler: write a Chrome trace, print the top ops and the "
                             "profiler's overhead")
    parser.add_argument("--profile-steps", type=int, default=5,
                        help="steps recorded with --profile (5)")
    parser.add_argument("--top", type=int, default=15, help="rows of the --profile table (15)")
    parser.add_argument("--overhead-rounds", type=int, default=5,
                        help="alternating rounds timing the profiler's overhead (5; 0 skips)")
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
    if args.profile is not None:
        try:
            w = find_workload(args.profile, chosen)
        except LookupError as e:
            parser.error(str(e))
        profile_workload(w, args.out, steps=args.profile_steps, top=args.top,
                         overhead_rounds=0 if args.quick else args.overhead_rounds)
        return 0

    settings = {
        "samples": args.samples or (3 if args.quick else 7),
        "min_sample_s": args.min_time or (0.002 if args.quick else 0.02),
        "warmup_s": 0.005 if args.quick else 0.05,
        "settle_s": 0.0 if args.quick else args.settle,
        "quick": args.quick,
        "memory": not args.no_memory,
        "same_process": args.same_process,
    }
    try:
        if args.same_process:
            rows, info = _run_same_process(chosen, settings)
        else:
            rows, info = _run_in_workers(chosen, settings)
    except KeyboardInterrupt:  # the workers are gone already (WorkerPool's exit)
        print("python -m bench: interrupted", file=sys.stderr)
        return 130
    info["load_avg_end"] = _load()

    print(text_table(rows))
    note = busy_note(info)
    if note:
        print("WARNING: " + note)
    stem = "quick" if args.quick else "latest"
    json_path, md_path = write_reports(rows, info, settings, args.out, stem)
    print(f"wrote {json_path} and {md_path}")
    return 0


def _timing_args(settings):
    return {k: settings[k] for k in ("samples", "min_sample_s", "warmup_s", "settle_s",
                                     "memory")}


def _progress(row):
    print(f"  {row.group}: {row.name}: {fmt_time(row.ember_ns)} vs {fmt_time(row.torch_ns)}",
          file=sys.stderr, flush=True)


def _run_same_process(workloads, settings):
    """(rows, machine info) with both frameworks imported and timed in this process."""
    modules = available_frameworks()
    if "torch" not in modules:
        print("PyTorch is not installed: timing ember alone, no ratios.", file=sys.stderr)
    info = machine_info({name: framework_info(fw) for name, fw in modules.items()})
    rows = []
    for w in workloads:
        rows.append(run_workload(w, modules, **_timing_args(settings)))
        _progress(rows[-1])
    return rows, info


def _run_in_workers(workloads, settings):
    """(rows, machine info) with each framework in a worker process of its own; workloads
    whose setup cannot be sent to a worker run in this process, with a note. See NOTE
    [ Frameworks in separate processes ] in bench/_workers.py."""
    import importlib.util

    from bench._workers import WorkerPool, sendable

    names = ["ember"] + (["torch"] if importlib.util.find_spec("torch") is not None else [])
    if "torch" not in names:
        print("PyTorch is not installed: timing ember alone, no ratios.", file=sys.stderr)
    rows, modules = [], None
    with WorkerPool(names) as pool:
        if "ember" in pool.failed:
            raise SystemExit(f"python -m bench: {pool.failed['ember']}")
        for why in pool.failed.values():
            print(f"{why}: timing ember alone, no ratios.", file=sys.stderr)
        info = machine_info(pool.info())
        for w in workloads:
            why = sendable(w)
            if why:
                if modules is None:
                    modules = {n: fw for n, fw in available_frameworks().items()
                               if n not in pool.failed}
                row = run_workload(w, modules, **_timing_args(settings))
                row.note = "; ".join(n for n in (f"both frameworks in one process: {why}",
                                                 row.note) if n)
            else:
                row = run_workload(w, pool.workers(), **_timing_args(settings))
            rows.append(row)
            _progress(row)
    return rows, info
