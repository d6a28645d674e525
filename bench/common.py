"""The benchmark harness: workload registry, timing, result tables.

A *workload* is a name, a group and a setup function. The setup receives a framework module
(``ember`` or ``torch``: the same code runs on both, as ``import ember as torch`` promises) and
returns a zero-argument callable, the thing timed. A workload may give a separate setup per
framework, and a check that compares the two frameworks' results before anything is timed.

NOTE [ Timing method ]
- Each framework runs in a worker process of its own that imports only that framework, as a
  user runs it (NOTE [ Frameworks in separate processes ] in bench/_workers.py); this
  process drives both workers, so they see the same machine state. ``--same-process``
  runs both frameworks here instead, as the benchmark did before.
- Each callable is warmed up, then an inner loop count is calibrated so that one *sample*
  (the loop, timed with ``time.perf_counter_ns``) lasts at least ``min_sample_s``; the time
  per call is the sample divided by the count. The loop's own cost (~30 ns a call) is in
  both frameworks' numbers alike.
- Samples alternate between the frameworks (ember, torch, ember, torch, ...), so a slow
  phase of the machine hits both rather than one.
- Before each sample the coordinator sleeps ``settle_s`` (0.25 s): both frameworks' thread pools
  keep their workers spinning for a while after parallel work (PyTorch's OpenMP workers
  50-200 ms, OpenBLAS's 0.12 s, measured on the 2-CPU EPYC), and a sample started while the
  other framework's workers still spin finds one core taken: a two-thread 3x3 convolution of
  (64, 32, 26, 26) took 10.2-11.5 ms right after PyTorch's and 7.7-8.1 ms 0.2 s later. A
  user runs one framework, so neither should pay for the other's idle spinning.
- The reported figure is the median over samples; the spread is the interquartile range
  over the median. A spread above ``NOISY_SPREAD`` or a load average above the number of
  CPUs at start marks the row or the run as noisy: re-run before trusting that ratio.
- Each sample also records the CPU time of the timing thread: when it is well below the wall
  time (``cpu_share`` under ``MIN_CPU_SHARE``) the process was descheduled during the sample,
  direct evidence that other work competed for the CPU; the row is flagged. The ratio of
  thread CPU times per call is reported beside the wall-clock ratio: for single-threaded
  work (per-op overhead) it is far less disturbed by a loaded machine than wall time (caches
  and shared cores still disturb it). For multi-threaded kernels such as matmul it counts
  only the calling thread: ignore it there.
- The garbage collector stays on (it is part of what a user pays for per-op objects) and
  is run before each sample so every sample starts alike.
"""

from __future__ import annotations

import dataclasses
import gc
import importlib
import statistics
import time
from collections.abc import Callable

import numpy as np

FRAMEWORKS = ("ember", "torch")
NOISY_SPREAD = 0.10  # interquartile range / median above this flags a row as noisy
MIN_CPU_SHARE = 0.90  # thread CPU time / wall time below this flags a row as preempted


# ------------------------------------------------------------------------------------------------
# registry


@dataclasses.dataclass
class Workload:
    """One timed thing. ``setups`` maps a framework name to ``setup(fw) -> callable``;
    ``check(ember_result, torch_result)`` raises AssertionError when the two differ."""

    group: str
    name: str
    setups: dict
    check: Callable | None = None
    note: str = ""
    memory: bool = False  # also measure peak RSS per framework (NOTE [ Peak memory method ])


REGISTRY: list[Workload] = []


def workload(group, name, *, check="values", rtol=1e-5, atol=1e-6, note="", memory=False,
             **per_framework):
    """Register the decorated ``setup(fw)`` as workload ``name`` in ``group``.

    Args:
        check: ``"values"`` (default) compares the results of one call in each framework
            with ``rtol``/``atol``; a callable ``check(ember_result, torch_result)`` does its
            own comparison; None skips the check.
        note: shown next to the result.
        memory: also report the peak resident memory the workload adds in each framework,
            measured in a child process per framework (see bench/_memory.py).
        per_framework: ``torch=setup`` (or ``ember=setup``) overrides the decorated setup
            for that framework.

    Example::

        @workload("ops", "a + b")
        def add(fw):
            a, b = tensors(fw, rand(10), rand(10))
            return lambda: a + b
    """

    def register(setup):
        setups = {fw: per_framework.get(fw, setup) for fw in FRAMEWORKS}
        chk = check
        if check == "values":
            chk = lambda e, t: assert_same(e, t, rtol=rtol, atol=atol)
        REGISTRY.append(Workload(group, name, setups, chk, note, memory))
        return setup

    return register


