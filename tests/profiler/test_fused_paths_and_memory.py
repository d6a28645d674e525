"""The profiler watching the paths a real run takes (fused optimizer kernels, causal
attention, ``add_`` with ``alpha``), the backward ops named as PyTorch names them, and the
memory timeline's categories: compared with PyTorch where it is installed."""

import gzip
import json
import warnings

import numpy as np
import pytest

import ember
import ember._kernels as kernels
from ember.utils._python_dispatch import TorchDispatchMode

try:
    import torch
    HAS_TORCH = True
except ImportError:   # pragma: no cover
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs PyTorch")


def _numpy_adam(p, g, m, v, *, beta1, beta2, lr, weight_decay, eps, bias1, bias2_sqrt,
                decoupled, maximize):
    """The Adam step of ``ember._kernels.adam`` in NumPy (the fused kernel needs numba)."""
    if p.dtype != np.float32:
        return False
    g = -g if maximize else g
    if weight_decay:
        if decoupled:
            p *= np.float32(1 - lr * weight_decay)
        else:
            g = g + np.float32(weight_decay) * p
    m += (g - m) * np.float32(1 - beta1)
    v *= np.float32(beta2)
    v += np.float32(1 - beta2) * g * g
    p -= np.float32(lr / bias1) * m / (np.sqrt(v) / np.float32(bias2_sqrt) + np.float32(eps))
    return True


@pytest.fixture
def fused_adam(monkeypatch):
    """A CPU fused Adam kernel that always runs, whether or not numba is installed."""
    monkeypatch.setattr(kernels, "adam", _numpy_adam)


def _adam_run(lib, profiled, **kw):
    lib.manual_seed(0)
    w = lib.nn.Parameter(lib.randn(8, 8))
    opt = lib.optim.AdamW([w], lr=0.1, **kw)
    names = []
    for i in range(3):
        w.grad = lib.full((8, 8), 0.5 * (i + 1))
        if profiled and i == 2:
            with lib.profiler.profile(record_shapes=True) as prof:
                opt.step()
            names = [(e.name, e.cpu_parent.name if e.cpu_parent else None, e.input_shapes)
                     for e in prof.events()]
        else:
            opt.step()
    return w.detach(), names


def test_fused_adam_runs_under_profiler_and_is_recorded_as_one_op(fused_adam):
    plain, _ = _adam_run(ember, False, fused=True)
    profiled, events = _adam_run(ember, True, fused=True)
    assert ember.equal(plain, profiled)
    names = [n for n, _, _ in events]
    assert "aten::_fused_adamw_" in names
    assert not {"aten::lerp_", "aten::addcdiv_", "aten::addcmul_"} & set(names)
    fused = [e for e in events if e[0] == "aten::_fused_adamw_"]
    assert fused[0][1] == "Optimizer.step#AdamW.step"


@needs_torch
def test_fused_adam_event_as_torch_fused_path(fused_adam):
    _, events = _adam_run(ember, True, fused=True)
    _, t_events = _adam_run(torch, True, fused=True)
    mine = {n: (p, s) for n, p, s in events}
    theirs = {n: (p, s) for n, p, s in t_events}
    assert mine["aten::_fused_adamw_"] == theirs["aten::_fused_adamw_"]


def test_adam_loop_ops_as_torchs_when_the_kernel_declines(monkeypatch):
    # without ember's kernel (no numba) the step runs PyTorch's loop, op for op
    monkeypatch.setattr(kernels, "adam", lambda *a, **k: False)
    _, events = _adam_run(ember, True, foreach=False)
    _, t_events = _adam_run(torch, True, foreach=False) if HAS_TORCH else (None, events)
    names = [n for n, _, _ in events]
    for op in ("aten::lerp_", "aten::addcmul_", "aten::addcdiv_", "aten::sqrt", "aten::mul_"):
        assert names.count(op) == [n for n, _, _ in t_events].count(op) >= 1, op


def _sgd_step_events(lib, **kw):
    lib.manual_seed(0)
    m = lib.nn.Linear(4, 3)
    opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, **kw)
    for _ in range(2):
        m(lib.ones(2, 4)).sum().backward()
        with lib.profiler.profile(record_shapes=True) as prof:
            opt.step()
    return m.weight.detach(), [(e.name, e.cpu_parent.name if e.cpu_parent else None,
                                e.input_shapes) for e in prof.events()]


