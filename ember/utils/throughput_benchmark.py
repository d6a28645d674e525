"""Throughput of a model under a serving-like load (``torch.utils.throughput_benchmark``):
several calling threads run the model on stored inputs until a shared iteration count is
reached, and the average latency per call comes back.

``ember.ThroughputBenchmark``, ``ember.BenchmarkConfig`` and ``ember.BenchmarkExecutionStats``
are the engine's classes (``torch._C``'s in torch); ``ThroughputBenchmark`` here is the
friendlier wrapper with keyword settings and printable statistics.

NOTE [ Throughput latency ]
The engine times the whole measured phase and reports ``latency_avg_ms`` as
``total_ms * num_calling_threads / num_iters``: with T threads busy in parallel, each call
took that long on average. Warm-up calls (``num_warmup_iters`` per thread) are not timed.
"""

from __future__ import annotations

import random
import threading
import time

__all__ = ["BenchmarkConfig", "BenchmarkExecutionStats", "ExecutionStats", "ThroughputBenchmark",
           "format_time"]


def format_time(time_us=None, time_ms=None, time_s=None) -> str:
    """A duration given in exactly one unit, printed in the largest unit under which it is
    at least 1 (``s``, ``ms`` or ``us``, three decimals).

    Args:
        time_us (float, optional): microseconds.
        time_ms (float, optional): milliseconds.
        time_s (float, optional): seconds.

    Returns:
        str: e.g. ``'1.500ms'``.

    Example::

        >>> from ember.utils.throughput_benchmark import format_time
        >>> format_time(time_ms=1.5), format_time(time_s=2), format_time(time_us=3)
        ('1.500ms', '2.000s', '3.000us')
    """
    if sum(t is not None for t in (time_us, time_ms, time_s)) != 1:
        raise AssertionError("Expected only one of time_us, time_ms, time_s is given.")
    if time_us is None:
        time_us = time_ms * 1e3 if time_ms is not None else time_s * 1e6
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


class BenchmarkConfig:
    """The settings of one benchmark run.

    Attributes (set them after construction): ``num_calling_threads`` (1),
    ``num_warmup_iters`` (1, per thread), ``num_iters`` (100, shared by all threads),
    ``num_worker_threads`` (1), ``profiler_output_path`` (``""``: no profile).

    Returns:
        BenchmarkConfig: the defaults.

    Example::

        >>> c = ember.BenchmarkConfig()
        >>> c.num_calling_threads, c.num_warmup_iters, c.num_iters
        (1, 1, 100)
    """

    def __init__(self):
        self.num_calling_threads = 1
        self.num_warmup_iters = 1
        self.num_iters = 100
        self.num_worker_threads = 1
        self.profiler_output_path = ""


class BenchmarkExecutionStats:
    """What a benchmark run measured: ``latency_avg_ms`` (NOTE [ Throughput latency ]) and
    ``num_iters``. Made by ``ThroughputBenchmark.benchmark`` only.

    Args:
        none: the class has no constructor.

    Returns:
        BenchmarkExecutionStats: from a run.

    Example::

        >>> bench = ember.ThroughputBenchmark(lambda x: x + 1)
        >>> bench.add_input(ember.ones(2))
        >>> cfg = ember.BenchmarkConfig()
        >>> cfg.num_iters = 5
        >>> bench.benchmark(cfg).num_iters
        5
    """

    def __init__(self, *args, **kwargs):
        raise TypeError("ember._C.BenchmarkExecutionStats: No constructor defined!")

    @classmethod
    def _make(cls, latency_avg_ms: float, num_iters: int):
        s = object.__new__(cls)
        s.latency_avg_ms = latency_avg_ms
        s.num_iters = num_iters
        return s


class _Engine:
    """The benchmark engine (``torch._C.ThroughputBenchmark``): holds a model and its inputs,
    runs one call or a timed multi-threaded run.

    Args:
        module (callable): an ``nn.Module``, a scripted module or any callable.

    Returns:
        ThroughputBenchmark: the engine, with no inputs yet.

    Example::

        >>> bench = ember.ThroughputBenchmark(ember.nn.Identity())
        >>> bench.run_once(ember.tensor([1.0]))
        tensor([1.])
    """

    def __init__(self, module):
        self._module = module
        self._inputs: list[tuple[tuple, dict]] = []

    def add_input(self, *args, **kwargs) -> None:
        """Store one set of call arguments; benchmark calls pick among the stored sets at
        random.

        Args:
            *args, **kwargs: the arguments of one call.
        """
        self._inputs.append((args, kwargs))

    def run_once(self, *args, **kwargs):
        """Call the model once with these arguments.

        Args:
            *args, **kwargs: the call's arguments.

        Returns:
            what the model returns.
        """
        return self._module(*args, **kwargs)

    def benchmark(self, config: BenchmarkConfig) -> BenchmarkExecutionStats:
        """Run the model from ``config.num_calling_threads`` threads: each warms up with
        ``config.num_warmup_iters`` calls, then all share ``config.num_iters`` timed calls.

        Args:
            config (BenchmarkConfig): the settings.

        Returns:
            BenchmarkExecutionStats: the average latency and the number of timed calls.
        """
        if not self._inputs:
            raise RuntimeError("Please provide benchmark inputs.Did you forget to call "
                               "add_input()? ")
        threads_n = max(int(config.num_calling_threads), 1)
        total = max(int(config.num_iters), 0)
        lock = threading.Lock()
        start_gate = threading.Barrier(threads_n + 1)
        remaining = [total]
        errors: list[BaseException] = []
        inputs, module = self._inputs, self._module

        def call(rng):
            args, kwargs = inputs[rng.randrange(len(inputs))]
            module(*args, **kwargs)

        def worker(seed):
            rng = random.Random(seed)
            try:
                for _ in range(int(config.num_warmup_iters)):
                    call(rng)
            except BaseException as e:  # noqa: BLE001  (re-raised in the caller)
                errors.append(e)
            start_gate.wait()
            while not errors:
                with lock:
                    if remaining[0] <= 0:
                        return
                    remaining[0] -= 1
                try:
                    call(rng)
                except BaseException as e:  # noqa: BLE001
                    errors.append(e)

        workers = [threading.Thread(target=worker, args=(i,), daemon=True)
                   for i in range(threads_n)]
        for w in workers:
            w.start()
        profiler = None
        if config.profiler_output_path:
            from ..autograd.profiler import profile

            profiler = profile()
            profiler.__enter__()
        start_gate.wait()
        t0 = time.perf_counter()
        for w in workers:
            w.join()
        elapsed_ms = (time.perf_counter() - t0) * 1e3
        if profiler is not None:
            profiler.__exit__(None, None, None)
            profiler.export_chrome_trace(config.profiler_output_path)
        if errors:
            raise errors[0]
        latency = elapsed_ms * threads_n / total if total else 0.0
        return BenchmarkExecutionStats._make(latency, total)


