"""Ops ember runs as one kernel are recorded under PyTorch's outer event with the child
that does the kernel's work (NOTE [ Composite op events ] in ember/profiler/_recorder.py)."""

import pytest

import ember

torch = pytest.importorskip("torch")

_SKIP = ("aten::randn", "aten::zeros", "aten::ones", "aten::rand", "aten::tensor")


def _tree(lib, fn, keep):
    """Top-level events and their children's names, children filtered to ``keep``."""
    with lib.profiler.profile() as prof:
        fn(lib)
    return [(e.name, [c.name for c in e.cpu_children if c.name in keep])
            for e in prof.events() if e.cpu_parent is None and e.name not in _SKIP]


def _same_as_torch(fn, keep=()):
    mine = _tree(ember, fn, keep)
    theirs = _tree(torch, fn, keep)
    assert mine == theirs


def test_linear_with_bias_outer_and_addmm():
    _same_as_torch(lambda lib: lib.nn.functional.linear(
        lib.ones(2, 4), lib.ones(3, 4), lib.ones(3)), keep=("aten::addmm",))


def test_linear_without_bias_records_linear_matmul_mm():
    def chain(lib):
        with lib.profiler.profile() as prof:
            lib.nn.functional.linear(lib.ones(2, 4), lib.ones(3, 4))
        out = []
        e = next(e for e in prof.events() if e.name == "aten::linear")
        while e is not None:
            out.append(e.name)
            e = next((c for c in e.cpu_children if c.name in ("aten::matmul", "aten::mm")),
                     None)
        return out
    assert chain(ember) == chain(torch) == ["aten::linear", "aten::matmul", "aten::mm"]


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_outer_names_by_dimension(nd):
    def fn(lib):
        conv = getattr(lib.nn.functional, f"conv{nd}d")
        return conv(lib.ones((1, 2) + (5,) * nd), lib.ones((3, 2) + (3,) * nd))
    _same_as_torch(fn, keep=("aten::convolution",))


def test_conv_transpose_outer_name():
    _same_as_torch(lambda lib: lib.nn.functional.conv_transpose2d(
        lib.ones(1, 2, 4, 4), lib.ones(2, 3, 3, 3)), keep=("aten::convolution",))


def test_layer_norm_outer_and_native():
    _same_as_torch(lambda lib: lib.nn.functional.layer_norm(lib.ones(2, 4), (4,)),
                   keep=("aten::native_layer_norm",))


def test_batch_norm_outer_name():
    def fn(lib):
        return lib.nn.functional.batch_norm(lib.ones(2, 3, 4), lib.zeros(3), lib.ones(3))
    # (PyTorch's ``_batch_norm_impl_index`` level between: session 15)
    keep = ("aten::_batch_norm_impl_index",)
    mine = _tree(ember, fn, keep)
    assert mine[0] == ("aten::batch_norm", ["aten::_batch_norm_impl_index"])
    assert _tree(torch, fn, keep)[0] == mine[0]


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_outer_and_kernel_child(name):
    _same_as_torch(lambda lib: getattr(lib.nn.functional, name)(lib.ones(2, 3), -1),
                   keep=("aten::_softmax", "aten::_log_softmax"))


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_pool_names_and_indices_child(nd):
    def fn(lib):
        pool = getattr(lib.nn.functional, f"max_pool{nd}d")
        return pool(lib.ones((1, 2) + (4,) * nd), 2)
    _same_as_torch(fn, keep=("aten::max_pool2d_with_indices",
                             "aten::max_pool3d_with_indices"))


@pytest.mark.parametrize("shape", [(2, 5), (2, 5, 3, 3)])
def test_nll_loss_outer_nd(shape):
    def fn(lib):
        target = lib.zeros((shape[0],) + shape[2:], dtype=lib.int64)
        return lib.nn.functional.nll_loss(lib.ones(shape), target)
    _same_as_torch(fn, keep=("aten::nll_loss", "aten::nll_loss2d"))