def load_groups():
    """Import every workload module of the ``bench`` package (each registers its workloads)."""
    import pkgutil

    import bench

    for info in pkgutil.iter_modules(bench.__path__):
        if info.name not in ("common", "run", "__main__") and not info.name.startswith("_"):
            importlib.import_module(f"bench.{info.name}")


# ------------------------------------------------------------------------------------------------
# helpers for workloads


def rand(*shape, seed=0, dtype=np.float32):
    """Standard-normal NumPy data, the same in every run and for both frameworks."""
    return np.random.default_rng(seed + 7919 * len(shape)).standard_normal(shape).astype(dtype)


def tensors(fw, *arrays):
    """``fw`` tensors holding copies of ``arrays`` (so frameworks never share buffers)."""
    return tuple(fw.from_numpy(np.array(a, copy=True)) for a in arrays)


def to_numpy(x):
    """A framework's result as a NumPy array (tensors, Python numbers, tuples of them)."""
    if isinstance(x, (tuple, list)):
        return [to_numpy(v) for v in x]
    if hasattr(x, "detach"):
        x = x.detach()
    if hasattr(x, "numpy"):
        return np.asarray(x.numpy())
    return np.asarray(x)


class Values(np.ndarray):
    """A tensor's numbers as a NumPy array that also keeps the autograd facts a check may
    compare (``requires_grad``, and ``grad_fn``: the name of the node's type or None), so a
    check written for tensors also works on results sent back by a worker process."""

    requires_grad = False
    grad_fn = None

    def __array_finalize__(self, obj):
        self.requires_grad = getattr(obj, "requires_grad", False)
        self.grad_fn = getattr(obj, "grad_fn", None)

    def __reduce__(self):
        rebuild, args, state = super().__reduce__()
        return rebuild, args, (state, self.requires_grad, self.grad_fn)

    def __setstate__(self, state):
        base, self.requires_grad, self.grad_fn = state
        super().__setstate__(base)


def result_values(x):
    """A framework's result as plain data a worker can send back: ``to_numpy``'s arrays,
    with tensors' arrays as ``Values`` that keep ``requires_grad`` and ``grad_fn``.

    Args:
        x: a tensor, a Python number, or a tuple or list of them.

    Returns:
        ``Values`` for a tensor, a NumPy array for a number, a list for a tuple or list.

    Example::

        >>> import ember
        >>> v = result_values(ember.ones(2, requires_grad=True) * 2)
        >>> v.tolist(), v.requires_grad, v.grad_fn
        ([2.0, 2.0], True, 'MulBackward0')
    """
    if isinstance(x, (tuple, list)):
        return [result_values(v) for v in x]
    values = to_numpy(x)
    if hasattr(x, "requires_grad"):
        values = values.view(Values)
        values.requires_grad = bool(x.requires_grad)
        values.grad_fn = None if x.grad_fn is None else type(x.grad_fn).__name__
    return values


def assert_same(e, t, rtol=1e-5, atol=1e-6):
    """Raise AssertionError unless ember's ``e`` and torch's ``t`` hold the same numbers."""
    e, t = to_numpy(e), to_numpy(t)
    if isinstance(e, list):
        assert isinstance(t, list) and len(e) == len(t), "different numbers of results"
        for a, b in zip(e, t):
            assert_same(a, b, rtol, atol)
        return
    assert e.shape == t.shape, f"shapes differ: ember {e.shape}, torch {t.shape}"
    assert e.dtype == t.dtype, f"dtypes differ: ember {e.dtype}, torch {t.dtype}"
    np.testing.assert_allclose(e, t, rtol=rtol, atol=atol)


# ------------------------------------------------------------------------------------------------
# timing


@dataclasses.dataclass
class Timing:
    """Per-call times (ns) of one callable, and the share of each sample's wall time the
    timing thread spent on a CPU: one entry per sample."""

    per_call_ns: list
    cpu_per_call_ns: list
    cpu_share: list
    inner: int

    @property
    def median(self):
        return statistics.median(self.per_call_ns)

    @property
    def spread(self):
        """Interquartile range over median (0 with fewer than 4 samples)."""
        if len(self.per_call_ns) < 4:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.per_call_ns, n=4)
        return (q3 - q1) / self.median


