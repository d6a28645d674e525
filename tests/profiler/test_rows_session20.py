"""Rows of a profile read the way PyTorch's read (session 20): ``aten::to`` for every
``Tensor.to`` (a conversion that changes nothing too), ``aten::view_as``, ``outer``/``ger``
as PyTorch's composite, ``MvBackward0`` and ``ProdBackward0/1`` with PyTorch's formulas
inside, ``nn.LSTMCell`` as PyTorch's CPU cell, ``nn.GRU``/``nn.RNN`` with their per-step ops
(the projection unbound, the gates updated in place), ``unbind``'s selects, attention with
dropout as PyTorch's math kernel, and a linear layer's in-place bias on a stacked input
without a ``CopySlices``. Comparisons with PyTorch skip without it; the other checks run
either way."""

import collections
import contextlib
import warnings

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # the structure checks below still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

#: rows PyTorch's kernels run that ember's do not (allocations, copies, the views inside
#: composites, the dtype conversions of a number operand inside an arithmetic kernel)
_INTERNAL = {"aten::empty", "aten::empty_like", "aten::empty_strided", "aten::as_strided",
             "aten::copy_", "aten::zero_", "aten::fill_", "aten::resolve_conj",
             "aten::transpose", "aten::expand", "aten::narrow", "aten::slice",
             "aten::as_strided_", "aten::_to_copy", "aten::scalar_tensor",
             "aten::_reshape_alias", "aten::addmv_"}
#: (row, parent) pairs likewise: numbers converted inside a kernel, the clone inside
#: PyTorch's in-place ``mul_`` of a saved tensor, the view inside a ``reshape``, the
#: ``where`` of PyTorch's safe softmax (ember zeroes rows with no key only where one is)
_INTERNAL_IN = {("aten::to", "aten::eq"), ("aten::to", "aten::cumprod"),
                ("aten::to", "aten::sum"), ("aten::to", "aten::mul"),
                ("aten::to", "aten::div_"), ("aten::to", "aten::where"),
                ("aten::to", "aten::add"), ("aten::clone", "aten::mul_"),
                ("aten::view", "aten::reshape"), ("aten::where", "aten::_safe_softmax"),
                ("aten::where", "aten::where")}


def _rows(prof, wanted=None):
    """{(name, input shapes, parent's name): count} of the events named in ``wanted`` and
    their children (all events when None)."""
    out = collections.Counter()
    for e in prof.events():
        if e.name in _INTERNAL:
            continue
        parent = e.cpu_parent.name if e.cpu_parent else None
        if (e.name, parent) in _INTERNAL_IN:
            continue
        if wanted is not None and e.name not in wanted and parent not in wanted:
            continue
        out[(e.name, str(e.input_shapes), parent)] += 1
    return out


def _profile(lib, build, **kw):
    lib.manual_seed(0)
    fn = build(lib)
    kw.setdefault("record_shapes", True)
    with lib.profiler.profile(**kw) as prof:
        fn()
    return prof


def _same_rows(build, wanted=None, **kw):
    mine = _rows(_profile(ember, build, **kw), wanted)
    theirs = _rows(_profile(torch, build, **kw), wanted)
    assert mine == theirs
    assert mine
    return mine


def _names(prof):
    return [e.name for e in prof.events()]


# -- Tensor.to and view_as ------------------------------------------------------------------------


def _conversions(lib):
    x = lib.tensor([[1., 0., 2.], [3., 4., 5.]])

    def fn():
        x.to(lib.float64)
        x.to("cpu")
        x.to(x)
        x.double()
        x.float()
        x.to(device="cpu", dtype=lib.float32)
        x.reshape(-1).view_as(x)
    return fn


@needs_torch
def test_to_rows_as_torch_even_when_nothing_changes():
    rows = _same_rows(_conversions)
    assert sum(n for (name, _, _), n in rows.items() if name == "aten::to") == 6


