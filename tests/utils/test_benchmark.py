"""ember.utils.benchmark: statistics and printouts against torch.utils.benchmark on the same
recorded times (timings themselves differ), and the timing loops on tiny budgets."""

import random
import re

import numpy as np

import pytest

import ember
from ember.utils import benchmark as eb

torch = pytest.importorskip("torch")
tb = pytest.importorskip("torch.utils.benchmark")


def _specs(lib, **kw):
    return lib.TaskSpec(kw.pop("stmt", "x + 1"), kw.pop("setup", "pass"), **kw)


def _table_measurements(lib):
    rnd = random.Random(0)
    out = []
    for threads in (1, 4):
        for sub in ("float", "int"):
            for n in (1, 64, 1024):
                base = 1e-6 * n ** 0.7 * (2 if sub == "int" else 1) / threads
                times = [base * (1 + 0.3 * rnd.random()) * 100 for _ in range(9)]
                out.append(lib.Measurement(100, times, _specs(
                    lib, label="add", sub_label=sub, description=f"n={n}", num_threads=threads)))
    out.append(lib.Measurement(10, [3e-3, 3.1e-3, 2.9e-3, 5e-3], _specs(
        lib, stmt="y = f(x)\nz = y", setup="import math", label="other", description="a",
        env="A")))
    out.append(lib.Measurement(10, [3e-3], _specs(lib, stmt="f(x)", label="other",
                                                   description="b", env="A")))
    out.append(lib.Measurement(10, [1e-3, 1.2e-3], _specs(lib, stmt="f(x)", label="other",
                                                           description="b", env="BB")))
    return out


def _body(m):
    return repr(m).split("\n", 1)[1]  # past the object's address line


def test_measurement_statistics_equal_torch():
    for e, t in zip(_table_measurements(eb), _table_measurements(tb)):
        assert e.median == pytest.approx(t.median, rel=1e-12)
        assert e.mean == pytest.approx(t.mean, rel=1e-12)
        assert e.iqr == pytest.approx(t.iqr, rel=1e-9, abs=1e-18)
        assert e.significant_figures == t.significant_figures
        assert e.has_warnings == t.has_warnings
        assert e.times == t.times


def test_measurement_repr_equals_torch():
    for e, t in zip(_table_measurements(eb), _table_measurements(tb)):
        assert _body(e) == _body(t)
    # the module prints as "torch" under ember.compat (NOTE [ Printed module name ])
    assert re.match(r"<(ember|torch)\.utils\.benchmark\.utils\.common\.Measurement object "
                    r"at 0x[0-9a-f]+>\n", repr(_table_measurements(eb)[0]))


def test_compare_plain_equals_torch():
    assert str(eb.Compare(_table_measurements(eb))) == str(tb.Compare(_table_measurements(tb)))


def test_compare_trimmed_highlighted_colorized_equals_torch():
    for rowwise in (False, True):
        e, t = eb.Compare(_table_measurements(eb)), tb.Compare(_table_measurements(tb))
        for c in (e, t):
            c.trim_significant_figures()
            c.highlight_warnings()
            c.colorize(rowwise=rowwise)
        assert str(e) == str(t)


def test_compare_print_writes_the_table(capsys):
    eb.Compare(_table_measurements(eb)[:3]).print()
    assert capsys.readouterr().out.startswith("[-")


def test_compare_rejects_non_measurements():
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        eb.Compare([1])


def test_measurement_merge_pools_replicates_like_torch():
    def group(lib):
        spec = _specs(lib, label="a")
        return lib.Measurement.merge([lib.Measurement(2, [4.0, 2.0], spec),
                                      lib.Measurement(1, [1.0], spec),
                                      lib.Measurement(1, [5.0], _specs(lib, label="b"))])

    e, t = group(eb), group(tb)
    assert [m.times for m in e] == [m.times for m in t]
    assert [m.number_per_run for m in e] == [1, 1]


def test_number_helpers_equal_torch():
    for x in (3.14159, 0.000123456, 98765.4, 1.5e-7, 1e-6, 1e-3, 1.0):
        assert eb.select_unit(x) == tb.select_unit(x)
        for n in (1, 2, 3):
            assert eb.trim_sigfig(x, n) == tb.trim_sigfig(x, n)
    assert eb.unit_to_english("us") == tb.unit_to_english("us")
    assert eb.ordered_unique([3, 1, 3]) == tb.ordered_unique([3, 1, 3])
    with pytest.raises(ValueError):
        eb.select_unit(0.0)


