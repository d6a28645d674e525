"""Rows of a profile read the way PyTorch's read (session 15): a convolution's levels down to
PyTorch's CPU kernel (``aten::mkldnn_convolution`` for float32, the slow kernels otherwise),
batch norm's ``aten::_batch_norm_impl_index``, ``std_mean``/``var_mean`` as one op each,
the smooth L1 and Huber losses' backward ops, and what ``AccumulateGrad`` runs to keep a
leaf's first gradient (``aten::detach`` > ``detach`` when it keeps the buffer, a
``new_empty_strided`` and a ``copy_`` when it copies). Comparisons with PyTorch skip
without it; the structure checks run either way."""

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # the structure checks below still run
    torch = None

from .test_rows_session13 import _profile, _rows, _same_rows  # noqa: E402

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def _parents(prof, name):
    return [e.cpu_parent.name if e.cpu_parent else None
            for e in prof.events() if e.name == name]


# -- convolution and batch norm levels --------------------------------------------------------


_CONV_ROWS = {"aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::conv_transpose1d",
              "aten::convolution", "aten::_convolution", "aten::mkldnn_convolution",
              "aten::thnn_conv2d", "aten::_slow_conv2d_forward", "aten::slow_conv3d",
              "aten::slow_conv3d_forward", "aten::batch_norm",
              "aten::_batch_norm_impl_index", "aten::native_batch_norm"}


def _convs(lib, st):
    F = lib.nn.functional
    x = lib.randn(2, 3, 8, 8)
    F.conv2d(x, lib.randn(4, 3, 3, 3), lib.randn(4), stride=2, padding=1)
    F.conv2d(x.double(), lib.randn(4, 3, 3, 3).double(), padding=1)
    F.conv1d(lib.randn(2, 3, 8), lib.randn(4, 3, 3), dilation=2)
    F.conv1d(lib.randn(2, 3, 8).double(), lib.randn(4, 3, 3).double())
    F.conv3d(lib.randn(2, 3, 4, 4, 4), lib.randn(4, 3, 3, 3, 3))
    F.conv3d(lib.randn(2, 3, 4, 4, 4).double(), lib.randn(4, 3, 3, 3, 3).double())
    F.conv_transpose1d(lib.randn(2, 3, 8), lib.randn(3, 4, 3), stride=2, output_padding=1)
    F.batch_norm(lib.randn(2, 3, 4), lib.zeros(3), lib.ones(3), lib.ones(3), lib.zeros(3),
                 training=True)
    F.batch_norm(lib.randn(2, 3, 4), lib.zeros(3), lib.ones(3))


@needs_torch
def test_convolution_and_batch_norm_levels_as_torch():
    _same_rows(_convs, None, _CONV_ROWS)


@needs_torch
def test_convolution_levels_arguments_as_torch():
    names = _CONV_ROWS - {"aten::batch_norm", "aten::_batch_norm_impl_index",
                          "aten::native_batch_norm"}

    def run(lib):
        return [(e.name, e.input_shapes, e.concrete_inputs)
                for e in _profile(lib, _convs).events() if e.name in names]

    assert run(ember) == run(torch)


def test_convolution_levels_nest_around_one_kernel():
    prof = _profile(ember, _convs, with_flops=True)
    assert _parents(prof, "aten::mkldnn_convolution") == ["aten::_convolution"] * 3
    assert _parents(prof, "aten::_convolution") == ["aten::convolution"] * 7
    assert _parents(prof, "aten::_slow_conv2d_forward") == ["aten::thnn_conv2d"] * 2
    assert _parents(prof, "aten::native_batch_norm") == ["aten::_batch_norm_impl_index"] * 2
    # the flops stay on the named convolution, as PyTorch counts them
    conv = next(e for e in prof.events() if e.name == "aten::conv2d")
    assert conv.flops > 0
    assert all(e.flops == 0 for e in prof.events() if e.name == "aten::mkldnn_convolution")
    # the one kernel's time is the innermost level's
    kernel = next(e for e in prof.events() if e.name == "aten::mkldnn_convolution")
    level = kernel.cpu_parent
    assert level.time_range.start <= kernel.time_range.start
    assert kernel.time_range.end <= level.time_range.end


def test_convolution_unchanged_by_the_profiler():
    ember.manual_seed(0)
    x, w, b = ember.randn(2, 3, 8, 8), ember.randn(4, 3, 3, 3), ember.randn(4)
    plain = ember.nn.functional.conv2d(x, w, b, padding=1)
    with ember.profiler.profile(record_shapes=True):
        seen = ember.nn.functional.conv2d(x, w, b, padding=1)
    assert ember.equal(plain, seen)


