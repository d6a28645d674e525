"""Profiler programs written as PyTorch's recipe writes them, read the way users read them:
LSTM layers (NOTE [ LSTM layers under the profiler ]), basic indexing (NOTE [ Basic indexing
under the profiler ]), the engine's gradient sums beside their node (NOTE [ Input buffers ]),
AccumulateGrad's ``add_``, embedding's child op, and optimizer steps (NOTE [ Fused kernels
under the profiler ]). Comparisons with PyTorch skip without it; the structure checks run
either way."""

import collections

import pytest

import ember

try:
    import torch
except ImportError:  # the structure checks below still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

#: PyTorch's allocation and bookkeeping ops, which ember's kernels do not run as ops
_INTERNAL = {"aten::empty", "aten::empty_strided", "aten::empty_like", "aten::as_strided",
             "aten::resolve_conj", "aten::copy_", "aten::detach", "detach", "aten::fill_",
             "aten::zero_", "aten::to", "aten::_to_copy", "aten::clone", "aten::ones_like",
             "aten::zeros_like", "aten::expand", "aten::transpose", "aten::view",
             "aten::_reshape_alias", "aten::contiguous", "aten::cudnn_is_acceptable",
             "aten::cat", "aten::unsqueeze", "aten::normal_"}


def _rows(prof):
    """{(name, input shapes): count} of a profile, PyTorch's internal ops left out."""
    return collections.Counter({
        (e.key, str(e.input_shapes)): e.count
        for e in prof.key_averages(group_by_input_shape=True) if e.key not in _INTERNAL})


def _parent_names(prof, name):
    return sorted({e.cpu_parent.name if e.cpu_parent is not None else None
                   for e in prof.events() if e.name == name})


# -- LSTM ------------------------------------------------------------------------------------


def _lstm_program(lib, **kw):
    lib.manual_seed(0)
    rnn = lib.nn.LSTM(4, 5, 2, **kw)
    x = lib.randn(2, 3, 4) if kw.get("batch_first") else lib.randn(3, 2, 4)
    rnn(x)[0].sum().backward()
    with lib.profiler.profile(record_shapes=True) as prof:
        out, _ = rnn(x)
        out.sum().backward()
    return prof, out


@needs_torch
@pytest.mark.parametrize("kw", [{}, {"batch_first": True}])
def test_lstm_rows_as_torch(kw):
    mine, theirs = _rows(_lstm_program(ember, **kw)[0]), _rows(_lstm_program(torch, **kw)[0])
    for (key, shapes), n in theirs.items():
        if key == "aten::mkldnn_rnn_layer_backward":
            # ember's layer keeps no oneDNN workspace: its last argument is listed empty
            shapes = shapes.rsplit(", [", 1)[0] + ", []]"
        if key.startswith(("aten::lstm", "aten::mkldnn_rnn", "aten::select", "aten::stack",
                           "MkldnnRnnLayerBackward0", "aten::sum", "aten::add_")) or \
                key == "autograd::engine::evaluate_function: MkldnnRnnLayerBackward0":
            assert mine.get((key, shapes)) == n, (key, shapes, mine)


@needs_torch
def test_lstm_node_named_as_torch():
    mine, theirs = _lstm_program(ember)[1], _lstm_program(torch)[1]
    assert mine.grad_fn.name() == theirs.grad_fn.name() == "MkldnnRnnLayerBackward0"


def test_lstm_events_nest_as_torch():
    prof, _ = _lstm_program(ember)
    assert _parent_names(prof, "aten::mkldnn_rnn_layer") == ["aten::lstm"]
    assert _parent_names(prof, "aten::mkldnn_rnn_layer_backward") == \
        ["MkldnnRnnLayerBackward0"]
    assert [e.count for e in prof.key_averages() if e.key == "aten::lstm"] == [1]
    lstm = next(e for e in prof.events() if e.name == "aten::lstm")
    assert lstm.input_shapes[0] == [3, 2, 4] and len(lstm.input_shapes) == 9