def test_timer_blocked_autorange_measures_blocks():
    t = eb.Timer("x + 1", globals={"x": ember.ones(4)}, label="add", sub_label="4",
                 description="d")
    m = t.blocked_autorange(min_run_time=0.002)
    assert m.number_per_run >= 1 and len(m.raw_times) >= 1 and m.median > 0
    assert sum(m.raw_times) >= 0.002
    assert (m.label, m.sub_label, m.description, m.num_threads) == ("add", "4", "d", 1)


def test_timer_timeit_runs_setup_and_counts_runs():
    t = eb.Timer("y = z * 2", setup="z = torch.ones(2)")
    m = t.timeit(5)
    assert m.number_per_run == 5 and len(m.times) == 1
    assert _body(m).splitlines()[:2] == ["y = z * 2", "setup: z = torch.ones(2)"]


def test_timer_adaptive_autorange_stops_at_max_run_time():
    m = eb.Timer("pass").adaptive_autorange(threshold=0.0, min_run_time=0.001,
                                            max_run_time=0.003)
    assert 1 <= len(m.times)


def test_timer_callback_sees_each_block():
    seen = []
    m = eb.Timer("pass").blocked_autorange(callback=lambda n, t: seen.append(n),
                                           min_run_time=0.001)
    assert len(seen) == len(m.raw_times) and set(seen) == {m.number_per_run}


def test_timer_sets_num_threads_while_timing():
    seen = []
    eb.Timer("seen.append(torch.get_num_threads())", globals={"seen": seen},
             num_threads=1).timeit(2)
    assert set(seen) == {1}


def test_timer_repeat_and_autorange_point_to_blocked_autorange():
    t, ref = eb.Timer("pass"), tb.Timer("pass")
    for name in ("repeat", "autorange"):
        with pytest.raises(NotImplementedError) as e_info:
            getattr(t, name)()
        with pytest.raises(NotImplementedError) as t_info:
            getattr(ref, name)()
        assert str(e_info.value) == str(t_info.value)


def test_timer_rejects_callable_stmt_and_global_setup():
    with pytest.raises(ValueError, match="only a `str` stmt"):
        eb.Timer(lambda: None)
    with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
        eb.Timer("pass", global_setup="x = 1")


def _fuzz(lib):
    b = lib.utils.benchmark
    fz = b.Fuzzer(
        parameters=[
            b.FuzzedParameter("k0", minval=1, maxval=1024, distribution="loguniform"),
            b.FuzzedParameter("k1", minval=1, maxval=1024, distribution="loguniform"),
            b.FuzzedParameter("f", minval=0.0, maxval=1.0, distribution="uniform"),
            b.FuzzedParameter("d", minval=1, maxval=3, distribution="uniform"),
            b.FuzzedParameter("s0", minval=1, maxval=3, distribution="uniform", strict=True),
            [b.FuzzedParameter("k2", minval=1, maxval=4, distribution="uniform")],
        ],
        tensors=[b.FuzzedTensor("x", size=("k0", "k1", 8), steps=("s0", 1, 1),
                                dim_parameter="d", probability_contiguous=0.6,
                                max_elements=64 * 1024),
                 b.FuzzedTensor("y", size=("k1", "k2"), min_elements=4, dtype=lib.int32)],
        constraints=[lambda p: p["k0"] % 2 == 0],
        seed=0)
    out = []
    for tensors, props, params in fz.take(5):
        out.append((params, {k: (tuple(v.shape), v.stride()) for k, v in tensors.items()},
                    {k: (p["numel"], list(p["order"]), p["steps"], p["is_contiguous"])
                     for k, p in props.items()}))
    return out, fz.rejection_rate


def test_fuzzer_draws_equal_torch():
    assert _fuzz(ember) == _fuzz(torch)


