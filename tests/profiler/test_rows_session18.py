"""Rows of a profile read the way PyTorch's read (session 18): ``nn.LSTM`` as PyTorch's CPU
build runs it (the transposes and the contiguous copy of a ``batch_first`` input inside
``aten::lstm``, the bias sum inside ``aten::mkldnn_rnn_layer``, the contiguous copies,
zeros and bias clone inside ``aten::mkldnn_rnn_layer_backward``, no ``AddBackward0`` for
the biases), ``cat``'s backward as one ``aten::narrow`` per input, ``amin`` and
``max(dim)``/``min(dim)`` under their own names, and reductions' dims as the caller gave
them. Comparisons with PyTorch skip without it; the other checks run either way."""

import collections

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # the structure checks below still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

#: rows PyTorch's kernels run that ember's do not (allocations and copies inside a kernel)
_INTERNAL = {"aten::empty", "aten::empty_like", "aten::empty_strided", "aten::as_strided",
             "aten::copy_", "aten::zero_", "aten::fill_", "aten::resolve_conj"}


def _rows(prof, wanted=None):
    """{(name, input shapes but a oneDNN workspace's, parent's name): count} of the events
    named in ``wanted`` and their children (all events when None)."""
    out = collections.Counter()
    for e in prof.events():
        if e.name in _INTERNAL:
            continue
        parent = e.cpu_parent.name if e.cpu_parent else None
        if wanted is not None and e.name not in wanted and parent not in wanted:
            continue
        shapes = e.input_shapes
        if e.name == "aten::mkldnn_rnn_layer_backward":
            shapes = shapes[:-1]   # (oneDNN's workspace: ember has none)
        out[(e.name, str(shapes), parent)] += 1
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


# -- nn.LSTM -----------------------------------------------------------------------------------


def _lstm_lm(batch_first=False, num_layers=1, bidirectional=False, grad=True, state=False):
    """A language model's step: embedding > LSTM > linear head > cross entropy."""
    def build(lib):
        emb = lib.nn.Embedding(10, 4)
        lstm = lib.nn.LSTM(4, 5, num_layers=num_layers, batch_first=batch_first,
                           bidirectional=bidirectional)
        dirs = 2 if bidirectional else 1
        head = lib.nn.Linear(5 * dirs, 10)
        idx = lib.tensor([[1, 2, 3], [4, 5, 6]])
        target = lib.tensor([1, 2, 3, 4, 5, 6])
        hx = None
        if state:
            h = lib.zeros(num_layers * dirs, 2 if batch_first else 3, 5)
            hx = (h, h.clone())

        def fn():
            out, _ = lstm(emb(idx), hx)
            logits = head(out)
            if grad:
                loss = lib.nn.functional.cross_entropy(logits.flatten(0, 1), target)
                loss.backward()
        return fn if grad else _no_grad(lib, fn)
    return build


def _no_grad(lib, fn):
    def run():
        with lib.no_grad():
            fn()
    return run


#: the LSTM's events, its nodes' and the biases' gradients (the embedding and the head have
#: rows of their own, compared elsewhere)
_LSTM_ROWS = {"aten::lstm", "aten::mkldnn_rnn_layer", "aten::mkldnn_rnn_layer_backward",
              "MkldnnRnnLayerBackward0", "CloneBackward0", "TransposeBackward0",
              "CatBackward0", "AddBackward0", "torch::autograd::AccumulateGrad",
              "aten::narrow"}

_LSTMS = [dict(), dict(batch_first=True), dict(num_layers=2), dict(bidirectional=True),
          dict(batch_first=True, num_layers=2, bidirectional=True), dict(state=True),
          dict(batch_first=True, grad=False)]


@needs_torch
@pytest.mark.parametrize("cfg", _LSTMS, ids=lambda c: "-".join(f"{k}={v}" for k, v in
                                                              c.items()) or "plain")
def test_lstm_rows_as_torch(cfg):
    rows = _same_rows(_lstm_lm(**cfg), _LSTM_ROWS)
    assert any(name == "aten::mkldnn_rnn_layer" for name, _, _ in rows)