@needs_torch
def test_fused_sgd_recorded_as_torchs_one_op():
    w, events = _sgd_step_events(ember, fused=True)
    plain, _ = _sgd_step_events(ember)
    assert ember.equal(w, plain)
    _, t_events = _sgd_step_events(torch, fused=True)
    assert [e for e in events if e[0] != "Optimizer.step#SGD.step"] == \
        [e for e in t_events if e[0] == "aten::_fused_sgd_"]
    names = [n for n, _, _ in _sgd_step_events(ember, foreach=False)[1]]
    assert "aten::_fused_sgd_" not in names and "aten::add_" in names


def test_fused_adam_declines_under_a_dispatch_mode(fused_adam):
    seen = []

    class Names(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    w = ember.nn.Parameter(ember.randn(4))
    w.grad = ember.ones(4)
    opt = ember.optim.AdamW([w], lr=0.1)
    with ember.profiler.profile() as prof, Names():
        opt.step()
    # a mode that transforms ops must see them: the kernel declines, both see the ops
    assert any("lerp_" in s for s in seen)
    names = {e.name for e in prof.events()}
    assert "aten::lerp_" in names and "aten::_fused_adamw_" not in names


def test_declined_fused_kernel_leaves_no_event(monkeypatch):
    monkeypatch.setattr(kernels, "adam", lambda *a, **k: False)
    w = ember.nn.Parameter(ember.randn(4))
    w.grad = ember.ones(4)
    opt = ember.optim.Adam([w], lr=0.1)
    with ember.profiler.profile() as prof:
        opt.step()
    names = [e.name for e in prof.events()]
    assert "aten::_fused_adam_" not in names and "aten::addcdiv_" in names


def _sdpa_names(lib):
    rng = np.random.default_rng(0)
    q, k, v = (lib.tensor(rng.standard_normal((2, 4, 16, 8), dtype=np.float32),
                          requires_grad=True) for _ in range(3))
    with lib.profiler.profile() as prof:
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    with lib.profiler.profile() as bprof:
        out.sum().backward()
    return {e.name for e in prof.events()}, {e.name for e in bprof.events()}, out


@needs_torch
def test_causal_attention_records_no_mask_ops():
    fwd, bwd, out = _sdpa_names(ember)
    t_fwd, t_bwd, t_out = _sdpa_names(torch)
    assert fwd <= t_fwd
    assert "aten::_scaled_dot_product_flash_attention_for_cpu" in fwd
    assert "aten::_scaled_dot_product_flash_attention_for_cpu_backward" in bwd & t_bwd
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), atol=1e-5)


def _alpha_events(lib):
    a, b = lib.ones(4, 4), lib.full((4, 4), 2.0)
    with lib.profiler.profile(record_shapes=True) as prof:
        a.add_(b, alpha=2)
        a.sub_(b, alpha=0.5)
        c = lib.add(a, b, alpha=3)
        d = lib.sub(a, b, alpha=-1)
    return [(e.name, e.input_shapes) for e in prof.events()], a, c, d


@needs_torch
def test_alpha_add_and_sub_recorded_as_one_op():
    events, a, c, d = _alpha_events(ember)
    t_events, ta, tc, td = _alpha_events(torch)
    assert events == t_events
    for x, y in ((a, ta), (c, tc), (d, td)):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


def test_alpha_add_keeps_autograd_under_profiler():
    x = ember.ones(3, requires_grad=True)
    y = ember.ones(3, requires_grad=True)
    with ember.profiler.profile():
        (x.add(y, alpha=3)).sum().backward()
    assert y.grad.tolist() == [3.0, 3.0, 3.0] and x.grad.tolist() == [1.0, 1.0, 1.0]


def _backward_children(lib, name):
    x = lib.tensor(np.random.default_rng(0).standard_normal((4, 10), dtype=np.float32),
                   requires_grad=True)
    f = lib.nn.functional
    loss = {"gelu": lambda: f.gelu(x).sum(), "softmax": lambda: f.softmax(x, -1).sum(),
            "log_softmax": lambda: f.log_softmax(x, -1).sum(),
            "mse": lambda: f.mse_loss(x, x.detach() * 2)}[name]()
    with lib.profiler.profile() as prof:
        loss.backward()
    out = set()
    for e in prof.events():
        p = e.cpu_parent
        if p is not None and p.cpu_parent is not None and \
                p.cpu_parent.name.startswith("autograd::engine::evaluate_function: ") and \
                not p.name.startswith(("SumBackward", "torch::autograd")):
            out.add((p.name, e.name))
    return out, x.grad


@needs_torch
@pytest.mark.parametrize("name", ["gelu", "softmax", "log_softmax", "mse"])
def test_backward_ops_named_as_torch(name):
    mine, grad = _backward_children(ember, name)
    theirs, t_grad = _backward_children(torch, name)
    assert mine == theirs
    np.testing.assert_allclose(grad.numpy(), t_grad.numpy(), rtol=1e-5, atol=1e-6)


