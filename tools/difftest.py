"""Differential test runner: ember against real PyTorch (see tests/differential/harness.py).

Usage::

    python tools/difftest.py                      # the CI sample (a few cases per op)
    python tools/difftest.py --long --minutes 20 --out report.md
    python tools/difftest.py --ops add,sum --cases 50 --out report.md
    python tools/difftest.py --case add 123456    # rerun one case, print its repro
    python tools/difftest.py --long --count 5000 --families nn,nn_top_level --json a.json
    python tools/difftest.py --replay a.json --out after.md   # the same calls again
    python tools/difftest.py --long --count 100000 --jobs 2 --json b.json   # both CPUs

``--long`` draws random (op, seed) cases until the time is up (or ``--count`` cases have
run), in a child process that is restarted if it dies (a crash in torch or ember then costs
one case, recorded as a crash). ``--jobs N`` runs N such children side by side (default:
one per CPU), each with its own stream of draws (job ``j`` starts from ``seed + j * 10**6``;
a replay is cut into N consecutive slices). With a fixed ``--seed``, ``--jobs`` and
``--count`` the calls drawn are the same every run; ``--replay`` reruns exactly the
(op, seed) calls of an earlier ``--json`` file, so a mismatch rate can be compared before
and after a fix. The report counts mismatches by group (unary, binary, reductions, shape,
indexing, matmul, sorting, nn, creation, conversion), by family and by kind, and lists them
by op and kind, each with the smallest one-line repro found; the repros run with
``T = ember`` and with ``T = torch``.

NOTE [ Throughput of the long run ]
A case costs a few milliseconds of CPU; what made long runs slow was around the cases:
each child printed a line before every phase of every case (so that a crash could be
blamed on torch or ember), which the parent read, parsed and queued; a loaded machine
turned the wall-clock time-outs into false ``ember_timeout``s (and a restart of the child,
seconds of imports each time); torch's and the BLAS's thread pools spun against each other
and against the other jobs. Now a child tells where it is through a small shared file (one
line, rewritten in place, read by the parent only when the child died or hung) and prints
one line per case; the time-outs count the child's CPU time, not the wall clock; each child
runs its libraries on one thread and there is one child per CPU. What a case compares is
unchanged, and so are the calls drawn for a seed.
"""

from __future__ import annotations

import argparse
import collections
import json
import mmap
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# this script's own folder is sys.path[0]: its coverage.py would shadow the coverage
# package, which numba (ember's fused kernels) imports, so every fused kernel would fail
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(
    os.path.abspath(__file__))]
sys.path.insert(0, ROOT)


def _alarm(cpu=False):
    """``arm(seconds)``: a time-out raising harness.CaseTimeout (0 disarms it). ``cpu``: count
    the process's CPU time instead of the wall clock, so that a loaded machine (other jobs
    taking the CPUs) delays a case without making it time out."""
    from tests.differential import harness as H

    def handler(signum, frame):
        raise H.CaseTimeout()

    sig, timer = (signal.SIGPROF, signal.ITIMER_PROF) if cpu else \
        (signal.SIGALRM, signal.ITIMER_REAL)
    signal.signal(sig, handler)
    return lambda s: signal.setitimer(timer, s)


#: the report's groups (the issue's); an op not named here goes by its family
_GROUP_OF_FAMILY = {
    "arithmetic": "binary", "pointwise": "unary", "special": "unary", "misc": "unary",
    "reduction": "reductions", "shape": "shape", "view_copy": "shape",
    "indexing": "indexing", "linalg": "matmul", "linalg_extra": "matmul", "fft": "matmul",
    "sorting": "sorting", "nn": "nn", "nn_top_level": "nn", "creation": "creation",
}
#: ops whose point is a change of dtype or of representation
_CONVERSION = frozenset({
    "view.dtype", "view_as_real", "view_as_complex", "view_as_real_copy",
    "view_as_complex_copy", "real", "imag", "complex", "polar", "frexp", "conj",
    "conj_physical", "resolve_conj", "resolve_neg", "tensor",
})
GROUPS = ("unary", "binary", "reductions", "shape", "indexing", "matmul", "sorting", "nn",
          "creation", "conversion")