# -- std_mean, var_mean -----------------------------------------------------------------------


def _moments(lib, x):
    lib.std_mean(x, 1)
    lib.var_mean(x, dim=0, unbiased=False)
    lib.std_mean(x)
    lib.std_mean(x, unbiased=False)
    lib.var_mean(x, (0, 1), correction=0, keepdim=True)
    lib.var_mean(x, 1)[1].sum().backward()


@needs_torch
def test_std_mean_is_one_op_as_torch():
    names = {"aten::std_mean", "aten::var_mean", "aten::std", "aten::var"}
    _same_rows(_moments, lambda lib: lib.randn(4, 3, requires_grad=True), names)

    def run(lib):
        prof = _profile(lib, _moments, lambda lib: lib.randn(4, 3, requires_grad=True))
        return [(e.name, e.concrete_inputs) for e in prof.events() if e.name in names]

    assert run(ember) == run(torch)


def test_std_mean_event_holds_its_work():
    prof = _profile(ember, _moments, lambda lib: lib.randn(4, 3, requires_grad=True))
    tops = [e.name for e in prof.events() if e.cpu_parent is None and "_mean" in e.name]
    assert tops == ["aten::std_mean", "aten::var_mean", "aten::std_mean", "aten::std_mean",
                    "aten::var_mean", "aten::var_mean"]
    inside = [e for e in prof.events() if e.cpu_parent is not None and
              e.cpu_parent.name in ("aten::std_mean", "aten::var_mean")]
    assert inside == []
    # the forward event carries the node's number (the trace's flow arrow starts there)
    assert all(e.sequence_nr >= 0 for e in prof.events() if e.name == "aten::var_mean")
    x = ember.randn(5, 4)
    plain = ember.std_mean(x, 0)
    with ember.profiler.profile():
        seen = ember.std_mean(x, 0)
    assert all(ember.equal(a, b) for a, b in zip(plain, seen))
    with ember.profiler.profile(), pytest.raises(IndexError):   # (as PyTorch's)
        ember.var_mean(x, 5)


# -- smooth L1, Huber -------------------------------------------------------------------------


def _losses(lib, st):
    a, b = st
    F = lib.nn.functional
    F.smooth_l1_loss(a, b, beta=0.5).backward()
    F.huber_loss(a, b, delta=2.0).backward()
    F.smooth_l1_loss(a, b, reduction="sum").backward()
    F.huber_loss(a, b, reduction="none").sum().backward()


@needs_torch
def test_smooth_l1_and_huber_backward_ops_as_torch():
    names = {"aten::smooth_l1_loss_backward", "aten::huber_loss_backward",
             "SmoothL1LossBackward0", "HuberLossBackward0"}
    setup = lambda lib: (lib.randn(4, 3, requires_grad=True), lib.randn(4, 3))  # noqa: E731
    _same_rows(_losses, setup, names | {"aten::where", "aten::sign", "aten::abs"})

    def run(lib):
        prof = _profile(lib, _losses, setup)
        return [(e.name, e.concrete_inputs) for e in prof.events() if e.name in names]

    assert run(ember) == run(torch)


def test_loss_backward_gradients_unchanged_by_the_profiler():
    ember.manual_seed(0)
    a, b = ember.randn(6, requires_grad=True), ember.randn(6)
    for fn in (ember.nn.functional.smooth_l1_loss, ember.nn.functional.huber_loss):
        fn(a, b).backward()
        plain, a.grad = a.grad, None
        with ember.profiler.profile():
            fn(a, b).backward()
        assert ember.equal(plain, a.grad)
        a.grad = None


# -- AccumulateGrad ---------------------------------------------------------------------------


_ACCUMULATE_ROWS = {"aten::detach", "detach", "aten::new_empty_strided", "aten::empty_strided",
                    "aten::copy_", "aten::add_"}


def _leaf_grads(lib, st):
    x = lib.randn(4, 3, requires_grad=True)
    (x * 2).sum().backward()              # kept: detach
    (x * 2).sum().backward()              # added in place
    y = lib.randn(4, 3, requires_grad=True)
    (y.t() * 2).sum().backward()          # a transposed gradient: copied
    z = lib.randn(4, 3, requires_grad=True)
    held = lib.ones(4, 3)
    (z + 0).backward(held)                # a gradient someone holds: copied


@needs_torch
def test_accumulate_grad_rows_as_torch():
    def run(lib):
        # (PyTorch's other ops run ``empty_strided`` and ``copy_`` inside their kernels)
        inside = ("torch::autograd::AccumulateGrad", "aten::detach", "aten::new_empty_strided")
        return {k: v for k, v in _rows(_profile(lib, _leaf_grads), _ACCUMULATE_ROWS).items()
                if k[2] in inside}

    mine = run(ember)
    assert mine == run(torch)
    assert sum(mine.values()) == 9