@needs_torch
def test_lstm_batch_first_transposes_inside_lstm_as_torch():
    rows = _same_rows(_lstm_lm(batch_first=True), _LSTM_ROWS)
    parents = {(name, parent) for name, _, parent in rows}
    assert ("aten::transpose", "aten::lstm") in parents
    assert ("aten::contiguous", "aten::lstm") in parents
    assert ("aten::add", "aten::mkldnn_rnn_layer") in parents
    assert ("aten::clone", "aten::mkldnn_rnn_layer_backward") in parents


def test_lstm_layer_node_takes_both_biases():
    # one node for the layer and its biases: no AddBackward0, a gradient for each bias
    lstm = ember.nn.LSTM(3, 4)
    x = ember.randn(5, 2, 3)
    out, _ = lstm(x)
    assert type(out.grad_fn).__name__ == "MkldnnRnnLayerBackward0"
    names = {type(n).__name__ for n, _ in out.grad_fn.next_functions if n is not None}
    assert "AddBackward0" not in names
    out.sum().backward()
    np.testing.assert_array_equal(lstm.bias_ih_l0.grad.numpy(), lstm.bias_hh_l0.grad.numpy())
    assert not np.shares_memory(lstm.bias_ih_l0.grad.numpy(), lstm.bias_hh_l0.grad.numpy())


@pytest.mark.parametrize("batch_first", [False, True])
def test_lstm_values_and_gradients_unchanged_by_the_profiler(batch_first):
    got = []
    for profiled in (False, True):
        ember.manual_seed(0)
        lstm = ember.nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=batch_first)
        x = ember.randn(2, 5, 3, requires_grad=True)
        if profiled:
            with ember.profiler.profile(record_shapes=True):
                out, (h, c) = lstm(x)
                (out.sum() + h.sum() * 2 + c.sum()).backward()
        else:
            out, (h, c) = lstm(x)
            (out.sum() + h.sum() * 2 + c.sum()).backward()
        got.append([out.detach().numpy(), h.detach().numpy(), x.grad.numpy()] +
                   [p.grad.numpy() for p in lstm.parameters()])
    for a, b in zip(*got):
        np.testing.assert_array_equal(a, b)


@needs_torch
def test_lstm_gradients_match_torch():
    grads = []
    for lib in (ember, torch):
        lib.manual_seed(0)
        lstm = lib.nn.LSTM(3, 4, bidirectional=True, batch_first=True)
        with lib.no_grad():
            for p, v in zip(lstm.parameters(), _weights()):
                p.copy_(lib.tensor(v))
        x = lib.tensor(np.linspace(-1, 1, 30).reshape(2, 5, 3).astype(np.float32))
        out, (h, c) = lstm(x)
        (out.square().sum() + h.sum()).backward()
        grads.append([p.grad.numpy() for p in lstm.parameters()])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _weights():
    rng = np.random.default_rng(3)
    shapes = [(16, 3), (16, 4), (16,), (16,)] * 2
    return [rng.standard_normal(s).astype(np.float32) * 0.3 for s in shapes]


# -- cat's backward ----------------------------------------------------------------------------


def _cats(lib):
    a = lib.ones(2, 3, requires_grad=True)
    b = lib.ones(2, 2, requires_grad=True)
    c = lib.ones(2, 3)

    def fn():
        (lib.cat([a, b], -1).sum() + lib.cat([a, c], 0).sum() +
         lib.cat([a, b, a], 1).sum()).backward()
    return fn


@needs_torch
def test_cat_backward_narrows_as_torch():
    rows = _same_rows(_cats)
    assert rows[("aten::narrow", "[[2, 5], [], [], []]", "CatBackward0")] == 2


@needs_torch
def test_cat_backward_narrow_arguments_as_torch():
    def concrete(lib):
        prof = _profile(lib, _cats)
        return [(e.name, e.concrete_inputs) for e in prof.events()
                if e.name in ("aten::narrow", "aten::slice")]
    assert concrete(ember) == concrete(torch)


# -- reductions: names and dims ----------------------------------------------------------------


def _reductions(lib):
    x = lib.tensor(np.arange(24.0).reshape(2, 3, 4))

    def fn():
        x.sum(-1), x.mean(dim=(-1, -2)), x.amax(-2), x.amin((2, 0)), x.sum(dim=[-3])
        x.var(-1), x.std(dim=-2), x.logsumexp(-1), x.max(-1), x.min(1, keepdim=True)
    return fn