def group(H, case):
    """The report group of ``case``: its op's, except that an element-wise call with two
    operands (tensors, or a tensor and a number) counts as binary."""
    if case.op_id in _CONVERSION:
        return "conversion"
    g = _GROUP_OF_FAMILY.get(case.entry.family, "unary")
    if g == "unary":
        operands = sum(1 for _ in H._tensors((case.args, case.kwargs)))
        second = case.args[1] if len(case.args) > 1 else None
        if operands >= 2 or (isinstance(second, (int, float, complex))
                             and not isinstance(second, bool)):
            return "binary"
    return g


def _record(H, outcome):
    c = outcome.case
    return {"op": c.op_id, "family": c.entry.family, "group": group(H, c),
            "seed": c.seed, "form": c.form,
            "grad": c.grad, "dtype": c.dtype, "tags": c.tags,
            "mismatches": outcome.mismatches, "notes": outcome.notes,
            "repro": H.repro(c) if outcome.mismatches or outcome.notes else None,
            "size": H.size(c)}


def _draws(seed, ops, families):
    """The endless (entry, case seed) sequence of a long run from ``seed``."""
    import numpy as np

    from tests.differential import harness as H

    db = [e for e in H.load_db()
          if (not ops or e.id in ops) and (not families or e.family in families)]
    rng = np.random.default_rng(seed)
    while True:
        ent = db[rng.integers(len(db))]
        yield ent, int(rng.integers(2**62))


def _replayed(path, start):
    """The (entry, case seed) calls of an earlier ``--json`` file, from index ``start``."""
    from tests.differential import harness as H

    with open(path) as f:
        calls = [(r["op"], int(r["seed"])) for r in json.load(f)]
    for op, s in calls[start:]:
        try:
            ent = H.entry(op)
        except KeyError:  # an entry removed since
            ent = None
        yield ent, s


class _State:
    """Where a worker is: one JSON line rewritten in place in a small shared file, which the
    parent reads only when the worker died or hung (NOTE [ Throughput of the long run ])."""

    SIZE = 4096

    def __init__(self, path):
        self._fd = os.open(path, os.O_RDWR)
        self._map = mmap.mmap(self._fd, self.SIZE)

    def set(self, rec):
        line = json.dumps(rec).encode()[:self.SIZE - 1] + b"\n"
        self._map[:len(line)] = line

    @staticmethod
    def read(path):
        try:
            with open(path, "rb") as f:
                line = f.read(_State.SIZE).split(b"\n", 1)[0]
            return json.loads(line) if line.strip(b"\0 ") else None
        except (OSError, ValueError):
            return None


def _one_thread():
    """Run torch and the BLAS on the calling thread only (one worker per CPU instead), or on
    as many threads as an OMP_NUM_THREADS set by the caller asks (a run at the threads a
    program gets by default: ``OMP_NUM_THREADS=2 python tools/difftest.py --jobs 1 ...``)."""
    import torch

    try:
        n = max(1, int(os.environ.get("OMP_NUM_THREADS", "1")))
    except ValueError:
        n = 1
    torch.set_num_threads(n)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(n)
    except ImportError:
        pass


