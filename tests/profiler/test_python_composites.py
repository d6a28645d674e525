"""Functions ember composes in Python where PyTorch calls one op are recorded as that op's
event, with the ops ember runs nested under it (``recorded_as``; NOTE [ Composite op events ]
in ember/profiler/_recorder.py)."""

import json

import pytest

import ember

torch = pytest.importorskip("torch")

#: events either library records around the call that are not the op under test
_SKIP = ("aten::randn", "aten::rand", "aten::ones", "aten::zeros", "aten::tensor",
         "aten::broadcast_tensors", "aten::sigmoid", "aten::unsqueeze", "aten::index",
         "aten::empty", "aten::detach", "aten::fill_", "aten::zero_", "aten::to",
         "aten::lift_fresh", "aten::detach_")


def _profile(lib, fn, **kw):
    with lib.profiler.profile(**kw) as prof:
        fn(lib)
    return prof


def _top(lib, fn, keep=()):
    """The top-level events' names and, for each, its children's names found in ``keep``."""
    return [(e.name, [c.name for c in e.cpu_children if c.name in keep])
            for e in _profile(lib, fn).events()
            if e.cpu_parent is None and e.name not in _SKIP]


def _same_as_torch(fn, keep=()):
    assert _top(ember, fn, keep) == _top(torch, fn, keep)


def _x(lib, *shape):
    return lib.ones(*shape).requires_grad_()


def test_dropout_outer_event_holds_mask_and_product():
    _same_as_torch(lambda lib: lib.nn.functional.dropout(_x(lib, 4, 5), 0.5),
                   keep=("aten::bernoulli_", "aten::mul"))


def test_dropout_eval_still_records_dropout():
    _same_as_torch(lambda lib: lib.nn.Dropout(0.5).eval()(lib.ones(3)))


def test_dropout_inplace_records_underscore_form():
    _same_as_torch(lambda lib: lib.nn.functional.dropout(lib.ones(4, 5), 0.5, inplace=True))


def test_dropout2d_records_feature_dropout():
    _same_as_torch(lambda lib: lib.nn.functional.dropout2d(_x(lib, 2, 3, 4, 4), 0.5),
                   keep=("aten::bernoulli_", "aten::mul"))


def test_alpha_dropout_outer_name():
    _same_as_torch(lambda lib: lib.nn.functional.alpha_dropout(lib.ones(4, 5), 0.5, True))


def test_flatten_outer_event_holds_view():
    _same_as_torch(lambda lib: lib.flatten(lib.ones(2, 3, 4), 1), keep=("aten::view",))


def test_flatten_module_and_method_record_flatten():
    _same_as_torch(lambda lib: (lib.nn.Flatten()(lib.ones(2, 3, 4)), lib.ones(2, 3).flatten()))


@pytest.mark.parametrize("name, call", [
    ("group_norm", lambda lib: lib.nn.GroupNorm(2, 4)(lib.ones(2, 4, 3))),
    ("instance_norm", lambda lib: lib.nn.functional.instance_norm(lib.rand(2, 3, 5))),
    ("bce_with_logits", lambda lib: lib.nn.functional.binary_cross_entropy_with_logits(
        _x(lib, 3, 2), lib.rand(3, 2))),
    ("l1", lambda lib: lib.nn.functional.l1_loss(lib.ones(3), lib.zeros(3))),
    ("smooth_l1", lambda lib: lib.nn.functional.smooth_l1_loss(lib.ones(3), lib.zeros(3))),
    ("huber", lambda lib: lib.nn.functional.huber_loss(lib.ones(3), lib.zeros(3))),
    ("soft_margin", lambda lib: lib.nn.functional.soft_margin_loss(lib.ones(3),
                                                                   -lib.ones(3))),
])
def test_composed_op_top_level_name_as_torch(name, call):
    _same_as_torch(call)


