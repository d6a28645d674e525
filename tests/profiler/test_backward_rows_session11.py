"""Backward passes profiled side by side with PyTorch: the backward ops PyTorch runs as one
op (NOTE [ Backward ops ember composes ]), the ops inside ``TBackward0``, ``ViewBackward0``
and the mm formulas, and the engine's ``sum_to`` (NOTE [ Ops inside backward nodes ] in
ember/profiler/_recorder.py), compared by name, count, parent and input shapes."""

import collections
import itertools

import numpy as np
import pytest

import ember
from ember.autograd import _engine

#: PyTorch's allocation and bookkeeping ops, which ember's kernels do not run as ops
_INTERNAL = {"aten::empty", "aten::empty_strided", "aten::empty_like", "aten::as_strided",
             "aten::resolve_conj", "aten::copy_", "aten::detach", "detach", "aten::resize_",
             "aten::fill_", "aten::zero_", "aten::zeros", "aten::to", "aten::_to_copy",
             "aten::item", "aten::_local_scalar_dense", "aten::ones_like",
             "aten::new_empty_strided", "aten::lift_fresh"}


def _torch():
    return pytest.importorskip("torch")


def _node_children(lib, run):
    """``(node, child, input shapes)`` of the ops under each backward node of ``run(lib)``."""
    with lib.profiler.profile(record_shapes=True) as prof:
        run(lib)
    rows = []
    for e in prof.events():
        p = e.cpu_parent
        if p is not None and p.name.endswith("Backward0") and \
                not p.name.startswith("autograd::") and e.name not in _INTERNAL:
            rows.append((p.name, e.name, str(e.input_shapes)))
    return collections.Counter(rows)


def _cross_entropy(lib):
    lib.manual_seed(0)
    x = lib.randn(5, 4, requires_grad=True)
    lib.nn.functional.cross_entropy(x, lib.tensor([0, 1, 2, 3, 0])).backward()


def _nll_weighted(lib):
    lib.manual_seed(0)
    x = lib.randn(3, 4, 2, 2, requires_grad=True)
    lp = lib.log_softmax(x, 1)
    lib.nn.functional.nll_loss(lp, lib.tensor([[[0, 1], [2, 3]]] * 3),
                               weight=lib.tensor([1.0, 2.0, 0.5, 1.0]),
                               reduction="sum").backward()


def _gelu_softmax_mse(lib):
    lib.manual_seed(0)
    x = lib.randn(4, 3, requires_grad=True)
    y = lib.nn.functional.gelu(x).softmax(1)
    lib.nn.functional.mse_loss(y, lib.ones(4, 3)).backward()


@pytest.mark.parametrize("run", [_cross_entropy, _nll_weighted, _gelu_softmax_mse])
def test_backward_ops_as_torch(run):
    torch = _torch()
    mine, theirs = _node_children(ember, run), _node_children(torch, run)
    # (PyTorch's ``mse_loss_backward`` runs again as its ``out=`` overload inside itself)
    theirs = collections.Counter({k: n for k, n in theirs.items()
                                  if k[0] != "MseLossBackward0" or k[1] != k[0]})
    assert mine == theirs


def test_backward_op_has_no_children_and_torch_inputs():
    torch = _torch()

    def rows(lib):
        with lib.profiler.profile(record_shapes=True) as prof:
            _cross_entropy(lib)
        out = {}
        for e in prof.events():
            if e.name in ("aten::nll_loss_backward", "aten::_log_softmax_backward_data"):
                kids = [c.name for c in e.cpu_children if c.name not in _INTERNAL]
                out[e.name] = (e.input_shapes, e.concrete_inputs, kids)
        return out
    mine, theirs = rows(ember), rows(torch)
    assert mine == theirs
    assert mine["aten::nll_loss_backward"][2] == []


def _linear_step(lib):
    lib.manual_seed(0)
    m = lib.nn.Linear(8, 4)
    m(lib.randn(5, 8, requires_grad=True)).sum().backward()