def worker(seed, deadline, ops, families=(), count=0, replay="", start=0, state=""):
    """Run cases until ``deadline`` (or ``count`` of them), one JSON line each: random ones
    from ``seed``, or those of the ``replay`` file from index ``start``. ``state`` names the
    file where the worker keeps the case and phase it is in."""
    import torch

    from tests.differential import harness as H

    try:
        # imported now, not lazily by the first fused kernel: a case's time-out landing
        # inside a slow import (a loaded machine) would leave numba half-imported, and every
        # later case of this child would fail ("module 'numba' has no attribute 'core'")
        import numba  # noqa: F401
    except ImportError:
        pass
    _one_thread()
    where = _State(state)
    alarm = _alarm(cpu=True)
    draws = _replayed(replay, start) if replay else _draws(seed, ops, families)
    print(json.dumps({"ready": True}), flush=True)
    done = 0
    for i, (ent, s) in enumerate(draws, start):
        if time.time() >= deadline or (count and done >= count):
            break
        done += 1
        if ent is None:
            print(json.dumps({"skip": None, "index": i}), flush=True)
            continue
        now = {"start": ent.id, "seed": s, "family": ent.family, "index": i,
               "phase": "generation"}
        where.set(now)

        def phase(name, now=now):
            now["phase"] = name
            where.set(now)

        try:
            case = H.make_case(ent, s)
        except H.Skip:
            print(json.dumps({"skip": ent.id, "index": i}), flush=True)
            continue
        out = H.run_case(case, torch, alarm, phase)
        phase("report")
        rec = _record(H, out)
        rec["index"] = i
        print(json.dumps(rec, default=str), flush=True)
        where.set({"done": i})
    where.set({})


def _pump(stream, q):
    for line in stream:
        q.put(line)
    q.put(None)


