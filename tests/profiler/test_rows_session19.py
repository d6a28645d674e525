"""Rows of a profile read the way PyTorch's read (session 19): ``max(dim)``/``min(dim)`` as
the one ``aten::max``/``aten::min`` (no row for the values ember re-gathers to carry
gradient, and the flow arrow still reaches ``MaxBackward0``), ``nn.RNNCell`` and
``nn.GRUCell`` as PyTorch's ``aten::rnn_tanh_cell``/``aten::rnn_relu_cell``/``aten::gru_cell``
with their ops inside, a split's gradient as ``aten::cat``, and ``nn.LSTM(bias=False)``'s
layer rows. Comparisons with PyTorch skip without it; the other checks run either way."""

import collections

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # the structure checks below still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

#: rows PyTorch's kernels run that ember's do not (allocations, copies, the views inside
#: ``aten::t``, ``aten::addmm`` and ``aten::unsafe_split``)
_INTERNAL = {"aten::empty", "aten::empty_like", "aten::empty_strided", "aten::as_strided",
             "aten::copy_", "aten::zero_", "aten::fill_", "aten::resolve_conj",
             "aten::transpose", "aten::expand", "aten::narrow", "aten::slice",
             "aten::as_strided_"}
#: (row, parent) pairs likewise: the dtype check inside PyTorch's ``scatter_``
_INTERNAL_IN = {("aten::to", "aten::scatter_")}


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


# -- max(dim) / min(dim) -----------------------------------------------------------------------


def _max_dim(largest=True, keepdim=True):
    def build(lib):
        x = lib.randn(3, 4, requires_grad=True)

        def fn():
            r = x.max(1, keepdim=keepdim) if largest else x.min(1, keepdim=keepdim)
            r[0].sum().backward()
        return fn
    return build


@pytest.mark.parametrize("largest", [True, False])
def test_max_dim_is_one_row_without_take_along(largest):
    prof = _profile(ember, _max_dim(largest, keepdim=False))
    names = _names(prof)
    assert "aten::_take_along" not in names
    assert names.count("aten::max" if largest else "aten::min") == 1


@pytest.mark.parametrize("largest", [True, False])
def test_max_dim_forward_event_links_to_its_backward_node(largest):
    prof = _profile(ember, _max_dim(largest))
    op = "aten::max" if largest else "aten::min"
    node = "MaxBackward0" if largest else "MinBackward0"
    seq = {e.name: e.sequence_nr for e in prof.events() if e.name in (op, node)}
    assert seq[op] >= 0
    assert seq[op] == seq[node]


def test_max_dim_gradient_unchanged_under_profiler():
    x = ember.randn(3, 4, requires_grad=True)
    x.max(1)[0].sum().backward()
    want = x.grad.clone()
    x.grad = None
    with ember.profiler.profile():
        x.max(1)[0].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), want.numpy())


@needs_torch
@pytest.mark.parametrize("largest", [True, False])
def test_max_dim_rows_match_torch_with_keepdim(largest):
    _same_rows(_max_dim(largest, keepdim=True))


# -- RNN cells ----------------------------------------------------------------------------------


def _cell(cls, **kw):
    def build(lib):
        m = getattr(lib.nn, cls)(4, 5, **kw)
        x = lib.randn(2, 4)
        h = lib.randn(2, 5, requires_grad=True)

        def fn():
            m(x, h).sum().backward()
        return fn
    return build


@pytest.mark.parametrize("cls,kw,op", [("RNNCell", {}, "aten::rnn_tanh_cell"),
                                       ("RNNCell", {"nonlinearity": "relu"},
                                        "aten::rnn_relu_cell"),
                                       ("GRUCell", {}, "aten::gru_cell")])
def test_cell_is_one_outer_row(cls, kw, op):
    prof = _profile(ember, _cell(cls, **kw))
    outer = [e for e in prof.events() if e.name == op]
    assert len(outer) == 1
    assert outer[0].cpu_parent is None
    assert outer[0].input_shapes == [[2, 4], [2, 5], [outer[0].input_shapes[2][0], 4],
                                     [outer[0].input_shapes[2][0], 5],
                                     [outer[0].input_shapes[2][0]],
                                     [outer[0].input_shapes[2][0]]]
    inside = {e.name for e in prof.events() if e.cpu_parent is outer[0]}
    assert "aten::linear" in inside


@pytest.mark.parametrize("cls,kw", [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}),
                                    ("GRUCell", {}), ("GRUCell", {"bias": False})])
def test_cell_results_and_gradients_unchanged_under_profiler(cls, kw):
    ember.manual_seed(0)
    m = getattr(ember.nn, cls)(4, 5, **kw)
    x = ember.randn(2, 4, requires_grad=True)
    h = ember.randn(2, 5, requires_grad=True)
    ts = [x, h, *m.parameters()]

    def run():
        for t in ts:
            t.grad = None
        out = m(x, h)
        out.sum().backward()
        return [out.detach().numpy().copy()] + [t.grad.numpy().copy() for t in ts]

    plain = run()
    with ember.profiler.profile(record_shapes=True):
        profiled = run()
    for a, b in zip(plain, profiled):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@needs_torch
@pytest.mark.parametrize("kw", [{}, {"nonlinearity": "relu"}, {"bias": False}])
def test_rnn_cell_rows_match_torch(kw):
    _same_rows(_cell("RNNCell", **kw))


@needs_torch
def test_gru_cell_outer_rows_match_torch():
    # the cell's own row and the rows directly inside it (PyTorch's in-place gate updates
    # clone inside ``aten::mul_``, which ember's in-place multiply does not need)
    wanted = {"aten::gru_cell"}
    mine = _rows(_profile(ember, _cell("GRUCell")), wanted)
    theirs = _rows(_profile(torch, _cell("GRUCell")), wanted)
    assert mine == theirs


@needs_torch
def test_gru_cell_backward_nodes_match_torch():
    def nodes(prof):
        return collections.Counter(e.name for e in prof.events()
                                   if e.name.startswith("autograd::engine"))
    assert nodes(_profile(ember, _cell("GRUCell"))) == nodes(_profile(torch, _cell("GRUCell")))


@needs_torch
def test_chunk_gradient_is_cat_as_in_torch():
    def build(lib):
        x = lib.randn(6, 2, requires_grad=True)

        def fn():
            a, b = x.chunk(2)
            (a * b).sum().backward()
        return fn
    _same_rows(build, {"SplitBackward0"})


# -- nn.LSTM without biases ---------------------------------------------------------------------


def _lstm_no_bias(lib):
    m = lib.nn.LSTM(4, 5, bias=False)
    x = lib.randn(3, 2, 4)

    def fn():
        m(x)[0].sum().backward()
    return fn


@needs_torch
def test_lstm_without_bias_layer_rows_match_torch():
    # the layer's forward event and what runs inside it (a zero bias in place of the sum)
    _same_rows(_lstm_no_bias, {"aten::mkldnn_rnn_layer"})


def test_lstm_without_bias_layer_gets_the_weights_in_the_bias_places():
    prof = _profile(ember, _lstm_no_bias)
    layer = next(e for e in prof.events() if e.name == "aten::mkldnn_rnn_layer")
    assert layer.input_shapes[1:5] == [[20, 4], [20, 5], [20, 4], [20, 5]]
    back = next(e for e in prof.events() if e.name == "aten::mkldnn_rnn_layer_backward")
    assert back.input_shapes[3:5] == [[20, 4], [20, 5]]
    inside = [e.name for e in prof.events() if e.cpu_parent is back]
    assert "aten::zeros" in inside and "aten::add" not in inside