_Engine.__name__ = _Engine.__qualname__ = "ThroughputBenchmark"


class ExecutionStats:
    """Benchmark results with the derived figures: latency, iterations, iterations per
    second and total time; ``str()`` prints them.

    Args:
        c_stats (BenchmarkExecutionStats): the engine's result.
        benchmark_config (BenchmarkConfig): the settings of the run.

    Returns:
        ExecutionStats: the results.

    Example::

        >>> from ember.utils.throughput_benchmark import ThroughputBenchmark
        >>> bench = ThroughputBenchmark(lambda x: x)
        >>> bench.add_input(1)
        >>> bench.benchmark(num_iters=4).num_iters
        4
    """

    def __init__(self, c_stats, benchmark_config) -> None:
        self._c_stats = c_stats
        self.benchmark_config = benchmark_config

    @property
    def latency_avg_ms(self) -> float:
        """Average latency of one call in milliseconds."""
        return self._c_stats.latency_avg_ms

    @property
    def num_iters(self) -> int:
        """The number of timed calls."""
        return self._c_stats.num_iters

    @property
    def total_time_seconds(self) -> float:
        """The wall time of the timed phase."""
        return self.num_iters * (self.latency_avg_ms / 1000.0) / \
            self.benchmark_config.num_calling_threads

    @property
    def iters_per_second(self) -> float:
        """Calls per second across all threads."""
        return self.num_iters / self.total_time_seconds

    def __str__(self) -> str:
        return "\n".join([
            "Average latency per example: " + format_time(time_ms=self.latency_avg_ms),
            f"Total number of iterations: {self.num_iters}",
            "Total number of iterations per second (across all threads): "
            f"{self.iters_per_second:.2f}",
            "Total time: " + format_time(time_s=self.total_time_seconds)])


class ThroughputBenchmark:
    """Measure a model's throughput under a serving-like load: store inputs with
    ``add_input``, then ``benchmark(num_calling_threads=..., num_iters=...)``.

    Args:
        module (callable): an ``nn.Module``, a scripted module or any callable.

    Returns:
        ThroughputBenchmark: the benchmark, with no inputs yet.

    Example::

        >>> from ember.utils import ThroughputBenchmark
        >>> bench = ThroughputBenchmark(ember.nn.Linear(3, 2))
        >>> bench.add_input(ember.ones(1, 3))
        >>> stats = bench.benchmark(num_calling_threads=2, num_warmup_iters=1, num_iters=6)
        >>> stats.num_iters, stats.latency_avg_ms > 0
        (6, True)
    """

    def __init__(self, module) -> None:
        self._benchmark = _Engine(module)

    def run_once(self, *args, **kwargs):
        """Call the model once with these arguments and return its result."""
        return self._benchmark.run_once(*args, **kwargs)

    def add_input(self, *args, **kwargs) -> None:
        """Store one set of call arguments for the benchmark to draw from."""
        self._benchmark.add_input(*args, **kwargs)

    def benchmark(self, num_calling_threads: int = 1, num_warmup_iters: int = 10,
                  num_iters: int = 100, profiler_output_path: str = "") -> ExecutionStats:
        """Run the benchmark.

        Args:
            num_calling_threads (int): threads calling the model at once.
            num_warmup_iters (int): untimed calls per thread first.
            num_iters (int): timed calls, shared by all threads.
            profiler_output_path (str): when given, profile the timed phase and write a
                Chrome trace there.

        Returns:
            ExecutionStats: the measured figures.
        """
        config = BenchmarkConfig()
        config.num_calling_threads = num_calling_threads
        config.num_warmup_iters = num_warmup_iters
        config.num_iters = num_iters
        config.profiler_output_path = profiler_output_path
        return ExecutionStats(self._benchmark.benchmark(config), config)