def test_to_row_recorded_when_nothing_changes():
    x = ember.ones(2, 3)
    with ember.profiler.profile(record_shapes=True) as prof:
        y = x.to(ember.float32)
    assert y is x
    to = [e for e in prof.events() if e.name == "aten::to"]
    assert len(to) == 1 and to[0].input_shapes == [[2, 3], [], [], [], []]


def test_to_overloads_take_torch_argument_counts():
    x = ember.ones(2)
    with ember.profiler.profile(record_shapes=True) as prof:
        x.to(ember.float64)          # dtype
        x.to("cpu", ember.float32)   # device
        x.to("cpu")                  # dtype_layout
    counts = [len(e.input_shapes) for e in prof.events() if e.name == "aten::to"]
    assert counts == [5, 6, 8]


def test_view_as_row_holds_its_view():
    x = ember.ones(6)
    with ember.profiler.profile(record_shapes=True) as prof:
        x.view_as(ember.ones(2, 3))
    ev = next(e for e in prof.events() if e.name == "aten::view_as")
    assert ev.input_shapes == [[6], [2, 3]]
    assert [c.name for c in ev.cpu_children] == ["aten::view"]


# -- outer, ger and mv's gradient ---------------------------------------------------------------


def _outer(lib):
    x = lib.randn(3, requires_grad=True)
    y = lib.randn(4, requires_grad=True)

    def fn():
        lib.outer(x, y).sum().backward()
        lib.ger(x, y).sum().backward()
        x.outer(y).sum().backward()
    return fn


def _mv(lib):
    a = lib.randn(3, 4, requires_grad=True)
    v = lib.randn(4, requires_grad=True)

    def fn():
        lib.mv(a, v).sum().backward()
        (a @ v).sum().backward()
    return fn


@needs_torch
def test_outer_and_ger_rows_and_nodes_as_torch():
    _same_rows(_outer)


@needs_torch
def test_mv_backward_rows_as_torch():
    rows = _same_rows(_mv)
    inside = {name for name, _, parent in rows if parent == "MvBackward0"}
    assert inside == {"aten::ger", "aten::t", "aten::mv"}


def test_outer_values_and_gradients_unchanged_under_profiler():
    def run(profiled):
        x = ember.tensor([1., -2., 3.], requires_grad=True)
        y = ember.tensor([0.5, 4., -1., 2.], requires_grad=True)
        ctx = ember.profiler.profile() if profiled else contextlib.nullcontext()
        with ctx:
            r = ember.ger(x, y)
            (r * r).sum().backward()
        return r.detach().numpy(), x.grad.numpy(), y.grad.numpy()

    for a, b in zip(run(False), run(True)):
        np.testing.assert_array_equal(a, b)


@needs_torch
def test_mv_gradients_match_torch():
    got = []
    for lib in (ember, torch):
        a = lib.tensor(np.arange(12.).reshape(3, 4) / 7, requires_grad=True)
        v = lib.tensor([1., -2., 0.5, 3.], dtype=lib.float64, requires_grad=True)
        (lib.mv(a, v) ** 2).sum().backward()
        got.append((a.grad.numpy(), v.grad.numpy()))
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-12)


# -- prod's gradient ------------------------------------------------------------------------------


def _prods(values):
    def build(lib):
        x = lib.tensor(values, requires_grad=True)

        def fn():
            x.prod().backward()
            x.prod(1).sum().backward()
            x.prod(0, keepdim=True).sum().backward()
        return fn
    return build


@needs_torch
@pytest.mark.parametrize("values", [[[1., 2., 3.], [4., 5., 6.]],
                                    [[1., 0., 2.], [3., 4., 5.]],
                                    [[0., 0., 2.], [3., 4., 5.]]],
                         ids=["no-zero", "one-zero", "two-zeros"])
def test_prod_backward_rows_as_torch(values):
    _same_rows(_prods(values))