@pytest.mark.parametrize("mode, nd, kw", [
    ("nearest", 1, {}), ("nearest", 2, {}), ("nearest", 3, {}), ("nearest-exact", 2, {}),
    ("linear", 1, {"align_corners": False}), ("bilinear", 2, {"align_corners": True}),
    ("bicubic", 2, {"align_corners": False}), ("trilinear", 3, {"align_corners": False}),
    ("area", 2, {}),
])
def test_interpolate_records_torch_upsample_op(mode, nd, kw):
    def fn(lib):
        x = lib.ones((1, 2) + (4,) * nd)
        return lib.nn.functional.interpolate(x, size=(6,) * nd, mode=mode, **kw)
    _same_as_torch(fn)


def _shapes_of(lib, fn, name):
    prof = _profile(lib, fn, record_shapes=True)
    return [e.input_shapes for e in prof.events() if e.name == name]


@pytest.mark.parametrize("name, call", [
    ("aten::dropout", lambda lib: lib.nn.functional.dropout(lib.ones(4, 5), 0.5)),
    ("aten::flatten", lambda lib: lib.flatten(lib.ones(2, 3, 4), 1)),
    ("aten::group_norm", lambda lib: lib.nn.functional.group_norm(
        lib.ones(2, 4, 3), 2, lib.ones(4), lib.zeros(4))),
    ("aten::instance_norm", lambda lib: lib.nn.functional.instance_norm(lib.rand(2, 3, 5))),
    ("aten::upsample_bilinear2d", lambda lib: lib.nn.functional.interpolate(
        lib.ones(1, 2, 4, 4), size=(5, 5), mode="bilinear")),
    ("aten::upsample_nearest2d", lambda lib: lib.nn.functional.interpolate(
        lib.ones(1, 2, 4, 4), scale_factor=2)),
    ("aten::l1_loss", lambda lib: lib.nn.functional.l1_loss(lib.ones(3), lib.zeros(3))),
])
def test_composed_op_input_shapes_as_torch(name, call):
    assert _shapes_of(ember, call, name) == _shapes_of(torch, call, name)


def _conv_backward(lib):
    x = lib.ones(2, 3, 6, 6, requires_grad=True)
    w = lib.ones(4, 3, 3, 3, requires_grad=True)
    b = lib.ones(4, requires_grad=True)
    # grad mode on inside backward (create_graph) keeps ember's two adjoint ops apart
    lib.autograd.grad(lib.nn.functional.conv2d(x, w, b).sum(), (x, w, b), create_graph=True)


def _conv_backward_plain(lib):
    x = lib.ones(2, 8, 16, 16, requires_grad=True)
    w = lib.ones(8, 8, 3, 3, requires_grad=True)
    lib.nn.functional.conv2d(x, w, padding=1).sum().backward()


@pytest.mark.parametrize("call", [_conv_backward, _conv_backward_plain])
def test_convolution_backward_event_under_node(call):
    for lib in (ember, torch):
        node = [e for e in _profile(lib, call).events() if e.name == "ConvolutionBackward0"]
        assert [c.name for c in node[0].cpu_children] == ["aten::convolution_backward"]


def test_convolution_backward_input_shapes_as_torch():
    assert _shapes_of(ember, _conv_backward, "aten::convolution_backward") == \
        _shapes_of(torch, _conv_backward, "aten::convolution_backward")


def test_composite_event_not_seen_by_dispatch_modes():
    from ember.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    with ember.profiler.profile() as prof, Log():
        ember.nn.functional.dropout(ember.ones(4), 0.5)
    assert not any("dropout" in s for s in seen)
    assert "aten::dropout" in [e.name for e in prof.events()]