def _embedding_lstm_program(lib):
    # an embedding's rows feed the first layer: with a vocabulary at most half the tokens,
    # ember's layer reads the embedding table instead of the rows (bench's LSTM language
    # model)
    lib.manual_seed(0)
    emb, rnn = lib.nn.Embedding(3, 4), lib.nn.LSTM(4, 5, 2)
    tokens = lib.tensor([[1, 2], [0, 0], [2, 1]])
    with lib.profiler.profile(record_shapes=True) as prof:
        out, _ = rnn(emb(tokens))
        out.sum().backward()
    return prof


def test_lstm_on_embedding_rows_profiled():
    rows = _rows(_embedding_lstm_program(ember))
    backward = [shapes for key, shapes in rows if key == "aten::mkldnn_rnn_layer_backward"]
    assert len(backward) == 2 and all(s.startswith("[[3, 2, 4], ") or
                                      s.startswith("[[3, 2, 5], ") for s in backward)
    if torch is not None:
        theirs = _rows(_embedding_lstm_program(torch))
        for (key, shapes), n in theirs.items():
            if key == "aten::mkldnn_rnn_layer_backward":
                shapes = shapes.rsplit(", [", 1)[0] + ", []]"
                assert rows.get((key, shapes)) == n, (key, shapes, rows)

def test_gru_recorded_as_one_op():
    ember.manual_seed(0)
    gru, x = ember.nn.GRU(4, 5), ember.randn(3, 2, 4)
    with ember.profiler.profile() as prof:
        gru(x)
    assert [e.count for e in prof.key_averages() if e.key == "aten::gru"] == [1]
    assert "aten::gru" in _parent_names(prof, "aten::linear")


def test_lstm_unprofiled_result_unchanged():
    ember.manual_seed(0)
    rnn, x = ember.nn.LSTM(4, 5, 2), ember.randn(3, 2, 4)
    plain = rnn(x)
    with ember.profiler.profile(record_shapes=True):
        profiled = rnn(x)
    assert ember.equal(plain[0], profiled[0]) and ember.equal(plain[1][1], profiled[1][1])


# -- basic indexing, views inside nodes, gradient sums ----------------------------------------


def _index_program(lib):
    lib.manual_seed(0)
    a = lib.randn(5, 3, requires_grad=True)
    with lib.profiler.profile(record_shapes=True) as prof:
        b, s, e, u = a[3], a[1:3], a[..., 1], a.unsqueeze(0)
        (b.sum() + s.sum() + e.sum() + u.sum()).backward()
    return prof


def _event_rows(prof):
    """{(name, input shapes): count} of the events not inside PyTorch's
    ``select_backward``/``slice_backward`` (which build their result with a ``select`` or
    ``slice`` of zeros: ember's kernel writes into the zeros directly)."""
    inner = ("aten::select_backward", "aten::slice_backward")
    return collections.Counter(
        (e.name, str(e.input_shapes)) for e in prof.events()
        if e.cpu_parent is None or e.cpu_parent.name not in inner)


@needs_torch
def test_basic_index_rows_as_torch():
    mine, theirs = _event_rows(_index_program(ember)), _event_rows(_index_program(torch))
    wanted = ("aten::select", "aten::slice", "aten::select_backward", "aten::slice_backward",
              "aten::squeeze", "aten::add_", "SelectBackward0", "SliceBackward0",
              "UnsqueezeBackward0")
    for (key, shapes), n in theirs.items():
        if key in wanted:
            assert mine.get((key, shapes)) == n, (key, shapes, mine)


def test_index_events_named_as_torch():
    prof = _index_program(ember)
    names = collections.Counter(e.name for e in prof.events())
    assert names["aten::select"] == 2 and names["aten::slice"] == 1
    assert names["aten::index"] == 0 and names["aten::_getitem_backward"] == 0
    assert _parent_names(prof, "aten::select_backward") == ["SelectBackward0"]
    assert _parent_names(prof, "aten::slice_backward") == ["SliceBackward0"]
    assert _parent_names(prof, "aten::squeeze") == ["UnsqueezeBackward0"]
    sl = next(e for e in prof.events() if e.name == "aten::slice")
    assert sl.input_shapes == [[5, 3], [], [], [], []]