@needs_torch
@pytest.mark.parametrize("values", [[[1., 2., 3.], [4., 5., 6.]],
                                    [[1., 0., 2.], [3., 4., 5.]],
                                    [[0., 0., 2.], [3., 4., 5.]],
                                    [[1., float("inf"), -3.], [0., 4., 5.]]])
@pytest.mark.parametrize("kw", [{}, {"dim": 0}, {"dim": 1}, {"dim": -1, "keepdim": True}])
def test_prod_gradients_match_torch(values, kw):
    got = []
    for lib in (ember, torch):
        x = lib.tensor(values, requires_grad=True)
        x.prod(**kw).sum().backward()
        got.append(x.grad.numpy())
    np.testing.assert_allclose(got[0], got[1], rtol=1e-6, equal_nan=True)


def test_prod_gradient_unchanged_under_profiler_and_vmap_quiet():
    x = ember.tensor([[1., 0., 2.], [3., 4., 5.]], requires_grad=True)
    x.prod(1).sum().backward()
    want = x.grad.clone()
    x.grad = None
    with ember.profiler.profile():
        x.prod(1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), want.numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # (no batching-rule warning: no data-dependent op)
        g = ember.func.vmap(ember.func.grad(lambda r: r.prod()))(x.detach())
    np.testing.assert_array_equal(g.numpy(), [[0., 2., 0.], [20., 15., 12.]])


def test_prod_of_everything_holds_torch_ops():
    x = ember.tensor([[1., 0., 2.], [3., 4., 5.]], requires_grad=True)
    with ember.profiler.profile() as prof:
        x.prod().backward()
    node = next(e for e in prof.events() if e.name == "ProdBackward0")
    inside = [c.name for c in node.cpu_children]
    assert "aten::nonzero" in inside and "aten::cumprod" in inside
    assert "aten::prod" not in inside   # (the saved result, not a second product)


# -- recurrent layers -----------------------------------------------------------------------------


def _lstm_cell(lib):
    m = lib.nn.LSTMCell(4, 5)
    x, h, c = lib.randn(2, 4), lib.randn(2, 5), lib.randn(2, 5)

    def fn():
        a, b = m(x, (h, c))
        (a.sum() + b.sum()).backward()
    return fn


def _layer(cls, **kw):
    def build(lib):
        m = getattr(lib.nn, cls)(4, 5, **kw)
        x = lib.randn(3, 2, 4)

        def fn():
            m(x)[0].sum().backward()
        return fn
    return build


@needs_torch
def test_lstm_cell_rows_as_torch():
    mine = _rows(_profile(ember, _lstm_cell))
    theirs = _rows(_profile(torch, _lstm_cell))
    # (the engine's sum of the cell state's two gradients: PyTorch adds out of place here)
    for rows in (mine, theirs):
        for key in [k for k in rows if k[0] in ("aten::add", "aten::add_") and
                    k[2] == "autograd::engine::evaluate_function: TanhBackward0"]:
            del rows[key]
    assert mine == theirs
    assert ("aten::lstm_cell", "[[2, 4], [], [20, 4], [20, 5], [20], [20]]", None) in mine


@needs_torch
@pytest.mark.parametrize("cls,kw", [("GRU", {}), ("RNN", {}), ("RNN", {"nonlinearity": "relu"}),
                                    ("GRU", {"num_layers": 2}), ("RNN", {"bias": False})])
def test_gru_and_rnn_layer_rows_as_torch(cls, kw):
    rows = _same_rows(_layer(cls, **kw))
    assert any(name == "aten::unbind" for name, _, _ in rows)


def test_unbind_lists_a_select_per_piece():
    x = ember.ones(3, 4)
    with ember.profiler.profile(record_shapes=True) as prof:
        x.unbind(1)
    ev = next(e for e in prof.events() if e.name == "aten::unbind")
    assert [c.name for c in ev.cpu_children] == ["aten::select"] * 4
    assert ev.cpu_children[2].input_shapes == [[3, 4], [], []]