def test_composite_event_in_trace_as_cpu_op(tmp_path):
    with ember.profiler.profile(record_shapes=True) as prof:
        ember.nn.functional.dropout(ember.ones(4, 5), 0.5)
    path = tmp_path / "t.json"
    prof.export_chrome_trace(str(path))
    ev = [e for e in json.loads(path.read_text())["traceEvents"] if e["name"] == "aten::dropout"]
    assert ev[0]["cat"] == "cpu_op" and ev[0]["args"]["Input Dims"] == [[4, 5], [], []]


def test_composite_event_in_key_averages_with_count():
    with ember.profiler.profile() as prof:
        for _ in range(3):
            ember.flatten(ember.ones(2, 3))
    row = [a for a in prof.key_averages() if a.key == "aten::flatten"]
    assert row[0].count == 3


@pytest.mark.parametrize("a, b", [
    ((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)), ((2, 3, 4), (4, 5)),
    ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4,)), ((4,), (2, 4, 5)), ((3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
])
@pytest.mark.parametrize("grad", [False, True])
def test_matmul_outer_event_holds_torch_product(a, b, grad):
    # PyTorch folds a stack into one matrix product by operand layout and by which
    # operand needs a gradient
    products = ("aten::mm", "aten::bmm", "aten::mv", "aten::dot")
    _same_as_torch(lambda lib: lib.matmul(lib.ones(*a, requires_grad=grad),
                                          lib.ones(*b, requires_grad=grad)), keep=products)


def test_matmul_in_backward_formula_has_no_outer_event():
    def fn(lib):
        lib.nn.functional.linear(lib.ones(2, 4), lib.ones(3, 4, requires_grad=True),
                                 lib.ones(3)).sum().backward()
    for lib in (ember, torch):
        node = [e for e in _profile(lib, fn).events() if e.name == "AddmmBackward0"][0]
        assert "aten::matmul" not in [c.name for c in node.cpu_children]


def _flops_by_name(lib, fn):
    out = {}
    for e in _profile(lib, fn, with_flops=True).events():
        if e.flops:
            out[e.name] = out.get(e.name, 0) + e.flops
    return out


@pytest.mark.parametrize("call", [
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 3, 8, 8), lib.ones(4, 3, 3, 3)),
    lambda lib: lib.matmul(lib.ones(3, 8, 16), lib.ones(16, 5)),
    lambda lib: lib.matmul(lib.ones(2, 3, 4), lib.ones(4)),
    lambda lib: lib.baddbmm(lib.ones(2, 3, 5), lib.ones(2, 3, 4), lib.ones(2, 4, 5)),
    lambda lib: lib.addmv(lib.ones(3), lib.ones(3, 4), lib.ones(4)),
    lambda lib: lib.nn.functional.linear(lib.ones(2, 4), lib.ones(3, 4), lib.ones(3)),
])
def test_flops_on_the_events_torch_counts_them(call):
    assert _flops_by_name(ember, call) == _flops_by_name(torch, call)


def test_composite_outer_event_carries_node_sequence_number():
    with ember.profiler.profile() as prof:
        ember.nn.functional.dropout(_x(ember, 3, 4), 0.5)
    ev = {e.name: e for e in prof.events()}
    assert ev["aten::dropout"].sequence_nr == ev["aten::mul"].sequence_nr >= 0


def test_matmul_of_strided_stack_runs_bmm_as_torch():
    products = ("aten::mm", "aten::bmm")
    _same_as_torch(lambda lib: lib.matmul(lib.ones(3, 2, 4).transpose(0, 1), lib.ones(4, 5)),
                   keep=products)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_pad_outer_event_holds_torch_kernel_name(mode, nd):
    kernels = ("aten::constant_pad_nd", "aten::_pad_circular") + tuple(
        f"aten::{k}_pad{nd}d" for k in ("reflection", "replication"))
    _same_as_torch(lambda lib: lib.nn.functional.pad(lib.ones((1, 2) + (4,) * nd), (1, 1) * nd,
                                                     mode=mode), keep=kernels)


def test_constant_pad_nd_records_no_pad_event():
    _same_as_torch(lambda lib: lib.constant_pad_nd(lib.ones(2, 2), [1, 1]))