def _mm_layouts(lib):
    lib.manual_seed(0)
    x = lib.randn(4, 5, requires_grad=True)
    w = lib.randn(4, 6, requires_grad=True)
    b = lib.randn(6, requires_grad=True)
    lib.mm(x.t(), w).sum().backward()
    lib.addmm(b, x.t(), w.t().t()).sum().backward()


def _views(lib):
    lib.manual_seed(0)
    w = lib.randn(16, 4, requires_grad=True)
    w.t().sum().backward()
    w.view(64).sum().backward()
    w.reshape(4, 16).sum().backward()
    (lib.randn(5, 4) * lib.randn(3, 1, 4, requires_grad=True)).sum().backward()


@pytest.mark.parametrize("run", [_linear_step, _mm_layouts, _views])
def test_ops_in_nodes_counted_as_torch(run):
    torch = _torch()

    def names(lib):
        # PyTorch's engine sums a broadcast gradient beside the node, ember inside it: the
        # rows are compared by name, count and shapes, the parent only by node
        with lib.profiler.profile(record_shapes=True) as prof:
            run(lib)
        rows = collections.Counter()
        for e in prof.events():
            p = e.cpu_parent
            if p is None or e.name in _INTERNAL or "Backward" in e.name:
                continue
            if p.name.endswith("Backward0") or \
                    p.name.startswith("autograd::engine::evaluate_function: "):
                rows[(e.name, str(e.input_shapes), str(e.concrete_inputs))] += 1
        return rows
    assert names(ember) == names(torch)


def test_linear_backward_rows_as_torch():
    """``AddmmBackward0`` of a layer transposes three times, as PyTorch's does (the weight's
    gradient is computed transposed, keeping ``weight.t()``'s layout)."""
    torch = _torch()
    mine, theirs = _node_children(ember, _linear_step), _node_children(torch, _linear_step)
    # (the bias's ``sum_to`` sits inside ember's node, beside PyTorch's: compared above)
    mine = collections.Counter({k: n for k, n in mine.items()
                                if k[1] not in ("aten::sum", "aten::view")})
    assert mine == theirs
    assert sum(n for (node, op, _), n in mine.items()
               if node == "AddmmBackward0" and op == "aten::t") == 3


def test_mm_gradients_with_column_major_operands_as_torch():
    torch = _torch()
    rng = np.random.default_rng(3)
    for ta, tb in itertools.product([False, True], repeat=2):
        a = rng.standard_normal((6, 5) if ta else (5, 6)).astype(np.float32)
        b = rng.standard_normal((7, 6) if tb else (6, 7)).astype(np.float32)
        grads = []
        for lib in (ember, torch):
            x = lib.tensor(a, requires_grad=True)
            y = lib.tensor(b, requires_grad=True)
            with lib.profiler.profile():  # (the general formula: not the fused fast path)
                lib.mm(x.t() if ta else x, y.t() if tb else y).pow(2).sum().backward()
            grads.append((x.grad.numpy(), y.grad.numpy()))
        for m, t in zip(*grads):
            np.testing.assert_allclose(m, t, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,red,weighted,ignore", [
    ((5, 4), "mean", False, None), ((5, 4), "sum", True, 2), ((5, 4), "none", True, None),
    ((4,), "mean", True, None), ((4,), "none", False, 1), ((3, 4, 2, 2), "mean", True, 0),
    ((0, 4), "sum", False, None), ((0, 4), "mean", True, None)])