def test_fuzzer_parameter_alias_resolves_like_torch():
    def resolve(b):
        return b.Fuzzer._resolve_aliases({"a": 3, "b": b.ParameterAlias("c"),
                                          "c": b.ParameterAlias("a")})

    assert resolve(eb) == resolve(tb) == {"a": 3, "b": 3, "c": 3}
    with pytest.raises(ValueError, match="cycle"):
        eb.Fuzzer._resolve_aliases({"a": eb.ParameterAlias("b"), "b": eb.ParameterAlias("a")})


def test_fuzzer_rejects_duplicate_names_and_bad_distributions():
    with pytest.raises(ValueError, match="Duplicate names"):
        eb.Fuzzer([eb.FuzzedParameter("x", 1, 2, "uniform")], [eb.FuzzedTensor("x", (2,))])
    with pytest.raises(AssertionError, match="Unknown distribution"):
        eb.FuzzedParameter("x", 1, 2, "normal")
    with pytest.raises(AssertionError, match="not normalized"):
        eb.FuzzedParameter("x", distribution={1: 0.5, 2: 0.2})
    assert eb.FuzzedParameter("x", distribution={7: 1.0}).sample(np.random.RandomState(0)) == 7


_SCRIPT = '''
import torch
import torch.utils.benchmark as benchmark

results = []
for n in (4, 16):
    x = torch.ones(n, n)
    for stmt, desc in (("x @ x", "matmul"), ("torch.mm(x, x)", "mm")):
        t = benchmark.Timer(stmt=stmt, globals={"x": x}, label="product",
                            sub_label=f"[{n}, {n}]", description=desc)
        results.append(t.timeit(20))
print(results[0])
benchmark.Compare(results).print()
'''

# torch 2.13's output of _SCRIPT, with numbers, units and runs of spaces normalised
_TORCH_LAYOUT = """<torch.utils.benchmark.utils.common.Measurement object at ADDR>
product: [N, N]
matmul
 N U
 N measurement, N runs , N thread
[----------- product -----------]
 | matmul | mm
N threads: ----------------------
 [N, N] | N | N
 [N, N] | N | N

Times are in UNITs (U).

"""


def _layout(text):
    # what the timings change is not layout: counts (1 measurement / 2 measurements),
    # Compare's variance marks, a measurement's variance warning, the rules' widths
    text = "\n".join(ln for ln in text.split("\n") if "WARNING" not in ln and
                     "suggests significant" not in ln and "environment" not in ln)
    text = re.sub(r"\bmeasurements\b", "measurement", text)
    text = re.sub(r" ?\(!\)|\*", "", text)
    text = re.sub(r"-{2,}", "--", text)  # rule widths follow the numbers' widths
    text = re.sub(r"0x[0-9a-f]+", "ADDR", text)
    text = re.sub(r"\b(nanosecond|microsecond|millisecond|second)s\b", "UNITs", text)
    text = re.sub(r"\b(ns|us|ms|s)\b", "U", text)
    text = re.sub(r"[0-9]+(\.[0-9]+)?", "N", text)
    return re.sub(r" +\n", "\n", re.sub(r" +", " ", text))  # (column padding too)


def test_compat_run_script_prints_torch_layout(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "bench.py"
    script.write_text(_SCRIPT)
    r = subprocess.run([sys.executable, "-m", "ember.compat.run", str(script)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert _layout(r.stdout) == _layout(_TORCH_LAYOUT)


def _sparse_fuzz(lib):
    b = lib.utils.benchmark
    fz = b.Fuzzer([b.FuzzedParameter("n", minval=2, maxval=16, distribution="uniform"),
                   b.FuzzedParameter("density", minval=0.1, maxval=0.9, distribution="uniform"),
                   b.FuzzedParameter("coalesced", minval=0, maxval=1, distribution="uniform"),
                   b.FuzzedParameter("sparse_dim", minval=1, maxval=2, distribution="uniform")],
                  [b.FuzzedSparseTensor("x", size=("n", 3), sparse_dim="sparse_dim")], seed=3)
    out = []
    for tensors, props, params in fz.take(4):
        p = dict(props["x"], shape=tuple(props["x"]["shape"]), dtype=None)
        out.append((params, p, tensors["x"].is_sparse, tensors["x"]._nnz()))
    return out


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
def test_fuzzed_sparse_tensor_properties_equal_torch():
    assert _sparse_fuzz(ember) == _sparse_fuzz(torch)