@needs_torch
def test_reduction_dims_as_given_as_torch():
    def concrete(lib):
        prof = _profile(lib, _reductions)
        return [(e.name, e.concrete_inputs) for e in prof.events() if e.cpu_parent is None]
    assert concrete(ember) == concrete(torch)


def test_reduction_dims_as_given_without_torch():
    prof = _profile(ember, _reductions)
    top = [(e.name, e.concrete_inputs) for e in prof.events() if e.cpu_parent is None]
    assert top[0] == ("aten::sum", [None, [-1], False, None])
    assert top[3] == ("aten::amin", [None, [2, 0], False])
    assert top[8] == ("aten::max", [None, -1, False])
    assert top[9] == ("aten::min", [None, 1, True])


def test_reduction_dims_noted_only_for_the_op():
    # a noted dim does not leak to the next op: an op without dims lists its own arguments
    x = ember.randn(2, 3)
    with ember.profiler.profile(record_shapes=True) as prof:
        x.sum(-1)
        x.transpose(0, 1)
    events = [(e.name, e.concrete_inputs) for e in prof.events()]
    assert events[1] == ("aten::transpose", [None, 0, 1])


def test_amin_and_max_dim_named_without_shapes():
    x = ember.randn(2, 3)
    with ember.profiler.profile() as prof:
        x.amin(1), x.max(1), x.min(0), x.amax(0)
    assert [e.name for e in prof.events()] == ["aten::amin", "aten::max", "aten::min",
                                               "aten::amax"]


# -- reduction gradients -----------------------------------------------------------------------


def _reduction_gradients(lib):
    x = lib.tensor(np.arange(1.0, 25.0).reshape(2, 3, 4), requires_grad=True)

    def fn():
        (x.amax(1).sum() + x.amin(dim=(0, 2)).sum() + x.var(1).sum() + x.std(-1).sum() +
         x.logsumexp(1).sum() + x.amax(-1, keepdim=True).sum()).backward()
    return fn


#: the reductions' nodes (the reshape of a gradient PyTorch keeps as an expanded view is
#: ``_reshape_alias`` there, where ember's gradient is a fresh array: left out)
_REDUCTION_NODES = {"AmaxBackward0", "AminBackward0", "VarBackward0", "StdBackward0",
                    "LogsumexpBackward0", "aten::mean"}


@needs_torch
def test_reduction_gradient_rows_as_torch():
    def rows(lib):
        return collections.Counter(
            k for k in _rows(_profile(lib, _reduction_gradients), _REDUCTION_NODES)
            if k[0] not in ("aten::_reshape_alias", "aten::view", "aten::to"))
    mine, theirs = rows(ember), rows(torch)
    assert mine == theirs
    assert ("aten::masked_fill_", "[[2, 3], [2, 3], []]", "StdBackward0") in mine


@needs_torch
def test_reduction_gradients_match_torch():
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(np.linspace(-2, 3, 24).reshape(2, 3, 4), requires_grad=True)
        y = lib.tensor([[1.0, 1.0, 0.5, 1.0]], requires_grad=True)
        (x.amax(1).sum() + x.amin(dim=(0, 2)).sum() * 2 + x.var(1).sum() +
         x.std(-1, keepdim=True).sum() + x.logsumexp((0, 2)).sum() + y.amax(1).sum() +
         (x * 0).std(0).sum()).backward()
        grads.append((x.grad.numpy(), y.grad.numpy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def _max_dim_gradients(lib):
    x = lib.tensor(np.arange(24.0).reshape(2, 3, 4), requires_grad=True)

    def fn():
        (x.max(1)[0].sum() + x.min(2, keepdim=True)[0].sum()).backward()
    return fn


@needs_torch
def test_max_dim_gradient_rows_as_torch():
    wanted = {"MaxBackward0", "MinBackward0", "aten::value_selecting_reduction_backward"}
    rows = _same_rows(_max_dim_gradients, wanted)
    assert rows[("aten::scatter_", "[[2, 3, 4], [], [2, 1, 4], [2, 1, 4]]",
                 "aten::value_selecting_reduction_backward")] == 1