def test_nll_backward_kernel_matches_formula(shape, red, weighted, ignore):
    """The one-kernel ``nll_loss`` gradient and the differentiable formula (run under
    ``create_graph``) agree element for element (up to the sign of zero)."""
    ember.manual_seed(0)
    x = ember.randn(*shape, requires_grad=True)
    c = shape[1] if len(shape) > 1 else shape[0]
    t = ember.randint(0, c, () if len(shape) == 1 else (shape[0],) + shape[2:])
    if ignore is not None and t.numel():
        t.view(-1)[0] = ignore
    kw = {"reduction": red, "weight": ember.rand(c) if weighted else None}
    if ignore is not None:
        kw["ignore_index"] = ignore
    lp = ember.log_softmax(x, 1 if len(shape) > 1 else 0)
    loss = ember.nn.functional.nll_loss(lp, t, **kw)
    g = ember.randn(loss.shape)
    fast, = ember.autograd.grad(loss, lp, g, retain_graph=True)
    formula, = ember.autograd.grad(loss, lp, g, create_graph=True)
    assert fast.shape == formula.shape
    assert np.array_equal(np.abs(fast.numpy()), np.abs(formula.detach().numpy()))


def test_nll_backward_kernel_gradient_as_torch():
    torch = _torch()
    x = np.random.default_rng(1).standard_normal((6, 5)).astype(np.float32)
    t = [0, 4, 2, -100, 1, 3]
    w = [1.0, 0.5, 2.0, 1.0, 0.25]
    grads = []
    for lib in (ember, torch):
        xx = lib.tensor(x, requires_grad=True)
        lib.nn.functional.nll_loss(xx, lib.tensor(t), weight=lib.tensor(w)).backward()
        grads.append(xx.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6, atol=1e-7)


def test_unsafe_view_backward_reshapes_as_torch():
    torch = _torch()

    def run(lib):
        lib.manual_seed(0)
        w = lib.randn(16, 4, requires_grad=True)
        w.t().reshape(64).sum().backward()
    key = ("UnsafeViewBackward0", "aten::reshape", "[[64], []]")
    assert _node_children(ember, run)[key] == _node_children(torch, run)[key] == 1


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # (NumPy's, on log(0))
def test_engine_hooks_restored_and_anomaly_still_reports():
    assert _engine.profiler_run is None
    x = ember.ones(3, requires_grad=True)
    with ember.profiler.profile():
        assert _engine.profiler_run is not None
        with pytest.warns(UserWarning, match="Anomaly"), ember.autograd.detect_anomaly():
            y = (x * 0.0).log().sum()
            with pytest.raises(RuntimeError, match="nan"):
                y.backward()
    assert _engine.profiler_run is None and _engine.profiler_hook is None


def test_formula_ops_seen_by_other_modes():
    """A mode that is not the profiler's still sees every op of a backward formula."""
    from ember.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    x = ember.randn(5, 4, requires_grad=True)
    loss = ember.nn.functional.nll_loss(x.log_softmax(1), ember.tensor([0, 1, 2, 3, 0]))
    with ember.profiler.profile() as prof, Log():
        loss.backward()
    assert any("scatter" in s for s in seen)
    names = [e.name for e in prof.events()]
    assert "aten::nll_loss_backward" in names and "aten::scatter" in names


def test_mlp_step_rows_with_shapes_as_torch():
    """Every row of a profiled training step (plain SGD loop), with its input shapes, is one
    PyTorch lists the same number of times; PyTorch's only extra rows are the transposes
    and expands its ``aten::t`` and ``aten::addmm`` run inside themselves."""
    torch = _torch()

    def rows(lib):
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(8, 16), lib.nn.ReLU(), lib.nn.Linear(16, 4))
        opt = lib.optim.SGD(m.parameters(), lr=0.1, foreach=False)
        x, y = lib.randn(5, 8), lib.tensor([0, 1, 2, 3, 0])

        def step():
            opt.zero_grad()
            lib.nn.functional.cross_entropy(m(x), y).backward()
            opt.step()
        step()
        with lib.profiler.profile(record_shapes=True) as prof:
            step()
        return collections.Counter({
            (e.key, str(e.input_shapes)): e.count
            for e in prof.key_averages(group_by_input_shape=True) if e.key not in _INTERNAL})
    mine, theirs = rows(ember), rows(torch)
    assert not mine - theirs
    assert {key for key, _ in theirs - mine} <= {"aten::transpose", "aten::expand"}
