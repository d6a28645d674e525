"""Session 33 (issue 22): per-op and per-node Python cost in training steps. Each shortcut
against the plain path it stands in for (the same node, the same bits), and against PyTorch
where installed.

- NOTE [ Recording a layer call ] in ember/autograd/_nodes.py
- NOTE [ Cross entropy's direct path ] in ember/_ops/nn_ops.py
- NOTE [ Plain concatenations ] in ember/_ops/join.py
- NOTE [ Row-ordered operands ] in ember/_ops/_memory_format.py
- NOTE [ LSTM step gradients on the arrays ] in ember/_ops/nn_rnn.py
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember
from ember._ops import nn_ops
from ember.autograd import _nodes


def _rand(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ------------------------------------------------------------------------------------------------
# recording a linear layer's call


def _node_fields(node):
    """What the engine and the accessors read off an op node, comparable across two nodes
    made from the same tensors."""
    saved = []
    for s in node._saved:
        if s is None or _nodes._is_layout_stand_in(s):
            saved.append(None if s is None else ("stand-in", s.shape, s.dtype,
                                                 s._layout_of_unsaved))
        else:
            saved.append(id(s))
    return (type(node).__name__, node._op, dict(node._params), node._next,
            list(node._meta_in), saved, list(node._vers), node._edge_order)


def _linear_inputs(needs, has_bias, dtype, x_view):
    x = ember.tensor(_rand(3, 5, dtype=dtype), requires_grad=needs[0])
    if x_view:  # a view of a tensor with history (a flatten's output)
        x = (ember.tensor(_rand(3, 1, 5, dtype=dtype), requires_grad=needs[0]) * 2).view(3, 5) \
            if needs[0] else ember.tensor(_rand(3, 1, 5, dtype=dtype)).view(3, 5)
    w = ember.tensor(_rand(4, 5, seed=1, dtype=dtype), requires_grad=needs[1])
    b = ember.tensor(_rand(4, seed=2, dtype=dtype), requires_grad=needs[2]) if has_bias else None
    return x, w, b


# (which of input, weight, bias require grad; whether there is a bias): some input does
_NEEDS = [(n, has_bias) for n in itertools.product([True, False], repeat=3)
          for has_bias in (True, False) if n[0] or n[1] or has_bias and n[2]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("needs,has_bias", _NEEDS, ids=str)
@pytest.mark.parametrize("x_view", [False, True])
def test_record_affine_makes_records_node(monkeypatch, dtype, has_bias, needs, x_view):
    # (saving as it is before any saved-tensor hooks or inference mode ran in this process:
    # those make every later save take ``record``'s slow path for good)
    monkeypatch.setattr(_nodes, "slow_save", False)
    x, w, b = _linear_inputs(needs, has_bias, dtype, x_view)
    y = ember.nn.functional.linear(x, w, b)  # linear's direct path: record_affine
    fast = y.grad_fn
    plain_out = ember.tensor(y.detach().numpy())
    _nodes.record(nn_ops.linear_op, (x, w, b), {}, plain_out)
    plain = plain_out.grad_fn
    assert _node_fields(fast) == _node_fields(plain)
    assert [type(n).__name__ for n, _ in fast.next_functions] == \
        [type(n).__name__ for n, _ in plain.next_functions]


def test_record_affine_leaves_the_slow_save_state_to_record(monkeypatch):
    monkeypatch.setattr(_nodes, "slow_save", True)
    x, w, b = _linear_inputs((True, True, True), True, np.float32, False)
    node = ember.nn.functional.linear(x, w, b).grad_fn
    assert node._vers is None
    assert [None if s is None else s.t for s in node._saved] == [x, w, None]


@pytest.mark.parametrize("has_bias", [True, False])
@pytest.mark.parametrize("needs", [(True, True, True), (False, True, True),
                                   (True, False, False)], ids=str)
def test_record_affine_backward_matches_torch(has_bias, needs):
    torch = pytest.importorskip("torch")
    grads = []
    for T in (ember, torch):
        x = T.tensor(_rand(3, 5), requires_grad=needs[0])
        w = T.tensor(_rand(4, 5, seed=1), requires_grad=needs[1])
        b = T.tensor(_rand(4, seed=2), requires_grad=needs[2]) if has_bias else None
        if not (needs[0] or needs[1] or has_bias and needs[2]):
            continue
        y = T.nn.functional.linear(x, w, b)
        y.pow(2).sum().backward()
        grads.append([None if t is None or t.grad is None else t.grad.numpy()
                      for t in (x, w, b)])
    for a, c in zip(*grads):
        assert (a is None) == (c is None)
        if a is not None:
            np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)


def test_record_affine_keeps_the_version_errors():
    torch = pytest.importorskip("torch")
    msgs = []
    for T in (ember, torch):
        x = T.tensor(_rand(3, 5), requires_grad=True)
        w = T.tensor(_rand(4, 5, seed=1), requires_grad=True)
        y = T.nn.functional.linear(x * 1, w)
        with T.no_grad():
            w.add_(1)
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
        msgs.append(str(e.value).split("Hint")[0].replace("torch.", "").replace("ember.", ""))
    assert msgs[0] == msgs[1]


def test_record_affine_leaves_saved_tensor_hooks_to_record():
    packed = []
    x = ember.tensor(_rand(3, 5), requires_grad=True)
    w = ember.tensor(_rand(4, 5, seed=1), requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t,
                                                  lambda t: t):
        y = ember.nn.functional.linear(x, w)
    assert len(packed) == 2
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.tile(_rand(3, 5).sum(0), (4, 1)), rtol=1e-6)


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
def test_record_affine_under_anomaly_mode_keeps_the_trace():
    x = ember.tensor(_rand(3, 5), requires_grad=True)
    w = ember.tensor(_rand(4, 5, seed=1), requires_grad=True)
    with ember.autograd.detect_anomaly(check_nan=False):
        y = ember.nn.functional.linear(x, w)
    assert getattr(y.grad_fn, "_trace", None) is not None


# ------------------------------------------------------------------------------------------------
# cross entropy's direct path


def _ce_run(x, t, monkeypatch=None, plain=False, **kw):
    """Loss, gradient and node of ``cross_entropy`` over arrays ``x`` and ``t``, by the
    direct path or (``plain``) by the checked one through the dispatcher."""
    if plain:
        monkeypatch.setattr(nn_ops, "_cross_entropy_direct", lambda *a: None)
        monkeypatch.setattr(nn_ops.cross_entropy_backward_op, "builtin_cpu", False)
    ex = ember.tensor(x, requires_grad=True)
    loss = ember.nn.functional.cross_entropy(ex, ember.tensor(t), **kw)
    name = loss.grad_fn.name()
    loss.backward(ember.ones_like(loss))
    if plain:
        monkeypatch.undo()
    return loss.detach().numpy(), ex.grad.numpy(), name


_CE_CASES = [
    dict(rows=1, classes=64, reduction="mean", ignore=False),
    dict(rows=7, classes=10, reduction="mean", ignore=True),
    dict(rows=7, classes=10, reduction="sum", ignore=True),
    dict(rows=5, classes=3, reduction="none", ignore=True),
    dict(rows=64, classes=1000, reduction="mean", ignore=False),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", _CE_CASES, ids=str)
def test_cross_entropy_direct_path_is_the_checked_paths_bits(monkeypatch, case, dtype):
    x = _rand(case["rows"], case["classes"], dtype=dtype) * 3
    t = np.random.default_rng(4).integers(0, case["classes"], case["rows"])
    if case["ignore"]:
        t[::3] = -100
    fast = _ce_run(x, t, reduction=case["reduction"])
    plain = _ce_run(x, t, monkeypatch, plain=True, reduction=case["reduction"])
    for f, p in zip(fast[:2], plain[:2]):
        assert f.dtype == p.dtype and f.shape == p.shape
        np.testing.assert_array_equal(f, p)
    assert fast[2] == plain[2]


def test_cross_entropy_direct_path_is_taken_for_a_training_loss(monkeypatch):
    calls = []
    real = nn_ops._ce_kernel
    monkeypatch.setattr(nn_ops, "_ce_kernel", lambda *a, **k: calls.append(1) or real(*a, **k))
    applied = []
    real_apply = nn_ops._dispatch.apply
    monkeypatch.setattr(nn_ops._dispatch, "apply",
                        lambda op, *a, **k: applied.append(op.name) or real_apply(op, *a, **k))
    x = ember.tensor(_rand(4, 5), requires_grad=True)
    ember.nn.functional.cross_entropy(x, ember.tensor([0, 1, 2, 3])).backward()
    assert calls == [1]
    assert "cross_entropy_loss" not in applied
    assert "cross_entropy_loss_backward" not in applied


@pytest.mark.parametrize("kw", [dict(), dict(reduction="sum"), dict(reduction="none"),
                                dict(ignore_index=1), dict(label_smoothing=0.1),
                                dict(weight=[1.0, 2.0, 0.5])], ids=str)
def test_cross_entropy_matches_torch(kw):
    torch = pytest.importorskip("torch")
    x = _rand(6, 3) * 2
    t = np.array([0, 1, 2, 1, 0, 1])
    res = []
    for T in (ember, torch):
        k = dict(kw)
        if "weight" in k:
            k["weight"] = T.tensor(k["weight"])
        xt = T.tensor(x, requires_grad=True)
        loss = T.nn.functional.cross_entropy(xt, T.tensor(t), **k)
        loss.backward(T.ones_like(loss))
        res.append((loss.detach().numpy(), xt.grad.numpy(), loss.grad_fn.name()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-5, atol=1e-6)
    assert res[0][2] == res[1][2]


@pytest.mark.parametrize("target", [[0, 3], [0, -1], [0, 2]], ids=str)
def test_cross_entropy_direct_path_errors_match_torch(target):
    torch = pytest.importorskip("torch")
    errs = []
    for T in (ember, torch):
        x = T.tensor(_rand(2, 3))
        tt = T.tensor(target)
        if target == [0, 2]:  # a batch that does not match
            tt = T.tensor(target + [1])
        with pytest.raises(Exception) as e:
            T.nn.functional.cross_entropy(x, tt)
        errs.append((type(e.value), str(e.value)))
    assert errs[0] == errs[1]


def test_cross_entropy_double_backward_matches_torch():
    torch = pytest.importorskip("torch")
    x = _rand(3, 4)
    t = np.array([1, 0, 3])
    res = []
    for T in (ember, torch):
        xt = T.tensor(x, requires_grad=True)
        loss = T.nn.functional.cross_entropy(xt, T.tensor(t))
        (g,) = T.autograd.grad(loss, xt, create_graph=True)
        (gg,) = T.autograd.grad((g * g).sum(), xt)
        res.append(gg.numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------------------------------------------
# plain concatenations, chunk's pieces

from ember._ops import join  # noqa: E402


def _general_cat_params(tensors, dim):
    """The params ``cat``'s general checks give (NOTE [ Plain concatenations ])."""
    seen = []
    real = join._apply
    join._apply = lambda op, inputs, params, out=None: seen.append(params)
    real_plain = join._plain_cat
    join._plain_cat = lambda *a: None
    try:
        join.cat(tensors, dim)
    finally:
        join._apply = real
        join._plain_cat = real_plain
    return seen[0]