@pytest.mark.parametrize("make", [lambda: ember.nn.LSTMCell(4, 5), lambda: ember.nn.GRU(4, 5),
                                  lambda: ember.nn.RNN(4, 5, num_layers=2),
                                  lambda: ember.nn.RNN(4, 5, nonlinearity="relu")])
def test_recurrent_values_and_gradients_unchanged_under_profiler(make):
    ember.manual_seed(0)
    m = make()
    cell = isinstance(m, ember.nn.LSTMCell)
    x = ember.randn(2, 4, requires_grad=True) if cell else ember.randn(3, 2, 4,
                                                                         requires_grad=True)

    def run():
        for t in [x, *m.parameters()]:
            t.grad = None
        out = m(x)[0]
        out.sum().backward()
        return [out.detach().numpy().copy()] + [t.grad.numpy().copy()
                                                for t in [x, *m.parameters()]]

    plain = run()
    with ember.profiler.profile(record_shapes=True):
        profiled = run()
    for a, b in zip(plain, profiled):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# -- attention with dropout -----------------------------------------------------------------------


def _attention(kind):
    def build(lib):
        q = lib.randn(2, 2, 5, 4, requires_grad=True)
        mask = {"bool": lambda: lib.rand(5, 5) > 0.3, "float": lambda: lib.randn(5, 5)}.get(
            kind, lambda: None)()

        def fn():
            lib.nn.functional.scaled_dot_product_attention(
                q, q, q, attn_mask=mask, dropout_p=0.1, is_causal=kind == "causal").sum()\
                .backward()
        return fn
    return build


@needs_torch
@pytest.mark.parametrize("kind", ["none", "bool", "float", "causal"])
def test_attention_with_dropout_rows_as_torch(kind):
    rows = _same_rows(_attention(kind))
    parents = {(name, parent) for name, _, parent in rows}
    assert ("aten::_scaled_dot_product_attention_math",
            "aten::scaled_dot_product_attention") in parents
    assert ("aten::_softmax_backward_data", "SafeSoftmaxBackward0") in parents


@pytest.mark.parametrize("kind", ["none", "bool", "causal", "empty-row"])
def test_attention_with_dropout_values_under_profiler(kind):
    def run(profiled):
        ember.manual_seed(0)
        q = ember.randn(2, 2, 5, 4, requires_grad=True)
        mask = None
        if kind == "bool":
            mask = ember.rand(5, 5) > 0.3
        elif kind == "empty-row":
            mask = ember.ones(5, 5, dtype=ember.bool)
            mask[1] = False
        ctx = ember.profiler.profile() if profiled else contextlib.nullcontext()
        ember.manual_seed(1)
        with ctx:
            out = ember.nn.functional.scaled_dot_product_attention(
                q, q, q, attn_mask=mask, dropout_p=0.3, is_causal=kind == "causal")
            out.sum().backward()
        return out.detach().numpy(), q.grad.numpy()

    for a, b in zip(run(False), run(True)):
        assert not np.isnan(b).any()
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@needs_torch
def test_encoder_layer_in_training_rows_as_torch():
    # dropout on: attention runs PyTorch's math kernel; the in-projection's bias is added in
    # place to its product without a ``CopySlices``
    def build(lib):
        m = lib.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True)
        x = lib.randn(2, 5, 8)

        def fn():
            m(x).sum().backward()
        return fn

    mine = _rows(_profile(ember, build))
    theirs = _rows(_profile(torch, build))
    assert not any(name.endswith("CopySlices") for name, _, _ in mine)
    ours_sdpa = {k: n for k, n in mine.items() if "scaled_dot_product" in k[0] + str(k[2])}
    theirs_sdpa = {k: n for k, n in theirs.items() if "scaled_dot_product" in k[0] + str(k[2])}
    assert ours_sdpa == theirs_sdpa


def test_float_mask_of_the_query_dtype_is_not_converted():
    mha = ember.nn.MultiheadAttention(8, 2, batch_first=True)
    x = ember.randn(2, 5, 8)
    mask = ember.zeros(5, 5)
    with ember.profiler.profile() as prof:
        mha(x, x, x, attn_mask=mask, need_weights=False)
    assert "aten::to" not in _names(prof)