@pytest.mark.parametrize("name, call", [
    ("aten::pixel_shuffle", lambda lib: lib.nn.functional.pixel_shuffle(lib.ones(1, 4, 2, 2), 2)),
    ("aten::pixel_unshuffle",
     lambda lib: lib.nn.functional.pixel_unshuffle(lib.ones(1, 1, 4, 4), 2)),
    ("aten::bilinear", lambda lib: lib.nn.functional.bilinear(
        lib.ones(2, 5), lib.ones(2, 5), lib.ones(3, 5, 5), lib.ones(3))),
    ("aten::embedding_bag", lambda lib: lib.nn.functional.embedding_bag(
        lib.tensor([1, 2, 3, 4]), lib.ones(10, 3), lib.tensor([0, 2]))),
])
def test_more_composed_ops_name_and_shapes_as_torch(name, call):
    _same_as_torch(call)
    assert _shapes_of(ember, call, name) == _shapes_of(torch, call, name)


@pytest.mark.parametrize("x_shape", [(4,), (2, 4), (2, 3, 4)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_children_input_shapes_and_flops_as_torch(x_shape, bias):
    def call(lib):
        lib.nn.functional.linear(lib.ones(*x_shape), lib.ones(5, 4),
                                 lib.ones(5) if bias else None)
    for name in ("aten::linear", "aten::addmm", "aten::matmul", "aten::mm"):
        assert _shapes_of(ember, call, name) == _shapes_of(torch, call, name)
    assert _flops_by_name(ember, call) == _flops_by_name(torch, call)


@pytest.mark.parametrize("name, call", [
    ("aten::cosine_similarity", lambda lib: lib.nn.functional.cosine_similarity(
        lib.ones(4, 3), lib.rand(4, 3))),
    ("aten::pairwise_distance", lambda lib: lib.nn.functional.pairwise_distance(
        lib.ones(4, 3), lib.rand(4, 3))),
    ("aten::pdist", lambda lib: lib.nn.functional.pdist(lib.rand(4, 3))),
    ("aten::expand_as", lambda lib: lib.ones(4, 1).expand_as(lib.ones(4, 3))),
])
def test_distance_ops_outer_event_name_and_shapes_as_torch(name, call):
    _same_as_torch(call)
    assert _shapes_of(ember, call, name) == _shapes_of(torch, call, name)


def test_normalize_top_level_sequence_as_torch():
    # torch's normalize is Python: norm, clamp_min, expand_as > expand, div, no outer event
    _same_as_torch(lambda lib: lib.nn.functional.normalize(lib.rand(4, 3)),
                   keep=("aten::expand",))


def test_cosine_similarity_holds_its_ops():
    prof = _profile(ember, lambda lib: lib.nn.functional.cosine_similarity(
        lib.ones(4, 3), lib.rand(4, 3)))
    outer = next(e for e in prof.events() if e.name == "aten::cosine_similarity")
    assert {"aten::linalg_vector_norm", "aten::div", "aten::sum"} <= \
        {c.name for c in outer.cpu_children}


def test_adamw_step_records_lerp_as_torch(monkeypatch):
    # (the loop PyTorch runs, which ember runs where its fused kernel declines: NOTE
    # [ Fused kernels under the profiler ])
    import ember._kernels as kernels
    monkeypatch.setattr(kernels, "adam", lambda *a, **k: False)

    def names(lib):
        m = lib.nn.Linear(4, 3)
        opt = lib.optim.AdamW(m.parameters(), lr=1e-3)
        m(lib.ones(2, 4)).sum().backward()
        with lib.profiler.profile() as prof:
            opt.step()
        return {e.name for e in prof.events()}
    mine = names(ember)
    assert "aten::lerp_" in mine and "aten::lerp_" in names(torch)
    assert not any("lerp_scalar" in n for n in mine)