_CAT_CASES = [
    ([(2, 3), (2, 5)], 1), ([(2, 3), (4, 3)], 0), ([(2, 3), (2, 5)], -1), ([(3,), (4,)], 0),
    ([(1, 2, 3, 4), (1, 2, 1, 4), (1, 2, 2, 4)], 2), ([(2, 0), (2, 3)], 1), ([(5, 2)], -2),
]


@pytest.mark.parametrize("shapes,dim", _CAT_CASES, ids=str)
def test_plain_cat_params_are_the_general_checks(shapes, dim):
    ts = [ember.tensor(_rand(*s, seed=i)) for i, s in enumerate(shapes)]
    assert join._plain_cat(ts, dim) == _general_cat_params(ts, dim)


@pytest.mark.parametrize("case", [
    ([np.float32, np.float64], [(2, 3), (2, 3)], 1),  # dtypes that promote
    ([np.float32, np.float32], [(0,), (3,)], 0),  # a 1-D empty tensor, skipped
    ([np.float32, np.float32], [(2, 3), (3, 3)], 1),  # sizes that disagree
    ([np.float32, np.float32], [(2, 3), (2, 3, 1)], 0),  # ranks that disagree
    ([np.float32, np.float32], [(2, 3), (2, 3)], 2),  # a dim out of range
], ids=str)
def test_plain_cat_leaves_other_calls_to_the_general_checks(case):
    dtypes, shapes, dim = case
    ts = [ember.tensor(_rand(*s, seed=i, dtype=d)) for i, (s, d) in
          enumerate(zip(shapes, dtypes))]
    assert join._plain_cat(ts, dim) is None