def test_accumulate_grad_rows_nest_in_its_node():
    prof = _profile(ember, _leaf_grads)
    assert _parents(prof, "detach") == ["aten::detach"]
    assert _parents(prof, "aten::detach") == ["torch::autograd::AccumulateGrad"]
    assert _parents(prof, "aten::empty_strided") == ["aten::new_empty_strided"] * 2
    assert _parents(prof, "aten::copy_") == ["torch::autograd::AccumulateGrad"] * 2
    copy = next(e for e in prof.events() if e.name == "aten::copy_")
    assert copy.input_shapes == [[4, 3], [4, 3], []]
    new = next(e for e in prof.events() if e.name == "aten::new_empty_strided")
    assert new.concrete_inputs[1:3] == [[4, 3], [3, 1]]


def test_accumulate_grad_values_unchanged_by_the_profiler():
    x = ember.randn(4, 3, requires_grad=True)
    with ember.profiler.profile(record_shapes=True, profile_memory=True):
        (x.t() * 2).sum().backward()
        (x * 3).sum().backward()
    assert np.array_equal(x.grad.numpy(), np.full((4, 3), 5.0, np.float32))
    assert x.grad.stride() == (3, 1)


# -- a TensorDataset batched by default_collate -----------------------------------------------


def _loader(lib):
    ds = lib.utils.data.TensorDataset(lib.randn(8, 3), lib.arange(8))
    return lib.utils.data.DataLoader(ds, batch_size=4)


def _batches(lib, loader):
    for _batch in loader:
        pass


@needs_torch
def test_tensor_dataset_batches_as_torch():
    # an index per sample, then default_collate's stack (PyTorch's stack runs a cat inside)
    _same_rows(_batches, _loader, {"aten::select", "aten::stack", "aten::index_select",
                                   "aten::tensor"})


def test_tensor_dataset_batches_unchanged_by_the_profiler():
    ember.manual_seed(0)
    loader = _loader(ember)
    plain = [b for b in loader]
    with ember.profiler.profile():
        seen = [b for b in loader]
    assert len(plain) == len(seen) == 2
    for (x0, y0), (x1, y1) in zip(plain, seen):
        assert ember.equal(x0, x1) and ember.equal(y0, y1) and y1.dtype == ember.int64
    prof = _profile(ember, _batches, _loader)
    assert _parents(prof, "aten::stack") == \
        ["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"] * 4


# -- sub, rsub --------------------------------------------------------------------------------


def _subs(lib, st):
    a, b = st
    (a - b).sum().backward()              # ``b`` takes no gradient: no negation for it
    (b - a).sum().backward()
    lib.sub(a, b, alpha=2).sum().backward()
    (1 - a).sum().backward()              # ``rsub`` around ``sub``
    lib.rsub(a, 3, alpha=2).sum().backward()


@needs_torch
def test_sub_rows_as_torch():
    setup = lambda lib: (lib.randn(4, 3, requires_grad=True), lib.randn(4, 3))  # noqa: E731
    _same_rows(_subs, setup, {"aten::neg", "aten::mul", "aten::sub", "aten::rsub",
                              "SubBackward0", "RsubBackward1", "NegBackward0"})

    def run(lib):
        prof = _profile(lib, _subs, setup)
        return [(e.name, e.concrete_inputs) for e in prof.events()
                if e.name in ("aten::rsub", "aten::sub")]

    assert run(ember) == run(torch)


def test_sub_gradients_only_where_needed():
    a, b = ember.randn(5, requires_grad=True), ember.randn(5)
    (a - b).sum().backward()
    assert a.grad.eq(1).all() and b.grad is None
    b.requires_grad_()
    a.grad = None
    ember.sub(a, b, alpha=3).sum().backward()
    assert a.grad.eq(1).all() and b.grad.eq(-3).all()
    (2 - b).sum().backward()
    assert b.grad.eq(-4).all()
    prof = _profile(ember, _subs, lambda lib: (lib.randn(4, 3, requires_grad=True),
                                               lib.randn(4, 3)))
    assert _parents(prof, "aten::sub")[-2:] == ["aten::rsub"] * 2
    # of the subtractions, only ``b - a`` negates: its second operand takes a gradient
    assert _parents(prof, "aten::neg") == ["SubBackward0", "RsubBackward1", "RsubBackward1"]


# -- recurrent layers -------------------------------------------------------------------------


def _recurrences(lib, st):
    lstm, gru, rnn_relu, rnn, x = st
    lstm(x)
    gru(x.transpose(0, 1))
    rnn_relu(x)
    rnn(x, lib.zeros(1, 2, 4))