# -- with_stack: calls into the API as PyTorch's C calls ------------------------------------------


def _api_calls(lib):
    m = lib.nn.Linear(4, 3)
    x = lib.randn(2, 4)
    F = lib.nn.functional

    def fn():
        y = m(x)
        z = y.relu().sum() + lib.relu(y).sum() + F.linear(x, m.weight).sum()
        z = z + x.view(8).sum() + lib.ones_like(x).mean() + lib.cat([x, x]).exp().sum()
        F.gelu(x)
        F.relu(x)
        x.permute(1, 0)
        x.add(1)
        z.backward()
    return fn


def _builtin_calls(prof):
    """{(name without its address, first child's name): count} of the ``<built-in ...>``
    events directly inside the profiled function ``fn``."""
    import re

    out = collections.Counter()
    for e in prof.events():
        parent = e.cpu_parent
        if e.name.startswith("<built-in") and parent is not None and \
                parent.name.endswith(": fn"):
            name = re.sub(r" at 0x[0-9a-f]+>$", ">", e.name)
            out[(name, e.cpu_children[0].name if e.cpu_children else None)] += 1
    return out


@needs_torch
def test_api_calls_named_as_torch_c_calls_under_with_stack():
    mine = _builtin_calls(_profile(ember, _api_calls, with_stack=True))
    theirs = _builtin_calls(_profile(torch, _api_calls, with_stack=True))
    assert mine == theirs
    assert mine[("<built-in method relu of Tensor object>", "aten::relu")] == 1
    assert mine[("<built-in method relu of type object>", "aten::relu")] == 1
    assert mine[("<built-in function linear>", "aten::linear")] == 1


def test_api_call_event_names_the_tensor_and_holds_the_op():
    x = ember.ones(3)

    def fn():
        x.exp()

    with ember.profiler.profile(with_stack=True) as prof:
        fn()
    ev = next(e for e in prof.events() if e.name.startswith("<built-in method exp"))
    assert ev.name == f"<built-in method exp of Tensor object at {id(x):#x}>"
    assert ev.cpu_parent.name.endswith(": fn")
    assert [c.name for c in ev.cpu_children] == ["aten::exp"]


def test_python_written_torch_methods_make_no_c_call_event():
    x = ember.ones(3, requires_grad=True)

    def fn():
        (x * 2).sum().backward()

    with ember.profiler.profile(with_stack=True) as prof:
        fn()
    names = _names(prof)
    assert not any("backward of Tensor" in n for n in names)
    assert not any(n.startswith("<built-in method __mul__") for n in names)
    assert any(n.startswith("<built-in method sum of Tensor object") for n in names)


# -- a classifier head's global average pooling -------------------------------------------------


@needs_torch
def test_global_average_pooling_mean_holds_sum_and_div_as_torch():
    def build(lib):
        m = lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3), lib.nn.AdaptiveAvgPool2d(1),
                              lib.nn.Flatten(), lib.nn.Linear(4, 2))
        x = lib.randn(2, 3, 6, 6)

        def fn():
            m(x).sum().backward()
        return fn

    rows = _same_rows(build, {"aten::mean"})
    assert ("aten::div_", "[[2, 4, 1, 1], []]", "aten::mean") in rows


def test_global_average_pooling_rows_without_torch():
    x = ember.randn(2, 4, 3, 3)
    with ember.profiler.profile(record_shapes=True) as prof:
        ember.nn.functional.adaptive_avg_pool2d(x, 1)
    mean = next(e for e in prof.events() if e.name == "aten::mean")
    assert [c.name for c in mean.cpu_children] == ["aten::sum", "aten::div_"]
    assert mean.cpu_children[0].input_shapes == [[2, 4, 3, 3], [], [], [], [2, 4, 1, 1]]