def _run_loop(fn, n):
    """(wall ns, thread CPU ns) of ``n`` calls of ``fn``."""
    gc.collect()
    c0 = time.thread_time_ns()
    t0 = time.perf_counter_ns()
    for _ in range(n):
        fn()
    t1 = time.perf_counter_ns()
    return t1 - t0, time.thread_time_ns() - c0


def calibrate(fn, min_sample_s):
    """The inner loop count that makes one sample last at least ``min_sample_s``."""
    target = min_sample_s * 1e9
    n = 1
    while True:
        elapsed = _run_loop(fn, n)[0]
        if elapsed >= target:
            return n
        # aim 20% past the target from the rate seen, at least doubling while very fast
        guess = int(n * target * 1.2 / max(elapsed, 1))
        n = max(2 * n, guess) if elapsed < target / 10 else max(n + 1, guess)


class InProcess:
    """A callable timed in this process: the same ``prepare``/``sample`` steps as a worker
    (bench/_workers.py ``Worker``), so ``measure`` drives both alike."""

    def __init__(self, fn):
        self.fn = fn

    def prepare(self, warmup_s, min_sample_s):
        """Warm up for ``warmup_s`` seconds; return the calibrated loop count."""
        deadline = time.perf_counter() + warmup_s
        self.fn()
        while time.perf_counter() < deadline:
            self.fn()
        return calibrate(self.fn, min_sample_s)

    def sample(self, n):
        """(wall ns, thread CPU ns) of ``n`` calls."""
        return _run_loop(self.fn, n)


def measure(fns: dict, *, samples=7, min_sample_s=0.02, warmup_s=0.05, settle_s=0.0):
    """Time each entry of ``fns`` (framework -> callable, or a ``Worker`` holding a set-up
    workload), alternating their samples, each after ``settle_s`` seconds of sleep.

    Returns:
        framework -> Timing. See NOTE [ Timing method ].
    """
    timers = {name: fn if hasattr(fn, "sample") else InProcess(fn) for name, fn in fns.items()}
    inner = {name: timer.prepare(warmup_s, min_sample_s) for name, timer in timers.items()}
    results = {name: Timing([], [], [], inner[name]) for name in fns}
    for _ in range(samples):
        for name, timer in timers.items():
            n = inner[name]
            if settle_s:
                time.sleep(settle_s)
            wall, cpu = timer.sample(n)
            results[name].per_call_ns.append(wall / n)
            results[name].cpu_per_call_ns.append(cpu / n)
            results[name].cpu_share.append(cpu / max(wall, 1))
    return results


# ------------------------------------------------------------------------------------------------
# running workloads


@dataclasses.dataclass
class Row:
    group: str
    name: str
    ember_ns: float | None = None
    torch_ns: float | None = None
    ember_spread: float | None = None
    torch_spread: float | None = None
    ember_inner: int | None = None
    torch_inner: int | None = None
    ember_cpu_ns: float | None = None
    torch_cpu_ns: float | None = None
    ember_cpu_share: float | None = None
    torch_cpu_share: float | None = None
    ember_samples_ns: list | None = None
    torch_samples_ns: list | None = None
    ember_peak_rss: int | None = None  # bytes the workload added at peak, see bench/_memory.py
    torch_peak_rss: int | None = None
    samples: int = 0
    status: str = "ok"  # ok | skipped | mismatch
    note: str = ""

    @property
    def ratio(self):
        if self.ember_ns is None or self.torch_ns is None:
            return None
        return self.ember_ns / self.torch_ns

    @property
    def cpu_ratio(self):
        if self.ember_cpu_ns is None or self.torch_cpu_ns is None:
            return None
        return self.ember_cpu_ns / max(self.torch_cpu_ns, 1e-9)

    @property
    def noisy(self):
        return any(s is not None and s > NOISY_SPREAD
                   for s in (self.ember_spread, self.torch_spread))

    @property
    def preempted(self):
        return any(s is not None and s < MIN_CPU_SHARE
                   for s in (self.ember_cpu_share, self.torch_cpu_share))


def _describe(exc):
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first[:120]}"


