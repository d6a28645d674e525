"""Differential test runner: ember against real PyTorch (see tests/differential/harness.py).

Usage::

    python tools/difftest.py                      # the CI sample (a few cases per op)
    python tools/difftest.py --long --minutes 20 --out report.md
    python tools/difftest.py --ops add,sum --cases 50 --out report.md
    python tools/difftest.py --case add 123456    # rerun one case, print its repro
    python tools/difftest.py --long --count 5000 --families nn,nn_top_level --json a.json
    python tools/difftest.py --replay a.json --out after.md   # the same calls again

``--long`` draws random (op, seed) cases until the time is up (or ``--count`` cases have
run), in a child process that is restarted if it dies (a crash in torch or ember then costs
one case, recorded as a crash). With a fixed ``--seed`` and ``--count`` the calls drawn are
the same every run; ``--replay`` reruns exactly the (op, seed) calls of an earlier
``--json`` file, so a mismatch rate can be compared before and after a fix.
The report groups mismatches by op and kind, each with the smallest one-line repro found;
the repros run with ``T = ember`` and with ``T = torch``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# this script's own folder is sys.path[0]: its coverage.py would shadow the coverage
# package, which numba (ember's fused kernels) imports, so every fused kernel would fail
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(
    os.path.abspath(__file__))]
sys.path.insert(0, ROOT)


def _alarm():
    from tests.differential import harness as H

    def handler(signum, frame):
        raise H.CaseTimeout()

    signal.signal(signal.SIGALRM, handler)
    return lambda s: signal.setitimer(signal.ITIMER_REAL, s)


def _record(H, outcome):
    c = outcome.case
    return {"op": c.op_id, "family": c.entry.family, "seed": c.seed, "form": c.form,
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


def worker(seed, deadline, ops, families=(), count=0, replay="", start=0):
    """Run cases until ``deadline`` (or ``count`` of them), one JSON line each after a START
    line: random ones from ``seed``, or those of the ``replay`` file from index ``start``."""
    import torch

    from tests.differential import harness as H

    try:
        # imported now, not lazily by the first fused kernel: a case's time-out landing
        # inside a slow import (a loaded machine) would leave numba half-imported, and every
        # later case of this child would fail ("module 'numba' has no attribute 'core'")
        import numba  # noqa: F401
    except ImportError:
        pass
    alarm = _alarm()
    draws = _replayed(replay, start) if replay else _draws(seed, ops, families)
    done = 0
    for i, (ent, s) in enumerate(draws, start):
        if time.time() >= deadline or (count and done >= count):
            break
        done += 1
        if ent is None:
            print(json.dumps({"skip": None, "index": i}), flush=True)
            continue
        print(json.dumps({"start": ent.id, "seed": s, "family": ent.family, "index": i}),
              flush=True)
        try:
            case = H.make_case(ent, s)
        except H.Skip:
            print(json.dumps({"skip": ent.id}), flush=True)
            continue
        out = H.run_case(case, torch, alarm,
                         lambda name: print(json.dumps({"phase": name}), flush=True))
        print(json.dumps(_record(H, out), default=str), flush=True)


def _pump(stream, q):
    for line in stream:
        q.put(line)
    q.put(None)


def run_long(minutes, seed, ops, families=(), count=0, replay=""):
    """Cases in child processes until ``minutes`` pass or ``count`` cases have been drawn
    (random from ``seed``, or the calls of the ``replay`` file); their records."""
    deadline = time.time() + 60 * minutes
    records, crashes = [], []
    if replay:
        with open(replay) as f:
            count = len(json.load(f))
    drawn = 0  # cases drawn so far (records plus skips)
    while time.time() < deadline and not (count and drawn >= count):
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--seed", str(seed),
               "--deadline", str(deadline)] + (["--ops", ",".join(ops)] if ops else []) \
            + (["--families", ",".join(families)] if families else []) \
            + (["--count", str(count - drawn)] if count else []) \
            + (["--replay", replay, "--start", str(drawn)] if replay else [])
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True)
        lines = queue.Queue()
        threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
        started = None
        heard = False
        while True:
            # a case stuck in C code (no alarm reaches it) or a run past the deadline: kill
            # (a child's first line may take minutes on a loaded machine -- importing torch and
            # ember -- which is no hang: killing it then would restart it forever)
            wait = 60.0 if heard else 900.0
            try:
                line = lines.get(timeout=max(1.0, min(wait, deadline + 30 - time.time())))
                heard = True
            except queue.Empty:
                proc.kill()
                break
            if line is None:
                break
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # library noise on stdout
            if "start" in rec:
                started = rec
                drawn += 1
            elif "phase" in rec:
                if started is not None:
                    started["phase"] = rec["phase"]
            elif "skip" in rec:
                drawn += "index" in rec  # an entry gone since the replayed run
                started = None
            else:
                records.append(rec)
                started = None
        proc.wait()
        if started is not None:
            crashes.append(started)
            why = [f"process died or hung in {started.get('phase', 'generation')} "
                   f"(rc {proc.returncode})"]
            ember_fault = started.get("phase") in ("ember", "ember_grad")
            records.append({"op": started["start"], "family": started["family"],
                            "seed": started["seed"],
                            "mismatches": [["ember_timeout"] + why] if ember_fault else [],
                            "notes": [] if ember_fault else [["torch_crash"] + why],
                            "repro": f"python tools/difftest.py --case {started['start']} "
                                     f"{started['seed']}", "size": 0})
        if not replay:
            seed += 1  # a fresh random sequence; a replay goes on after the lost case
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
    lines += ["", "## By kind (cases)", ""]
    by_kind = collections.Counter(k for r in counted for k in {k for k, _ in r["mismatches"]})
    for k in H.KINDS:
        if by_kind[k]:
            lines.append(f"- {k}: {by_kind[k]} ({100 * by_kind[k] / max(n, 1):.2f}%)")
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
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--deadline", type=float, default=0, help=argparse.SUPPRESS)
    p.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    ops = [o for o in a.ops.split(",") if o]
    families = [f for f in a.families.split(",") if f]
    if a.worker:
        worker(a.seed, a.deadline, ops, families, a.count, a.replay, a.start)
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
    t0 = time.time()
    if a.minutes is None:
        a.minutes = 10.0 if a.long and not a.count and not a.replay else 1e6
    if a.replay:
        records = run_long(a.minutes, a.seed, ops, count=0, replay=a.replay)
    elif a.long:
        records = run_long(a.minutes, a.seed, ops, families, a.count)
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
