"""Peak resident memory of one workload in one framework, measured in a fresh process.

NOTE [ Peak memory method ]
Memory cannot be measured in a process that has already run other work: memory freed
stays mapped by the C allocator (and by PyTorch's caching allocator), so whatever ran
later (the other framework, or the next workload in a timing worker) would look cheaper
than it is. Each (workload, framework) pair therefore runs in its own child process,
``python -m bench._memory FRAMEWORK NAME [MODULE]``, which imports only that framework and
the workload's module, runs a tiny training step (so that thread pools and lazily loaded
library code count as the framework's, not the workload's), records its resident set size
(RSS), runs the workload's setup and ``STEPS`` calls, and prints the peak RSS the workload
added on top of the framework's import, in bytes. On Linux the kernel's high-water mark is
reset after the imports (``/proc/self/clear_refs``), so the peak covers exactly the
workload; elsewhere the process-wide maximum (``resource.getrusage``) stands in for it.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

STEPS = 3  # the first call (dropout off, loss compared) and two ordinary steps
TIMEOUT_S = 300


def _status_kb(field):
    """A ``kB`` field of /proc/self/status, or None where there is none."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reset_peak():
    """Make the kernel's peak RSS start again from the current RSS; False where unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _rusage_peak():
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, kB elsewhere


def _warm_up(fw):
    """One tiny training step, so that thread pools and the math libraries' lazily loaded
    parts are in the baseline rather than charged to the first workload. Its products are
    just large enough (64 x 256 x 256 multiply-adds) for each framework's large-product path
    to load: oneDNN's in PyTorch, MLAS's in ember where it runs them (NOTE [ Products past a
    pinned OpenBLAS ] in ember/_kernels/_mlas.py)."""
    lin = fw.nn.Linear(256, 256)
    opt = fw.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)
    loss = lin(fw.randn(64, 256)).relu().sum()
    loss.backward()
    opt.step()


def measure_here(framework, name, module=None):
    """(baseline RSS, peak RSS) in bytes for workload ``name`` run in this process.

    ``module`` names the module that registers the workload; only that one is imported
    (every group would also bring in bench/optim_cuda.py, which imports ember, and with it
    ember's allocator tuning, into PyTorch's probe). Without it every group is loaded."""
    from bench.common import REGISTRY, load_groups

    fw = importlib.import_module(framework)
    _warm_up(fw)
    if module:
        importlib.import_module(module)
    else:
        load_groups()
    found = [w for w in REGISTRY if w.name == name]
    if not found:
        raise KeyError(f"no workload named {name!r}")
    w = found[0]
    gc.collect()
    have_reset = _reset_peak()
    base = _status_kb("VmRSS")
    fn = w.setups[framework](fw)
    for _ in range(STEPS):
        fn()
    peak = _status_kb("VmHWM") if have_reset else _rusage_peak()
    return base, peak


def peak_rss(framework, name, module=None):
    """Peak RSS (bytes) that workload ``name`` (registered by ``module``, when given) adds
    in ``framework``, from a child process; None with a reason when it could not be
    measured."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    try:
        proc = subprocess.run([sys.executable, "-m", "bench._memory", framework, name]
                              + ([module] if module else []),
                              capture_output=True, text=True, timeout=TIMEOUT_S, env=env,
                              cwd=root)
    except subprocess.TimeoutExpired:
        return None, f"memory probe timed out after {TIMEOUT_S} s"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return None, f"memory probe failed: {last[:120]}"
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if result["base"] is None or result["peak"] is None:
        return None, "no RSS figures on this platform"
    return max(result["peak"] - result["base"], 0), ""


def main(argv):
    framework, name, *module = argv
    base, peak = measure_here(framework, name, *module)
    print(json.dumps({"base": base, "peak": peak}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