@pytest.mark.parametrize("shapes,dim", [([(2, 3), (4, 3)], 1), ([(2, 3), (2, 3, 1)], 0),
                                        ([(2, 3), (2, 3)], 2), ([(2, 3)], -3)], ids=str)
def test_cat_errors_match_torch(shapes, dim):
    torch = pytest.importorskip("torch")
    errs = []
    for T in (ember, torch):
        ts = [T.tensor(_rand(*s, seed=i)) for i, s in enumerate(shapes)]
        with pytest.raises(Exception) as e:
            T.cat(ts, dim)
        errs.append((type(e.value), str(e.value)))
    assert errs[0] == errs[1]


def test_plain_cat_matches_torch_with_gradients():
    torch = pytest.importorskip("torch")
    arrays = [_rand(2, 3), _rand(2, 4, seed=1), _rand(3, 2, seed=2).T]  # a transposed one
    res = []
    for T in (ember, torch):
        ts = [T.tensor(a, requires_grad=True) for a in arrays]
        y = T.cat(ts, 1)
        (y * T.arange(20.0).reshape(2, 10)).sum().backward()
        res.append((y.detach().numpy(), y.stride(), y.grad_fn.name(),
                    [t.grad.numpy() for t in ts]))
    np.testing.assert_array_equal(res[0][0], res[1][0])
    assert res[0][1:3] == res[1][1:3]
    for a, c in zip(res[0][3], res[1][3]):
        np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("n,chunks,dim", [(8, 4, 1), (7, 3, 1), (5, 5, 0), (3, 5, 0),
                                          (6, 4, -1)], ids=str)
