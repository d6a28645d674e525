"""ThroughputBenchmark (``torch.utils.throughput_benchmark``), compared with torch."""

import pytest

import ember
from ember.utils.throughput_benchmark import ExecutionStats, format_time

torch = pytest.importorskip("torch")


def _counting(mod):
    calls = []

    def f(x, y=1):
        calls.append((x, y))
        return x

    return mod.ThroughputBenchmark(f), calls


def test_benchmark_call_counts_like_torch():
    counts = []
    for mod in (ember, torch._C):
        bench, calls = _counting(mod)
        bench.add_input(5, y=3)
        assert bench.run_once(7, y=2) == 7
        cfg = mod.BenchmarkConfig()
        cfg.num_iters, cfg.num_warmup_iters = 3, 2
        stats = bench.benchmark(cfg)
        counts.append((stats.num_iters, len(calls), calls[0], calls[-1]))
    assert counts[0] == counts[1]


def test_benchmark_config_defaults_like_torch():
    e, t = ember.BenchmarkConfig(), torch._C.BenchmarkConfig()
    for name in ("num_calling_threads", "num_warmup_iters", "num_iters", "num_worker_threads",
                 "profiler_output_path"):
        assert getattr(e, name) == getattr(t, name)


def test_benchmark_without_inputs_raises_runtime_error():
    with pytest.raises(RuntimeError, match="add_input"):
        torch._C.ThroughputBenchmark(lambda: 0).benchmark(torch._C.BenchmarkConfig())
    with pytest.raises(RuntimeError, match="add_input"):
        ember.ThroughputBenchmark(lambda: 0).benchmark(ember.BenchmarkConfig())


def test_execution_stats_has_no_constructor():
    with pytest.raises(TypeError):
        torch._C.BenchmarkExecutionStats()
    with pytest.raises(TypeError):
        ember.BenchmarkExecutionStats()


def test_threads_share_the_iteration_count():
    bench, calls = _counting(ember)
    bench.add_input(1)
    cfg = ember.BenchmarkConfig()
    cfg.num_calling_threads, cfg.num_warmup_iters, cfg.num_iters = 3, 2, 10
    stats = bench.benchmark(cfg)
    assert stats.num_iters == 10 and len(calls) == 3 * 2 + 10 and stats.latency_avg_ms > 0


def test_model_error_propagates():
    def bad(x):
        raise ValueError("boom")

    bench = ember.ThroughputBenchmark(bad)
    bench.add_input(1)
    with pytest.raises(ValueError, match="boom"):
        bench.benchmark(ember.BenchmarkConfig())


def test_wrapper_stats_print_like_torch():
    e = ember.utils.ThroughputBenchmark(ember.nn.Linear(3, 2))
    e.add_input(ember.ones(1, 3))
    stats = e.benchmark(num_calling_threads=2, num_warmup_iters=1, num_iters=4)
    assert isinstance(stats, ExecutionStats) and stats.num_iters == 4
    lines = str(stats).splitlines()
    assert [ln.split(":")[0] for ln in lines] == [
        "Average latency per example", "Total number of iterations",
        "Total number of iterations per second (across all threads)", "Total time"]


@pytest.mark.parametrize("kw", [{"time_us": 3}, {"time_ms": 1.5}, {"time_s": 2}, {"time_us": 2e6}])
def test_format_time_like_torch(kw):
    from torch.utils.throughput_benchmark import format_time as torch_format_time

    assert format_time(**kw) == torch_format_time(**kw)


def test_format_time_needs_one_unit():
    with pytest.raises(AssertionError):
        format_time(time_us=1, time_ms=1)