def test_gradient_sums_sit_beside_the_node():
    # ``a`` reaches the loss along four edges: the engine adds the gradients in place, as
    # ``aten::add_`` inside ``evaluate_function``, after the node's own event
    prof = _index_program(ember)
    parents = _parent_names(prof, "aten::add_")
    assert parents and all(p.startswith("autograd::engine::evaluate_function: ")
                           for p in parents)


def test_advanced_and_multi_item_keys_keep_their_event():
    a = ember.randn(4, 3)
    with ember.profiler.profile() as prof:
        a[ember.tensor([0, 2])]
        a[1:3, 0]
    names = [e.name for e in prof.events()]
    assert "aten::select" not in names and "aten::slice" not in names


# -- AccumulateGrad, embedding -----------------------------------------------------------------


def _accumulate_program(lib):
    w = lib.ones(3, 2, requires_grad=True)
    (w * 2).sum().backward()
    with lib.profiler.profile(record_shapes=True) as prof:
        (w * 3).sum().backward()
    return prof, w


@needs_torch
def test_accumulate_grad_adds_as_torch():
    (mine, w), (theirs, _) = _accumulate_program(ember), _accumulate_program(torch)
    key = ("aten::add_", "[[3, 2], [3, 2], []]")
    assert _rows(mine)[key] == _rows(theirs)[key] == 1
    assert w.grad.tolist() == [[5.0, 5.0]] * 3


def test_accumulate_grad_add_is_its_child():
    prof, _ = _accumulate_program(ember)
    assert _parent_names(prof, "aten::add_") == ["torch::autograd::AccumulateGrad"]
    with ember.profiler.profile() as prof:   # a first gradient is stored, not added
        (ember.ones(2, requires_grad=True) * 2).sum().backward()
    assert "aten::add_" not in {e.name for e in prof.events()}


@needs_torch
def test_embedding_child_takes_flat_indices():
    def rows(lib):
        lib.manual_seed(0)
        emb = lib.nn.Embedding(10, 4)
        idx = lib.tensor([[1, 2, 3], [4, 5, 6]])
        with lib.profiler.profile(record_shapes=True) as prof:
            emb(idx)
        return _rows(prof)
    mine, theirs = rows(ember), rows(torch)
    for key in (("aten::embedding", "[[10, 4], [2, 3], [], [], []]"),
                ("aten::index_select", "[[10, 4], [], [6]]")):
        assert mine[key] == theirs[key] == 1


# -- optimizer steps ---------------------------------------------------------------------------


def _adamw(foreach):
    ember.manual_seed(0)
    m = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.ReLU(), ember.nn.Linear(16, 4))
    opt = ember.optim.AdamW(m.parameters(), lr=0.01, foreach=foreach)
    x = ember.randn(5, 8)
    for _ in range(2):
        opt.zero_grad()
        m(x).pow(2).mean().backward()
        opt.step()
    opt.zero_grad()
    m(x).pow(2).mean().backward()
    return m, opt


@pytest.mark.parametrize("foreach", [None, False])
def test_adamw_step_lists_what_runs_and_changes_nothing(foreach):
    (m1, o1), (m2, o2) = _adamw(foreach), _adamw(foreach)
    o1.step()
    with ember.profiler.profile(record_shapes=True) as prof:
        o2.step()
    for p, q in zip(m1.parameters(), m2.parameters()):
        # (equal up to rounding: without the compiled kernel the loop's ``addcmul_`` takes
        # a fast path unprofiled that multiplies in another order than its kernel)
        assert ember.allclose(p, q, rtol=1e-6, atol=1e-7)
    names = collections.Counter(e.name for e in prof.events())
    assert names["Optimizer.step#AdamW.step"] == 1
    if names["aten::_fused_adamw_"]:
        # the kernel ran (NOTE [ Fused kernels under the profiler ]): nothing of the
        # unfused loop is listed beside it
        assert names["aten::lerp_"] == names["aten::addcdiv_"] == 0
        if foreach is False:
            assert names["aten::_fused_adamw_"] == 4
    else:
        # no kernel here: the loop's ops, one per parameter or per flat bucket
        assert names["aten::lerp_"] == names["aten::addcdiv_"] >= 1