def test_cross_entropy_runs_torchs_two_ops_under_the_profiler():
    # NOTE [ Cross entropy under the profiler ] in ember/_ops/nn_ops.py
    x, y = {}, {}
    for lib in (ember, torch):
        x[lib], y[lib] = lib.ones(2, 5), lib.tensor([1, 0])
    _same_as_torch(lambda lib: lib.nn.functional.cross_entropy(x[lib], y[lib]),
                   keep=("aten::log_softmax", "aten::nll_loss_nd"))


def test_composite_child_inside_outer_and_self_time_on_child():
    x = ember.randn(8, 16)
    w = ember.randn(32, 16)
    with ember.profiler.profile() as prof:
        ember.nn.functional.linear(x, w, ember.zeros(32))
    outer = next(e for e in prof.events() if e.name == "aten::linear")
    # PyTorch's composite, run for real (NOTE [ Linear under the profiler ])
    assert [c.name for c in outer.cpu_children] == ["aten::t", "aten::addmm"]
    child = outer.cpu_children[1]
    assert outer.time_range.start <= child.time_range.start
    assert child.time_range.end <= outer.time_range.end
    assert outer.self_cpu_time_total <= outer.cpu_time_total


def test_backward_ops_keep_their_names():
    x = ember.randn(1, 2, 5, 5, requires_grad=True)
    w = ember.randn(3, 2, 3, 3, requires_grad=True)
    y = ember.nn.functional.conv2d(x, w)
    with ember.profiler.profile() as prof:
        y.sum().backward()
    names = {e.name for e in prof.events()}
    assert "aten::conv2d" not in names and "aten::conv_transpose2d" not in names
    assert "ConvolutionBackward0" in names


def test_composite_with_record_shapes_and_grad_sequence():
    x = ember.randn(2, 4)
    lin = ember.nn.Linear(4, 3)
    with ember.profiler.profile(record_shapes=True) as prof:
        lin(x)
    outer = next(e for e in prof.events() if e.name == "aten::linear")
    child = next(c for c in outer.cpu_children if c.name == "aten::addmm")
    assert outer.input_shapes == [[2, 4], [3, 4], [3]]
    # as PyTorch's addmm(bias, input, weight.t()) receives them
    assert child.input_shapes == [[3], [2, 4], [4, 3], [], []]
    # as in PyTorch, the outer event carries a node's sequence number too
    assert child.sequence_nr >= 0 and outer.sequence_nr == child.sequence_nr


def test_training_step_table_keys_overlap_torch():
    def step(lib):
        lib.manual_seed(0)
        F = lib.nn.functional
        conv = lib.nn.Conv2d(3, 4, 3)
        bn = lib.nn.BatchNorm2d(4)
        fc = lib.nn.Linear(4 * 3 * 3, 5)
        with lib.profiler.profile() as prof:
            h = F.max_pool2d(F.relu(bn(conv(lib.randn(2, 3, 8, 8)))), 2)
            loss = F.cross_entropy(fc(lib.flatten(h, 1)), lib.tensor([1, 2]))
            loss.backward()
        return {e.key for e in prof.key_averages()}
    mine, theirs = step(ember), step(torch)
    for key in ("aten::conv2d", "aten::convolution", "aten::batch_norm",
                "aten::native_batch_norm", "aten::max_pool2d",
                "aten::max_pool2d_with_indices", "aten::linear", "aten::addmm",
                "aten::cross_entropy_loss", "AddmmBackward0", "ConvolutionBackward0"):
        assert key in mine and key in theirs, key


@pytest.mark.parametrize("shape", [(2, 2, 4, 8), (2, 4, 8)])
def test_sdpa_outer_and_cpu_kernel_child(shape):
    def fn(lib):
        q = lib.ones(shape)
        return lib.nn.functional.scaled_dot_product_attention(q, q, q)
    keep = ("aten::_scaled_dot_product_flash_attention_for_cpu",
            "aten::_scaled_dot_product_attention_math")
    _same_as_torch(fn, keep=keep)


def test_embedding_outer_and_index_select():
    def fn(lib):
        return lib.nn.functional.embedding(lib.tensor([[1, 2], [0, 1]]), lib.ones(4, 3))
    mine = _tree(ember, fn, ("aten::index_select",))
    theirs = _tree(torch, fn, ("aten::index_select",))
    assert mine[-1] == theirs[-1] == ("aten::embedding", ["aten::index_select"])