# -- the memory timeline --------------------------------------------------------------------

_COLUMNS = ["PARAMETER", "OPTIMIZER_STATE", "INPUT", "TEMPORARY", "ACTIVATION", "GRADIENT",
            "AUTOGRAD_DETAIL", "Unknown"]


def _training_profile(lib):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(64, 128), lib.nn.ReLU(), lib.nn.Linear(128, 10))
    opt = lib.optim.AdamW(model.parameters(), lr=0.1)
    x, y = lib.randn(32, 64), lib.randint(0, 10, (32,))

    def step():
        opt.zero_grad()
        lib.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    step()
    with lib.profiler.profile(profile_memory=True, record_shapes=True,
                              with_stack=True) as prof:
        step()
        step()
    return prof


def _export(prof, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        prof.export_memory_timeline(str(path))


def _timeline(prof, path):
    _export(prof, path)
    times, sizes = json.loads(path.read_text())
    return times, [dict(zip(_COLUMNS, row[1:])) for row in sizes]


@needs_torch
def test_memory_timeline_categories_match_torch(tmp_path):
    times, rows = _timeline(_training_profile(ember), tmp_path / "e.json")
    t_times, t_rows = _timeline(_training_profile(torch), tmp_path / "t.json")
    assert times == sorted(times) and len(times) == len(rows)
    # what existed before the profile is counted from its start, as PyTorch counts it
    for key in ("PARAMETER", "OPTIMIZER_STATE"):
        assert rows[0][key] == t_rows[0][key] > 0
    assert 32 * 64 * 4 <= rows[0]["INPUT"] <= t_rows[0]["INPUT"]
    assert rows[-1]["GRADIENT"] == t_rows[-1]["GRADIENT"] > 0
    for key in ("ACTIVATION", "AUTOGRAD_DETAIL", "GRADIENT"):
        assert max(r[key] for r in rows) > 0 and max(r[key] for r in t_rows) > 0
    # ember sorts every byte of this program into a category
    assert max(r["Unknown"] for r in rows) == 0
    assert all(v >= 0 for r in rows for v in r.values())
    # the backward's scratch is gone once the step is over
    assert rows[-1]["AUTOGRAD_DETAIL"] == 0 and rows[-1]["TEMPORARY"] == 0


@needs_torch
def test_memory_timeline_raw_and_gz_formats_as_torch(tmp_path):
    raws, gzs = {}, {}
    for lib in (ember, torch):
        prof = _training_profile(lib)
        _export(prof, tmp_path / f"{lib.__name__}.raw.json.gz")
        _export(prof, tmp_path / f"{lib.__name__}.json.gz")
        with gzip.open(tmp_path / f"{lib.__name__}.raw.json.gz", "rt") as f:
            raws[lib] = json.load(f)
        with gzip.open(tmp_path / f"{lib.__name__}.json.gz", "rt") as f:
            gzs[lib] = json.load(f)
    for lib in (ember, torch):
        raw = raws[lib]
        assert all(len(r) == 4 and 0 <= r[3] < len(_COLUMNS) for r in raw)
        pre = [r for r in raw if r[1] == 1]
        assert pre and all(r[0] == -1 and r[2] > 0 for r in pre)
        assert all(r[2] > 0 for r in raw if r[1] == 2)
        assert all(r[2] < 0 for r in raw if r[1] == 4)
        times, sizes = gzs[lib]
        assert len(times) == len(sizes) and len(sizes[0]) == len(_COLUMNS) + 1
    # (ember's optimizer keeps a bucket's state in one buffer, PyTorch one per parameter:
    # the same bytes in fewer arrays)
    pre_bytes = {lib: [sum(r[2] for r in raws[lib] if r[1] == 1 and r[3] == c)
                       for c in (0, 1)] for lib in raws}
    assert pre_bytes[ember] == pre_bytes[torch]


def test_memory_timeline_html(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "mem.html"
    _export(_training_profile(ember), path)
    text = path.read_text()
    assert text.startswith("<html>") and "data:image/png;base64," in text


def test_memory_timeline_temporaries_without_backward(tmp_path):
    with ember.profiler.profile(profile_memory=True) as prof:
        y = ember.ones(256) + 1
        del y
    times, rows = _timeline(prof, tmp_path / "m.json")
    assert max(r["TEMPORARY"] for r in rows) == 2 * 256 * 4
    assert rows[-1]["TEMPORARY"] == 0 and max(r["Unknown"] for r in rows) == 0