def _recurrent_layers(lib):
    return (lib.nn.LSTM(3, 4, 2), lib.nn.GRU(3, 4, batch_first=True),
            lib.nn.RNN(3, 4, nonlinearity="relu"), lib.nn.RNN(3, 4), lib.randn(5, 2, 3))


@needs_torch
def test_recurrent_layer_events_as_torch():
    # ``gru``/``rnn_tanh``/``rnn_relu`` take the initial state as one Tensor, ``lstm`` a list
    names = {"aten::lstm", "aten::gru", "aten::rnn_tanh", "aten::rnn_relu"}
    _same_rows(_recurrences, _recurrent_layers, names)

    def run(lib):
        prof = _profile(lib, _recurrences, _recurrent_layers)
        return [(e.name, e.concrete_inputs) for e in prof.events() if e.name in names]

    assert run(ember) == run(torch)


def test_recurrent_layer_events_list_the_state():
    prof = _profile(ember, _recurrences, _recurrent_layers)
    shapes = {e.name: e.input_shapes[1] for e in prof.events()
              if e.name in ("aten::lstm", "aten::gru", "aten::rnn_tanh")}
    assert shapes == {"aten::lstm": [], "aten::gru": [1, 2, 4], "aten::rnn_tanh": [1, 2, 4]}


# -- reshape, and attention's output layout ---------------------------------------------------


def _reshapes(lib, x):
    x.reshape(2, 12)                                   # contiguous: a view
    x.t().reshape(6, 4)                                # viewable by strides: _reshape_alias
    x.unsqueeze(0).permute(1, 0, 2).reshape(4, 6)      # contiguous but for a size-1 dim
    x.view(2, 2, 6).permute(1, 0, 2).reshape(2, 2, 3, 2)
    x.t().reshape(24)                                  # a copy: clone and _unsafe_view
    x.flatten()                                        # (no reshape event of its own)
    x.view(2, 2, 6).permute(1, 0, 2).flatten(1)
    x.unflatten(1, (2, 3))
    (x.reshape(2, 12) * 2).sum().backward()          # ViewBackward0's reshape > view


@needs_torch
def test_reshape_rows_as_torch():
    names = {"aten::reshape", "aten::view", "aten::_reshape_alias", "aten::clone",
             "aten::_unsafe_view", "aten::flatten", "aten::unflatten", "ViewBackward0"}
    setup = lambda lib: lib.randn(4, 6, requires_grad=True)  # noqa: E731
    _same_rows(_reshapes, setup, names)

    def run(lib):
        prof = _profile(lib, _reshapes, setup)
        return [(e.name, e.concrete_inputs) for e in prof.events()
                if e.name in ("aten::_reshape_alias", "aten::view")]

    assert run(ember) == run(torch)


def test_reshape_unchanged_by_the_profiler():
    x = ember.randn(4, 6)
    plain = [x.t().reshape(6, 4), x.t().reshape(24), x.view(2, 2, 6).permute(1, 0, 2).flatten(1)]
    with ember.profiler.profile(record_shapes=True):
        seen = [x.t().reshape(6, 4), x.t().reshape(24),
                x.view(2, 2, 6).permute(1, 0, 2).flatten(1)]
    for a, b in zip(plain, seen):
        assert ember.equal(a, b) and a.stride() == b.stride()
    assert seen[0]._base is x    # (still a view)


@needs_torch
@pytest.mark.parametrize("memory, perm", [((2, 3, 5, 4), (0, 1, 2, 3)),
                                          ((2, 5, 3, 4), (0, 2, 1, 3)),
                                          ((5, 2, 3, 4), (1, 2, 0, 3)),
                                          ((3, 2, 5, 4), (1, 0, 2, 3))])
def test_attention_output_follows_the_query_layout_as_torch(memory, perm):
    # PyTorch's CPU kernel lays its output out as the query (so MultiheadAttention's
    # ``permute(2, 0, 1, 3)`` and reshape view it without a copy)
    g = torch.Generator().manual_seed(0)
    q = torch.randn(*memory, generator=g).permute(*perm)
    k, v = torch.randn(2, 3, 6, 4, generator=g), torch.randn(2, 3, 6, 4, generator=g)
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    eq = ember.tensor(np.ascontiguousarray(q.permute(*np.argsort(perm)).numpy())).permute(*perm)
    assert eq.stride() == q.stride()
    got = ember.nn.functional.scaled_dot_product_attention(
        eq, ember.tensor(k.numpy()), ember.tensor(v.numpy()))
    assert got.stride() == want.stride()
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-6)