def run_workload(w: Workload, modules: dict, *, samples, min_sample_s, warmup_s,
                 memory=True, settle_s=0.0) -> Row:
    """Set up, check and time one workload in every available framework, and for workloads
    registered with ``memory=True`` (when ``memory`` is on) measure their peak RSS.

    Args:
        w: the workload.
        modules: framework name -> its module (both timed in this process) or a
            ``bench._workers.Worker`` (each timed in its own process; see NOTE [ Frameworks
            in separate processes ]). The rest are ``measure``'s settings.

    Returns:
        The row of the report. A framework whose setup or first call raises (or whose
        worker dies) is left out of the row with a note, and the other is still timed, so
        one missing feature never stops the run.
    """
    from bench._workers import WorkerDied, WorkloadFailed

    row = Row(w.group, w.name, samples=samples, note=w.note)
    fns, outputs, notes = {}, {}, []
    for name, fw in modules.items():
        try:
            if hasattr(fw, "setup"):  # a worker process: it keeps the callable
                outputs[name] = fw.setup(w.setups[name], want_output=w.check is not None)
                fns[name] = fw
            else:
                fn = w.setups[name](fw)
                outputs[name] = fn()
                fns[name] = fn
        except WorkloadFailed as exc:
            notes.append(f"{name} raised {exc}")
        except WorkerDied as exc:
            notes.append(str(exc))
        except Exception as exc:  # noqa: BLE001 -- report any failure, keep going
            notes.append(f"{name} raised {_describe(exc)}")
    if len(fns) < len(modules):
        row.status = "skipped"
    if w.check is not None and len(fns) == 2:
        try:
            w.check(outputs["ember"], outputs["torch"])
        except AssertionError as exc:
            # a ratio against a wrong answer means nothing: time torch alone
            row.status = "mismatch"
            notes.append("results differ: " + " ".join(str(exc).split())[:160])
            del fns["ember"]
    outputs.clear()
    timings = {}
    while fns:
        try:
            timings = measure(fns, samples=samples, min_sample_s=min_sample_s,
                              warmup_s=warmup_s, settle_s=settle_s)
            break
        except (WorkerDied, WorkloadFailed) as exc:  # time the survivor alone
            name = next(n for n, fw in fns.items() if fw is exc.worker)
            died = isinstance(exc, WorkerDied)
            notes.append(f"{exc} while timing" if died else f"{name} raised {exc} while timing")
            row.status = "skipped"
            del fns[name]
    # a worker drops the workload only on the normal path: after an interrupt the pool
    # ends the workers rather than wait for a sample in flight
    for fw in modules.values():
        if hasattr(fw, "release") and fw.alive:
            try:
                fw.release()
            except (WorkerDied, WorkloadFailed):
                pass
    for name, tm in timings.items():
        setattr(row, f"{name}_ns", tm.median)
        setattr(row, f"{name}_spread", tm.spread)
        setattr(row, f"{name}_inner", tm.inner)
        setattr(row, f"{name}_cpu_ns", statistics.median(tm.cpu_per_call_ns))
        setattr(row, f"{name}_cpu_share", statistics.median(tm.cpu_share))
        setattr(row, f"{name}_samples_ns", tm.per_call_ns)
    if memory and w.memory:
        from bench._memory import peak_rss

        for name in timings:
            rss, why = peak_rss(name, w.name, w.setups[name].__module__)
            setattr(row, f"{name}_peak_rss", rss)
            if why:
                notes.append(f"{name} {why}")
    if row.noisy:
        notes.append(f"noisy (spread > {NOISY_SPREAD:.0%})")
    if row.preempted:
        share = min(s for s in (row.ember_cpu_share, row.torch_cpu_share) if s is not None)
        notes.append(f"preempted (on CPU {share:.0%} of the time)")
    row.note = "; ".join(n for n in [w.note, *notes] if n)
    return row


def framework_info(fw) -> dict:
    """``{"version": ..., "threads": ...}`` of a framework module, for the report.

    Example::

        >>> import ember
        >>> sorted(framework_info(ember))
        ['threads', 'version']
    """
    get_threads = getattr(fw, "get_num_threads", None)
    return {"version": getattr(fw, "__version__", "?"),
            "threads": get_threads() if get_threads else None}


def available_frameworks():
    """name -> module for ember and, when installed, torch."""
    import ember

    modules = {"ember": ember}
    try:
        import torch
    except ImportError:
        pass
    else:
        modules["torch"] = torch
    return modules