def test_chunk_is_splits_pieces(n, chunks, dim):
    torch = pytest.importorskip("torch")
    a = _rand(n, n)
    x = ember.tensor(a, requires_grad=True)
    pieces = (x * 1).chunk(chunks, dim)
    size = -(-n // chunks)
    ref = (x * 1).split(size, dim)
    assert [p.shape for p in pieces] == [r.shape for r in ref]
    assert [p.grad_fn.name() for p in pieces] == [r.grad_fn.name() for r in ref]
    for p, r in zip(pieces, ref):
        np.testing.assert_array_equal(p.detach().numpy(), r.detach().numpy())
    sum(p.sum() * (i + 1) for i, p in enumerate(pieces)).backward()
    tx = torch.tensor(a, requires_grad=True)
    sum(p.sum() * (i + 1) for i, p in enumerate((tx * 1).chunk(chunks, dim))).backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


# ------------------------------------------------------------------------------------------------
# a one-row linear layer's bias gradient


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
def test_one_row_bias_gradient_is_the_sums_bits(dtype):
    g = np.array([[-0.0, 0.0, 1.5, np.nan, -np.inf, np.inf, 3e-8, -7.25]], dtype)
    x = ember.tensor(_rand(1, 3, dtype=dtype), requires_grad=True)
    w = ember.tensor(_rand(8, 3, seed=1, dtype=dtype), requires_grad=True)
    b = ember.tensor(_rand(8, seed=2, dtype=dtype), requires_grad=True)
    ember.nn.functional.linear(x, w, b).backward(ember.tensor(g))
    ref = ember.tensor(g).sum(0).numpy()
    assert b.grad.dtype == ember.tensor(ref).dtype and b.grad.shape == (8,)
    assert b.grad.numpy().tobytes() == ref.tobytes()


def test_one_row_bias_gradient_matches_torch():
    torch = pytest.importorskip("torch")
    g = np.array([[-0.0, 1.0, np.nan, -2.5]], np.float32)
    res = []
    for T in (ember, torch):
        x = T.zeros(1, 3, requires_grad=True)
        w = T.zeros(4, 3, requires_grad=True)
        b = T.zeros(4, requires_grad=True)
        T.nn.functional.linear(x, w, b).backward(T.tensor(g))
        res.append(b.grad.numpy())
    assert res[0].tobytes() == res[1].tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("rows,classes", [(1, 64), (7, 10), (33, 5)], ids=str)
@pytest.mark.parametrize("scale", [1.0, -3.7, 0.0, -0.0, float("nan")], ids=str)
def test_cross_entropy_backward_without_ignored_rows_is_the_general_bits(
        monkeypatch, dtype, reduction, rows, classes, scale):
    x = _rand(rows, classes, dtype=dtype) * 4
    t = np.random.default_rng(5).integers(0, classes, rows)
    grads = []
    for general in (False, True):
        if general:
            monkeypatch.setattr(nn_ops, "_EXACT_COUNT", 0)
        ex = ember.tensor(x, requires_grad=True)
        loss = ember.nn.functional.cross_entropy(ex, ember.tensor(t), reduction=reduction)
        loss.backward(ember.tensor(scale, dtype=loss.dtype))
        grads.append(ex.grad.numpy())
        monkeypatch.undo()
    assert grads[0].dtype == grads[1].dtype
    assert grads[0].tobytes() == grads[1].tobytes()


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_backward_with_a_uint8_target_matches_torch(reduction):
    torch = pytest.importorskip("torch")
    x = _rand(4, 6)
    t = np.array([0, 5, 2, 2], np.uint8)
    res = []
    for T in (ember, torch):
        xt = T.tensor(x, requires_grad=True)
        T.nn.functional.cross_entropy(xt, T.tensor(t), reduction=reduction).backward()
        res.append(xt.grad.numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------------------------------------------
# element-wise results of row-ordered operands

from ember._ops import _memory_format as mf  # noqa: E402


def _slices(shape):
    """Arrays of ``shape`` in layouts that are not contiguous: column and row slices of wider
    arrays, every other element, reversed, transposed, expanded, and contiguous ones."""
    n = int(np.prod(shape))
    base = np.arange(n, dtype=np.float32).reshape(shape)
    wide = np.arange(n * 4, dtype=np.float32).reshape(shape[:-1] + (shape[-1] * 4,))
    out = [base, wide[..., :shape[-1]], wide[..., shape[-1]:2 * shape[-1]], wide[..., ::4],
           base[::-1], np.asfortranarray(base), np.broadcast_to(np.float32(2), shape),
           np.array(3, dtype=np.float32)]
    if len(shape) >= 2:
        tall = np.arange(n * 3, dtype=np.float32).reshape((shape[0] * 3,) + shape[1:])
        out += [tall[::3], tall[shape[0]:2 * shape[0]], np.broadcast_to(base[:1], shape),
                np.broadcast_to(base[..., :1], shape)]
    return out


@pytest.mark.parametrize("shape", [(4, 64), (3, 5), (2, 3, 4), (2, 3, 4, 5), (7,), (2, 1, 3)],
                         ids=str)
def test_row_ordered_exit_matches_the_rule(shape):
    layouts = [a for a in _slices(shape) if a.shape in (shape, ())]
    for a, b in itertools.product(layouts, repeat=2):
        r = np.multiply(a, b)
        if r.shape != shape:
            continue
        fast = mf.follow(r, (a, b))
        plain = r if r.size == 0 else mf.with_strides(r, mf.result_strides(r.shape, (a, b)))
        assert fast.strides == plain.strides, (a.strides, b.strides)
        np.testing.assert_array_equal(fast, plain)
        assert (fast is r) == (plain is r)


def test_gate_slices_results_match_torch_strides():
    torch = pytest.importorskip("torch")
    a = _rand(4, 256)
    got = []
    for T in (ember, torch):
        x = T.tensor(a)
        i, f, g, o = x.chunk(4, 1)
        y = i * f + g.sigmoid() * (1 - o)
        z = x[:, ::2] * x[:, 1::2]
        got.append((y.stride(), z.stride(), y.numpy().copy(), z.numpy().copy()))
    assert got[0][:2] == got[1][:2]
    np.testing.assert_allclose(got[0][2], got[1][2], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[0][3], got[1][3])


# ------------------------------------------------------------------------------------------------
# an LSTM step's gradients on the arrays

from ember._ops import nn_rnn  # noqa: E402


def _cell_grads(monkeypatch, plain, dtype, only_h, nan):
    if plain:
        monkeypatch.setattr(nn_rnn, "_lstm_step_grads_on_arrays", lambda *a: None)
    ember.manual_seed(0)
    cell = ember.nn.LSTMCell(5, 6).to(ember.float64 if dtype == np.float64 else ember.float32)
    x = ember.tensor(_rand(3, 5, dtype=dtype), requires_grad=True)
    h0 = _rand(3, 6, seed=1, dtype=dtype)
    if nan:
        h0[1, 2] = np.nan
    h = ember.tensor(h0, requires_grad=True)
    c = ember.tensor(_rand(3, 6, seed=2, dtype=dtype), requires_grad=True)
    h2, c2 = cell(x, (h, c))
    h3, c3 = cell(x * 2, (h2, c2))
    loss = (h3 * ember.tensor(_rand(3, 6, seed=3, dtype=dtype))).sum()
    if not only_h:
        loss = loss + (c3 * 3).sum()
    loss.backward()
    out = [t.grad.numpy().copy() for t in (x, h, c)] + \
        [p.grad.numpy().copy() for p in cell.parameters()]
    monkeypatch.undo()
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("only_h", [False, True])
@pytest.mark.parametrize("nan", [False, True])
def test_lstm_step_gradients_on_arrays_are_the_formulas_bits(monkeypatch, dtype, only_h, nan):
    fast = _cell_grads(monkeypatch, False, dtype, only_h, nan)
    plain = _cell_grads(monkeypatch, True, dtype, only_h, nan)
    for a, b in zip(fast, plain):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()


def test_lstm_step_gradients_on_arrays_are_taken_without_a_graph(monkeypatch):
    calls = []
    real = nn_rnn._lstm_step_grads_on_arrays
    monkeypatch.setattr(nn_rnn, "_lstm_step_grads_on_arrays",
                        lambda *a: calls.append(1) or real(*a))
    cell = ember.nn.LSTMCell(2, 3)
    x = ember.ones(1, 2, requires_grad=True)
    h, c = cell(x)
    (h.sum() + c.sum()).backward()
    assert calls == [1]
    (g,) = ember.autograd.grad(cell(x)[0].sum(), x, create_graph=True)
    assert calls == [1] and g.requires_grad  # the formula's own ops under create_graph


def test_lstm_cell_gradients_match_torch():
    torch = pytest.importorskip("torch")
    res = []
    for T in (ember, torch):
        cell = T.nn.LSTMCell(4, 5)
        with T.no_grad():
            for k, p in enumerate(cell.parameters()):
                p.copy_(T.tensor(_rand(*p.shape, seed=10 + k)))
        x = T.tensor(_rand(2, 4), requires_grad=True)
        h, c = cell(x)
        h, c = cell(x, (h, c))
        (h.sum() * 2 + c.sum()).backward()
        res.append([x.grad.numpy()] + [p.grad.numpy() for p in cell.parameters()])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# the cells' argument checks in one pass

_CELL_BAD = {
    "input 1-D": dict(x=(5,)),
    "input size": dict(x=(3, 4)),
    "batch": dict(h=(2, 6)),
    "hidden size": dict(h=(3, 7)),
    "weight rows": dict(w_hh=(10, 6)),
    "float64 hidden": dict(h_dtype=np.float64),
    "int input": dict(x_dtype=np.int64),
}


def _cell_args(T, kind, x=(3, 5), h=(3, 6), w_hh=None, h_dtype=np.float32,
               x_dtype=np.float32):
    gates = {"lstm_cell": 4, "gru_cell": 3, "rnn_tanh_cell": 1}[kind]
    w_hh = w_hh or (gates * 6, 6)
    xs = T.tensor(_rand(*x).astype(x_dtype))
    hs = T.tensor(_rand(*h, seed=1).astype(h_dtype))
    wi = T.tensor(_rand(gates * 6, 5, seed=2))
    wh = T.tensor(_rand(*w_hh, seed=3))
    hx = (hs, T.tensor(_rand(*h, seed=4))) if kind == "lstm_cell" else hs
    return xs, hx, wi, wh


@pytest.mark.parametrize("kind", ["lstm_cell", "gru_cell", "rnn_tanh_cell"])
@pytest.mark.parametrize("bad", list(_CELL_BAD), ids=str)
def test_cell_arguments_refused_as_torch_by_the_checks(kind, bad):
    torch = pytest.importorskip("torch")
    xs, hx, wi, wh = _cell_args(ember, kind, **_CELL_BAD[bad])
    hidden = hx[:1] if kind == "lstm_cell" else (hx,)
    cell = hx[1] if kind == "lstm_cell" else None
    gates = {"lstm_cell": 4, "gru_cell": 3, "rnn_tanh_cell": 1}[kind]
    assert not nn_rnn._cell_args_plain(xs, hidden, wi, wh, gates, (None, None), cell)
    errs = []
    for T in (ember, torch):
        with pytest.raises(Exception) as e:
            getattr(T, kind)(*_cell_args(T, kind, **_CELL_BAD[bad]))
        # (the dtype message names dtypes as ember's Python names where torch writes C++'s:
        # ``Double != Float``, torch ``double != float``: only the type is compared there)
        errs.append((type(e.value), "dtype" if bad in ("float64 hidden", "int input")
                     else str(e.value)))
    assert errs[0] == errs[1]


@pytest.mark.parametrize("kind", ["lstm_cell", "gru_cell", "rnn_tanh_cell"])
def test_cell_arguments_plain_take_the_one_pass(kind):
    xs, hx, wi, wh = _cell_args(ember, kind)
    hidden = hx[:1] if kind == "lstm_cell" else (hx,)
    cell = hx[1] if kind == "lstm_cell" else None
    gates = {"lstm_cell": 4, "gru_cell": 3, "rnn_tanh_cell": 1}[kind]
    assert nn_rnn._cell_args_plain(xs, hidden, wi, wh, gates, (None, None), cell)