def _cpu_seconds(pid):
    """The CPU time process ``pid`` has used (user and system); None where it can't be read
    (no /proc: the watchdog then goes by the clock alone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _child_env():
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(k, "1")
    return env


def _lane(deadline, seed, ops, families, count, replay, start, records, lock):
    """One job of a long run: children, restarted after a crash, until the deadline or
    ``count`` cases (from index ``start`` of a replay); appends to ``records``."""
    fd, state = tempfile.mkstemp(prefix="difftest-state-")
    os.ftruncate(fd, _State.SIZE)
    os.close(fd)
    drawn = 0  # cases drawn so far (records plus skips)
    try:
        while time.time() < deadline and not (count and drawn >= count):
            with open(state, "r+b") as f:
                f.write(b"\0" * _State.SIZE)
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--seed", str(seed),
                   "--deadline", str(deadline), "--state", state] \
                + (["--ops", ",".join(ops)] if ops else []) \
                + (["--families", ",".join(families)] if families else []) \
                + (["--count", str(count - drawn)] if count else []) \
                + (["--replay", replay, "--start", str(start + drawn)] if replay else [])
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    text=True, env=_child_env())
            lines = queue.Queue()
            threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
            heard = False
            last = None  # the index of the last case the child answered for
            quiet_since, cpu_then = time.time(), _cpu_seconds(proc.pid)
            while True:
                # a case stuck in C code (no alarm reaches it) or a run past the deadline:
                # kill. Stuck means a minute of the child's own CPU time, or a quarter of an
                # hour of the clock, without a line: on a loaded machine a child waiting for
                # a CPU (its imports, a first call's compilations) is slow, not stuck, and
                # killing it would only restart it
                wait = 60.0 if heard else 900.0
                try:
                    line = lines.get(timeout=max(1.0, min(wait, deadline + 30 - time.time())))
                    heard = True
                    quiet_since, cpu_then = time.time(), _cpu_seconds(proc.pid)
                except queue.Empty:
                    now, cpu = time.time(), _cpu_seconds(proc.pid)
                    if now < deadline + 30 and now - quiet_since < 900 and heard and \
                            cpu is not None and cpu_then is not None and cpu - cpu_then < 60:
                        continue
                    proc.kill()
                    break
                if line is None:
                    break
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # library noise on stdout
                if "ready" in rec:
                    continue
                drawn += 1
                last = rec.get("index")
                if "skip" not in rec:
                    with lock:
                        records.append(rec)
            proc.wait()
            started = _State.read(state)
            if started and "start" in started and started["index"] != last:
                drawn += 1
                why = [f"process died or hung in {started.get('phase', 'generation')} "
                       f"(rc {proc.returncode})"]
                ember_fault = started.get("phase") in ("ember", "ember_grad")
                mismatches, notes = ([["ember_timeout"] + why], []) if ember_fault else \
                    ([], [["torch_crash"] + why])
                if ember_fault:
                    mismatches, notes = _death_judged(started, mismatches, notes)
                with lock:
                    records.append({
                        "op": started["start"], "family": started["family"],
                        "group": _GROUP_OF_FAMILY.get(started["family"], "unary"),
                        "seed": started["seed"], "index": started["index"],
                        "mismatches": mismatches, "notes": notes,
                        "repro": f"python tools/difftest.py --case {started['start']} "
                                 f"{started['seed']}", "size": 0})
            if not replay:
                seed += 1  # a fresh random sequence; a replay goes on after the lost case
    finally:
        os.unlink(state)


def _death_judged(started, mismatches, notes):
    """A child that died in ember's phase, judged by the harness's rules (a case where torch
    is known to corrupt its heap, such as CTC with a class past the end, may abort the
    process only later, in ember's phase): its (mismatches, notes)."""
    try:
        from tests.differential import harness as H

        case = H.make_case(H.entry(started["start"]), started["seed"])
        out = H._finish(case, [tuple(m) for m in mismatches], list(notes))
    except Exception:  # the harness can't rebuild the case: keep the plain record
        return mismatches, notes
    return [list(m) for m in out.mismatches], [list(n) for n in out.notes]


def run_long(minutes, seed, ops, families=(), count=0, replay="", jobs=1):
    """Cases in ``jobs`` child processes side by side until ``minutes`` pass or ``count``
    cases have been drawn (random from ``seed``, or the calls of the ``replay`` file); their
    records, in the order drawn."""
    deadline = time.time() + 60 * minutes
    records, lock = [], threading.Lock()
    if replay:
        with open(replay) as f:
            count = len(json.load(f))
    jobs = max(1, min(jobs, count) if count else jobs)
    lanes, first = [], 0
    for j in range(jobs):
        n = count // jobs + (j < count % jobs) if count else 0
        lane_seed = seed if replay else seed + j * 10**6
        lanes.append(threading.Thread(target=_lane, args=(
            deadline, lane_seed, ops, families, n, replay, first, records, lock)))
        first += n
    for t in lanes:
        t.start()
    for t in lanes:
        t.join()
    if replay:
        records.sort(key=lambda r: r.get("index", 0))
    return records


def run_sample(cases, ops):
    import torch

    from tests.differential import harness as H

    alarm = _alarm()
    records = []
    for ent in H.load_db():
        if ops and ent.id not in ops:
            continue
        for i in range(cases):
            try:
                case = H.make_case(ent, H.case_seed(ent.id, i))
            except H.Skip:
                continue
            records.append(_record(H, H.run_case(case, torch, alarm)))
    return records


def write_known(path):
    """Regenerate tests/differential/known_mismatches.py from the CI sample (one entry per
    op and kind, its reason the first mismatch's detail)."""
    import torch

    sys.path.insert(0, ROOT)
    from tests.differential import harness as H
    from tests.differential.known_mismatches import KNOWN, NO_SPECIALS_IN_CI
    from tests.differential.test_differential import CASES_PER_OP

    found = {}
    for ent in H.load_db():
        for i in range(CASES_PER_OP):
            try:
                case = H.make_case(ent, H.case_seed(ent.id, i),
                                   ent.id not in NO_SPECIALS_IN_CI)
            except H.Skip:
                continue
            for kind, detail in H.run_case(case, torch).mismatches:
                found.setdefault((ent.id, kind), detail.replace("\n", " ")[:78])
    with open(path) as f:
        head = f.read().split("KNOWN = {")[0]
    # a reason written by hand (not "open: ...") stays with its entry
    kept = {k: why for k, why in KNOWN.items() if not why.startswith("open: ")}
    body = "".join(f"    ({op!r}, {kind!r}):\n        {kept.get((op, kind), 'open: ' + why)!r},\n"
                   for (op, kind), why in sorted(found.items()))
    with open(path, "w") as f:
        f.write(head + "KNOWN = {\n" + body + "}\n")
    return len(found)


def report(records, minutes=None):
    """The markdown report of ``records``."""
    from tests.differential import harness as H

    counted = [r for r in records if r["mismatches"]]
    n = len(records)
    lines = ["# Differential run: ember vs torch", ""]
    if minutes is not None:
        lines.append(f"{minutes} minutes.")
    lines.append(f"Cases run: {n}; with a counted mismatch: {len(counted)} "
                 f"({100 * len(counted) / max(n, 1):.2f}%).")
    crashes = sum(1 for r in records if any(k == "torch_crash" for k, _ in r["notes"]))
    lines.append(f"torch crashes (not counted): {crashes}.")
    wrong = sum(1 for r in records if any(k == "torch_wrong" for k, _ in r["notes"]))
    lines.append(f"cases where torch is known wrong (harness.TORCH_WRONG, not counted): {wrong}.")
    documented = sum(1 for r in records if any(k == "documented" for k, _ in r["notes"]))
    lines.append(f"cases with a documented difference (harness.KERNEL_ORDER_OPS, MKL's SVD on "
                 f"inf; not counted): {documented}.")
    lines += ["", "## By kind (cases)", ""]
    by_kind = collections.Counter(k for r in counted for k in {k for k, _ in r["mismatches"]})
    for k in H.KINDS:
        if by_kind[k]:
            lines.append(f"- {k}: {by_kind[k]} ({100 * by_kind[k] / max(n, 1):.2f}%)")
    lines += ["", "## By group (cases with a mismatch / cases)", ""]
    grp_n = collections.Counter(r.get("group", "?") for r in records)
    grp_bad = collections.Counter(r.get("group", "?") for r in counted)
    for g in list(GROUPS) + sorted(set(grp_n) - set(GROUPS)):
        if grp_n[g]:
            lines.append(f"- {g}: {grp_bad[g]} / {grp_n[g]} "
                         f"({100 * grp_bad[g] / grp_n[g]:.1f}%)")
    lines += ["", "## By family (cases with a mismatch / cases)", ""]
    fam_n = collections.Counter(r["family"] for r in records)
    fam_bad = collections.Counter(r["family"] for r in counted)
    for f in sorted(fam_n):
        lines.append(f"- {f}: {fam_bad[f]} / {fam_n[f]} ({100 * fam_bad[f] / fam_n[f]:.1f}%)")
    groups = {}
    for r in records:
        for kind, detail in r["mismatches"] + [tuple(x) for x in r["notes"]]:
            g = groups.setdefault((r["op"], kind), {"n": 0, "best": None})
            g["n"] += 1
            if g["best"] is None or r["size"] < g["best"][0]:
                g["best"] = (r["size"], detail, r["repro"], r.get("form"), r.get("dtype"))
    lines += ["", "## Mismatches by op and kind", ""]
    for op in sorted({op for op, _ in groups}):
        lines.append(f"### {op}")
        for (o, kind), g in sorted(groups.items()):
            if o != op:
                continue
            _, detail, rep, form, dtype = g["best"]
            note = " (not counted)" if kind in H.NOT_COUNTED else ""
            lines.append(f"- **{kind}**{note} x{g['n']} [{form}, {dtype}]: {detail}")
            lines.append(f"  `{rep}`")
        lines.append("")
    return "\n".join(lines) + "\n"


def run_programs(count, seed, families=()):
    """The markdown report of ``count`` random programs per family (NOTE [ Differential
    programs ] in tests/differential/programs.py), seeds ``seed .. seed + count - 1``."""
    import torch

    from tests.differential import programs as P

    _one_thread()
    families = list(families) or list(P.FAMILIES)
    t0 = time.time()
    found = P.run(families, range(seed, seed + count), torch)
    lines = ["# Differential programs: ember vs torch", "",
             f"{count} programs per family, seeds {seed}..{seed + count - 1}, "
             f"{time.time() - t0:.0f} s.", ""]
    for fam in families:
        items = found.get(fam, [])
        kinds = collections.Counter(k for _, got in items for k, _ in got)
        counted = sum(n for k, n in kinds.items() if k in P.KINDS)
        lines.append(f"## {fam}: {counted} counted of {count}")
        lines.append("")
        for k, n in sorted(kinds.items()):
            lines.append(f"- {k}: {n}" + ("" if k in P.KINDS else " (not counted)"))
        shown = collections.Counter()
        for p, got in items:
            k, detail = got[0]
            if shown[k] >= 3:
                continue
            shown[k] += 1
            lines += ["", f"### {k} (seed {p.seed})", "", f"{detail[:300]}", "", "```python",
                      p.source, "```"]
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--long", action="store_true", help="random cases until --minutes pass")
    p.add_argument("--minutes", type=float, default=None,
                   help="time limit (default 10 for --long, none with --count / --replay)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cases", type=int, default=4, help="cases per op (sample mode)")
    p.add_argument("--ops", default="", help="comma-separated op ids (default all)")
    p.add_argument("--families", default="",
                   help="comma-separated opinfo families, e.g. nn,nn_top_level (--long)")
    p.add_argument("--count", type=int, default=0,
                   help="with --long: stop after this many cases (same seed, same calls)")
    p.add_argument("--replay", default="",
                   help="rerun the (op, seed) calls of an earlier --json file")
    p.add_argument("--out", default="", help="write the markdown report here")
    p.add_argument("--json", default="", help="write the raw records here")
    p.add_argument("--update-known", action="store_true",
                   help="rewrite tests/differential/known_mismatches.py from the CI sample")
    p.add_argument("--case", nargs=2, metavar=("OP", "SEED"), help="rerun one case")
    p.add_argument("--programs", type=int, default=0,
                   help="run this many random programs per family of "
                        "tests/differential/programs.py (seeds from --seed) instead")
    p.add_argument("--program-families", default="",
                   help="with --programs: comma-separated families (default all)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--deadline", type=float, default=0, help=argparse.SUPPRESS)
    p.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--state", default="", help=argparse.SUPPRESS)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="with --long / --replay: child processes side by side (default: "
                        "one per CPU)")
    a = p.parse_args(argv)
    ops = [o for o in a.ops.split(",") if o]
    families = [f for f in a.families.split(",") if f]
    if a.worker:
        worker(a.seed, a.deadline, ops, families, a.count, a.replay, a.start, a.state)
        return 0
    if a.update_known:
        n = write_known(os.path.join(ROOT, "tests", "differential", "known_mismatches.py"))
        print(f"{n} known mismatches written")
        return 0
    if a.case:
        import torch

        from tests.differential import harness as H

        case = H.make_case(H.entry(a.case[0]), int(a.case[1]))
        out = H.run_case(case, torch, _alarm())
        print(H.repro(case))
        for kind, detail in out.mismatches + out.notes:
            print(f"{kind}: {detail}")
        return 1 if out.mismatches else 0
    if a.programs:
        text = run_programs(a.programs, a.seed, [f for f in a.program_families.split(",")
                                                  if f])
        if a.out:
            with open(a.out, "w") as f:
                f.write(text)
            print(f"report: {a.out}")
        else:
            print(text)
        return 0
    t0 = time.time()
    if a.minutes is None:
        a.minutes = 10.0 if a.long and not a.count and not a.replay else 1e6
    if a.replay:
        records = run_long(a.minutes, a.seed, ops, count=0, replay=a.replay, jobs=a.jobs)
    elif a.long:
        records = run_long(a.minutes, a.seed, ops, families, a.count, jobs=a.jobs)
    else:
        records = run_sample(a.cases, ops)
    text = report(records, round((time.time() - t0) / 60, 1) if a.long or a.replay else None)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(records, f, default=str)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
        print(f"{len(records)} cases in {time.time() - t0:.0f}s; report: {a.out}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
