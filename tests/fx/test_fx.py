"""ember.fx against torch.fx: tracing, graphs, generated code, transforms, passes."""

import copy
import io
import math
import operator
import pickle

import pytest

import ember
import ember.fx as fx
from ember.fx.passes.shape_prop import ShapeProp

from ._models import make

torch = pytest.importorskip("torch")
import torch.fx  # noqa: E402,F811  (torch.fx is a submodule to import)

E, T = make(ember), make(torch)


def _pair(name):
    """The same model in ember and torch, with the same weights."""
    e, t = E[name](), T[name]()
    t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in e.state_dict().items()})
    return e.eval(), t.eval()


def _structure(gm):
    """Opcode, name and target text of each node: what must agree between the two."""
    return [(n.op, n.name, n.target if isinstance(n.target, str) else n._pretty_target()
             if hasattr(n, "_pretty_target") else None) for n in gm.graph.nodes]


def _torch_structure(gm):
    from torch.fx.node import _get_qualified_name

    out = []
    for n in gm.graph.nodes:
        t = n.target
        if not isinstance(t, str):
            mod = getattr(t, "__module__", "")
            t = f"operator.{t.__name__}" if mod in ("_operator", "operator") else \
                f"builtins.{t.__name__}" if mod == "builtins" else _get_qualified_name(t)
        out.append((n.op, n.name, t))
    return out


# -- tracing ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["MLP", "CNN"])
def test_symbolic_trace_graph_matches_torch(name):
    e, t = _pair(name)
    assert _structure(fx.symbolic_trace(e)) == _torch_structure(torch.fx.symbolic_trace(t))


@pytest.mark.parametrize("name", ["MLP", "CNN"])
def test_symbolic_trace_code_matches_torch(name):
    e, t = _pair(name)
    assert fx.symbolic_trace(e).code == torch.fx.symbolic_trace(t).code


def test_symbolic_trace_printed_graph_matches_torch():
    e, t = _pair("CNN")
    assert str(fx.symbolic_trace(e).graph) == str(torch.fx.symbolic_trace(t).graph)


@pytest.mark.parametrize("name", ["MLP", "CNN", "Attrs"])
def test_graph_module_result_equals_eager(name):
    e, _ = _pair(name)
    gm = fx.symbolic_trace(e)
    x = ember.randn(3, 4) if name != "CNN" else ember.randn(2, 3, 4, 4)
    got, want = gm(x), e(x)
    if isinstance(want, tuple):
        assert ember.allclose(got[0], want[0]) and got[1] == want[1]
    else:
        assert ember.allclose(got, want)


def test_symbolic_trace_attributes_become_get_attr():
    gm = fx.symbolic_trace(E["Attrs"]())
    gets = [n.target for n in gm.graph.nodes if n.op == "get_attr"]
    assert gets == ["param", "buf"]
    assert [n.name for n in gm.graph.nodes][:2] == ["x", "y"]


def test_symbolic_trace_shape_and_size_record_nodes():
    gm = fx.symbolic_trace(E["Attrs"]())
    ops = {(n.op, n.name) for n in gm.graph.nodes}
    assert ("call_function", "getattr_1") in ops and ("call_method", "size") in ops
    g = [n for n in gm.graph.nodes if n.name == "getattr_1"][0]
    assert g.target is getattr and g.args[1] == "shape"


def test_symbolic_trace_parameter_of_leaf_is_qualified():
    gm = fx.symbolic_trace(E["CNN"]())
    assert [n.target for n in gm.graph.nodes if n.op == "get_attr"] == ["fc.weight"]
    assert "fc_weight" in [n.name for n in gm.graph.nodes]


def test_symbolic_trace_tensor_constant_and_operators_match_torch():
    def build(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.c = lib.ones(2)

            def forward(self, x):
                return (lib.ones(2) + x, self.c * x, x[:, 0] / 2, -x, 3 - x, x @ x, x.T,
                        x.dtype)
        return M()

    eg, tg = fx.symbolic_trace(build(ember)), torch.fx.symbolic_trace(build(torch))
    assert eg.code == tg.code
    x = ember.ones(2, 2)
    assert ember.equal(eg(x)[0], x + 1) and eg(x)[-1] == ember.float32


def test_control_flow_raises_trace_error():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(torch.fx.proxy.TraceError) as t_err:
        torch.fx.symbolic_trace(f)
    with pytest.raises(fx.proxy.TraceError) as e_err:
        fx.symbolic_trace(f)
    assert str(e_err.value) == str(t_err.value)
    assert isinstance(e_err.value, ValueError)


def test_iteration_raises_trace_error():
    def f(x):
        return [y for y in x]

    with pytest.raises(fx.proxy.TraceError, match="cannot be iterated"):
        fx.symbolic_trace(f)


def test_tuple_unpacking_of_proxy_is_recorded():
    def f(x):
        a, b = ember.chunk(x, 2)
        return a - b

    gm = fx.symbolic_trace(f)
    x = ember.arange(4.0)
    assert ember.equal(gm(x), f(x))
    assert [n.name for n in gm.graph.nodes if n.op == "call_function"][:3] == \
        ["chunk", "getitem", "getitem_1"]


def test_len_without_wrap_raises_runtime_error():
    with pytest.raises(RuntimeError, match="'len' is not supported"):
        fx.symbolic_trace(lambda x: len(x))


def my_helper(x, y):
    return x + int(y)


fx.wrap("my_helper")


def test_wrap_records_call_function_and_reruns():
    def f(x):
        return my_helper(x, 2.0) * math.sqrt(4)

    gm = fx.symbolic_trace(f)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert my_helper in targets
    assert 'torch.fx._symbolic_trace.wrap("tests_fx_test_fx_my_helper")' in gm.code or \
        "my_helper" in gm.code
    assert ember.equal(gm(ember.ones(1)), f(ember.ones(1)))


def test_autowrap_math_records_call_function():
    def f(x):
        return math.sqrt(x.size(0))

    gm = fx.symbolic_trace(f)
    assert math.sqrt in [n.target for n in gm.graph.nodes]
    assert gm(ember.ones(9)) == 3.0


def test_concrete_args_specialise_and_check():
    def f(x, flag):
        return x + 1 if flag else x - 1

    gm = fx.symbolic_trace(f, concrete_args={"flag": True})
    tg = torch.fx.symbolic_trace(f, concrete_args={"flag": True})
    assert gm.code.replace("torch.fx._symbolic_trace._assert", "torch._assert") == tg.code
    assert ember.equal(gm(ember.ones(1), True), ember.tensor([2.0]))
    with pytest.raises(AssertionError, match="specialized to have value True"):
        gm(ember.ones(1), False)


def test_custom_leaf_module_is_call_module():
    class Inner(ember.nn.Module):
        def forward(self, x):
            return x * 2

    class Outer(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, x):
            return self.inner(x) + 1

    class LeafTracer(fx.Tracer):
        def is_leaf_module(self, m, name):
            return isinstance(m, Inner) or super().is_leaf_module(m, name)

    assert [n.op for n in fx.symbolic_trace(Outer()).graph.nodes] == \
        ["placeholder", "call_function", "call_function", "output"]
    g = LeafTracer().trace(Outer())
    assert [(n.op, n.target) for n in g.nodes][1] == ("call_module", "inner")
    assert g.find_nodes(op="call_module")[0].meta["nn_module_stack"]["inner"][1] is Inner


def test_proxy_torch_function_records_functional_call():
    g = fx.Graph()
    x = fx.Proxy(g.placeholder("x"))
    y = ember.nn.functional.gelu(ember.cat([x, x], dim=0))
    assert y.node.target is ember.nn.functional.gelu
    assert y.node.args[0].target is ember.cat


def test_tensor_operator_with_proxy_is_call_method():
    gm = fx.symbolic_trace(lambda x: ember.ones(2) * x)
    assert [(n.op, n.target) for n in gm.graph.nodes][2] == ("call_method", "mul")


def test_proxyable_class_meta_records_construction():
    class Pair(metaclass=fx.ProxyableClassMeta):
        def __init__(self, a, b):
            self.a, self.b = a, b

    g = fx.Tracer().trace(lambda x: Pair(x, 1))
    assert [n.target for n in g.nodes][1] is Pair


# -- graph and node editing ---------------------------------------------------------------------


def _add_graph():
    g = fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(operator.add, (x, 1))
    b = g.call_function(operator.add, (a, x))
    g.output(b)
    return g, x, a, b


def test_node_names_use_suffixes_like_torch():
    g, _, a, b = _add_graph()
    assert (a.name, b.name) == ("add", "add_1")
    assert g.call_method("sum", (a,)).name == "sum_1"
    tg = torch.fx.Graph()
    assert tg.call_method("sum", (tg.placeholder("x"),)).name == "sum_1"


def test_node_use_def_chains():
    g, x, a, b = _add_graph()
    assert list(x.users) == [a, b] and b.all_input_nodes == [a, x]
    b.replace_input_with(x, a)
    assert list(x.users) == [a] and b.args == (a, a)


def test_node_args_are_immutable():
    g, x, a, b = _add_graph()
    lst = g.call_function(ember.cat, ([a, b],))
    with pytest.raises(TypeError, match="does not support mutation"):
        lst.args[0].append(x)


def test_replace_all_uses_with_and_erase():
    g, x, a, b = _add_graph()
    with g.inserting_after(a):
        m = g.call_function(operator.mul, (a, 2))
    users = a.replace_all_uses_with(m, delete_user_cb=lambda u: u is not m)
    assert users == [b] and b.args == (m, x)
    with pytest.raises(RuntimeError, match="still had 1 users"):
        g.erase_node(m)
    g.lint()


def test_inserting_before_and_prepend_order():
    g, x, a, b = _add_graph()
    with g.inserting_before(b):
        n = g.call_function(operator.neg, (a,))
    assert [k.name for k in g.nodes] == ["x", "add", "neg", "add_1", "output"]
    b.append(n)
    assert [k.name for k in g.nodes] == ["x", "add", "add_1", "neg", "output"]


def test_lint_catches_use_before_definition():
    g, x, a, b = _add_graph()
    b.append(a)
    with pytest.raises(RuntimeError, match="used before it has been defined"):
        g.lint()


def _noisy(x):
    return x


fx.has_side_effect(_noisy)
fx.wrap("_noisy")
torch.fx.wrap("_noisy")


def test_eliminate_dead_code_keeps_only_side_effects_like_torch():
    def f(lib):
        def fn(x):
            x.add_(1)
            lib.rand(2)
            lib.relu(x)
            _noisy(x)
            return x
        return fn

    torch.fx.has_side_effect(_noisy)
    g = fx.symbolic_trace(f(ember)).graph
    tg = torch.fx.symbolic_trace(f(torch)).graph
    assert g.eliminate_dead_code() and tg.eliminate_dead_code()
    assert [n.name for n in g.nodes] == [n.name for n in tg.nodes] == \
        ["x", "_noisy", "output"]


def test_graph_copy_and_node_copy():
    g, x, a, b = _add_graph()
    h = fx.Graph()
    y = h.placeholder("y")
    out = h.graph_copy(g, {x: y})
    h.output(out)
    gm = fx.GraphModule(ember.nn.Module(), h)
    assert ember.equal(gm(ember.ones(1)), ember.tensor([3.0]))


def test_print_tabular_matches_torch(capsys):
    g, *_ = _add_graph()
    tg = torch.fx.Graph()
    tx = tg.placeholder("x")
    ta = tg.call_function(operator.add, (tx, 1))
    tg.output(tg.call_function(operator.add, (ta, tx)))
    g.print_tabular()
    mine = capsys.readouterr().out
    tg.print_tabular()
    assert mine == capsys.readouterr().out


def test_python_code_of_hand_built_graph_matches_torch():
    g, *_ = _add_graph()
    tg = torch.fx.Graph()
    tx = tg.placeholder("x")
    ta = tg.call_function(operator.add, (tx, 1))
    tg.output(tg.call_function(operator.add, (ta, tx)))
    assert g.python_code("self").src == tg.python_code("self").src


def test_map_arg_reaches_nested_nodes():
    g, x, a, b = _add_graph()
    assert fx.map_arg({"k": [x, (a, 3)]}, lambda n: n.name) == {"k": ["x", ("add", 3)]}


# -- GraphModule ----------------------------------------------------------------------------


def test_recompile_after_graph_edit():
    gm = fx.symbolic_trace(lambda x: x + 1)
    for n in gm.graph.nodes:
        if n.target is operator.add:
            n.target = operator.mul
    gm.recompile()
    assert "x * 1" in gm.code
    assert ember.equal(gm(ember.tensor([3.0])), ember.tensor([3.0]))


def test_print_readable_matches_torch():
    # torch 2.13's text (its print_readable takes a second and a half to import its way in)
    want = ("class MLP(torch.nn.Module):\n    def forward(self, x):\n"
            "        # No stacktrace found for following nodes\n"
            "        fc1 = self.fc1(x);  x = None\n"
            "        relu = torch.nn.functional.relu(fc1, inplace = False);  fc1 = None\n"
            "        fc2 = self.fc2(relu);  relu = None\n"
            "        tanh = fc2.tanh();  fc2 = None\n        return tanh\n")
    assert fx.symbolic_trace(E["MLP"]()).print_readable(False) == want


def test_graph_module_state_dict_keys_match_torch():
    e, t = _pair("CNN")
    assert sorted(fx.symbolic_trace(e).state_dict()) == \
        sorted(torch.fx.symbolic_trace(t).state_dict())


def test_graph_module_deepcopy_is_independent():
    e, _ = _pair("CNN")
    gm = fx.symbolic_trace(e)
    gm2 = copy.deepcopy(gm)
    x = ember.randn(1, 3, 4, 4)
    with ember.no_grad():
        gm2.fc.weight.zero_()
    assert gm2.code == gm.code and not ember.allclose(gm(x), gm2(x))
    assert type(gm2).forward is not type(gm).forward


def test_graph_module_pickle_round_trip():
    e, _ = _pair("Attrs")
    gm = fx.symbolic_trace(e)
    gm2 = pickle.loads(pickle.dumps(gm))
    x = ember.randn(3, 4)
    assert gm2.code == gm.code and ember.allclose(gm2(x)[0], gm(x)[0])


def test_graph_module_save_load_with_ember_save():
    e, _ = _pair("MLP")
    gm = fx.symbolic_trace(e)
    buf = io.BytesIO()
    ember.save(gm, buf)
    buf.seek(0)
    gm2 = ember.load(buf, weights_only=False)
    x = ember.randn(2, 4)
    assert isinstance(gm2, fx.GraphModule) and ember.allclose(gm2(x), gm(x))


def test_wrapped_function_survives_pickle():
    gm = fx.symbolic_trace(lambda x: my_helper(x, 1.0))
    gm2 = pickle.loads(pickle.dumps(gm))
    assert my_helper in [n.target for n in gm2.graph.nodes]


def test_add_delete_submodule_and_unused():
    gm = fx.symbolic_trace(E["MLP"]())
    assert gm.add_submodule("extra.relu", ember.nn.ReLU())
    assert not gm.add_submodule("fc1.weight.bad", ember.nn.ReLU())
    gm.delete_all_unused_submodules()
    assert not hasattr(gm, "extra") and hasattr(gm, "fc1")
    assert not gm.delete_submodule("nothing")


def test_graph_module_from_dict_root():
    g = fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_module("a.lin", (x,)))
    lin = ember.nn.Linear(2, 2)
    gm = fx.GraphModule({"a.lin": lin}, g)
    assert gm.a.lin is lin
    with pytest.raises(RuntimeError, match="was not provided"):
        fx.GraphModule({}, g)


def test_to_folder_module_imports_and_runs(tmp_path, monkeypatch):
    e, _ = _pair("MLP")
    gm = fx.symbolic_trace(e)
    gm.to_folder(tmp_path / "pkg_fx_mlp", "Mlp")
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    mod = importlib.import_module("pkg_fx_mlp")
    x = ember.randn(2, 4)
    assert ember.allclose(mod.Mlp()(x), gm(x))


# -- Interpreter, Transformer, rewriter, passes -----------------------------------------------


def test_interpreter_runs_like_the_module():
    e, _ = _pair("CNN")
    gm = fx.symbolic_trace(e)
    x = ember.randn(1, 3, 4, 4)
    assert ember.allclose(fx.Interpreter(gm).run(x), gm(x))


def test_interpreter_override_changes_results():
    class NegRelu(fx.Interpreter):
        def call_function(self, target, args, kwargs):
            if target is ember.relu:
                return ember.neg(*args)
            return super().call_function(target, args, kwargs)

    gm = fx.symbolic_trace(lambda x: ember.relu(x))
    assert ember.equal(NegRelu(gm).run(ember.tensor([2.0])), ember.tensor([-2.0]))


def test_interpreter_missing_input_raises():
    gm = fx.symbolic_trace(lambda x, y: x + y)
    with pytest.raises(RuntimeError, match="Expected positional argument for parameter y"):
        fx.Interpreter(gm).run(ember.ones(1))


def test_transformer_replaces_add_with_mul():
    class AddToMul(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is operator.add:
                target = operator.mul
            return super().call_function(target, args, kwargs)

    e, _ = _pair("CNN")
    gm = fx.symbolic_trace(e)
    new = AddToMul(gm).transform()
    assert operator.add not in [n.target for n in new.graph.nodes]
    x = ember.randn(1, 3, 4, 4)
    assert new(x).shape == gm(x).shape and not ember.allclose(new(x), gm(x))


def test_replace_pattern_matches_torch():
    def f(lib):
        def fn(x, y):
            a = lib.add(x, y).relu() * 2
            return lib.add(a, y).relu() + lib.add(x, x)
        return fn

    def pat(lib):
        return lambda a, b: lib.add(a, b).relu()

    def rep(lib):
        return lambda a, b: lib.sub(a, b).relu()

    egm, tgm = fx.symbolic_trace(f(ember)), torch.fx.symbolic_trace(f(torch))
    em = fx.replace_pattern(egm, pat(ember), rep(ember))
    tm = torch.fx.replace_pattern(tgm, pat(torch), rep(torch))
    assert [sorted(n.name for n in m.nodes_map.values()) for m in em] == \
        [sorted(n.name for n in m.nodes_map.values()) for m in tm]
    x, y = [3.0, -1.0], [1.0, 2.0]
    assert egm(ember.tensor(x), ember.tensor(y)).tolist() == \
        tgm(torch.tensor(x), torch.tensor(y)).tolist()
    egm.graph.lint()


def test_replace_pattern_skips_match_with_outside_use():
    def f(x, y):
        s = ember.add(x, y)
        return s.relu() + s

    gm = fx.symbolic_trace(f)
    assert fx.replace_pattern(gm, lambda a, b: ember.add(a, b).relu(),
                              lambda a, b: ember.sub(a, b).relu()) == []


def test_shape_prop_fills_tensor_meta():
    e, t = _pair("CNN")
    gm, tgm = fx.symbolic_trace(e), torch.fx.symbolic_trace(t)
    ShapeProp(gm).propagate(ember.randn(2, 3, 4, 4))
    from torch.fx.passes.shape_prop import ShapeProp as TShapeProp

    TShapeProp(tgm).propagate(torch.randn(2, 3, 4, 4))
    def rows(g):
        return [(n.name, tuple(m.shape), tuple(m.stride), m.requires_grad,
                 str(m.dtype).replace("torch", "ember"),
                 str(m.memory_format).replace("torch", "ember"))
                for n in g.nodes for m in [n.meta.get("tensor_meta")] if m is not None]

    mine, theirs = rows(gm.graph), rows(tgm.graph)
    assert mine == theirs


def test_split_module_runs_like_the_original():
    from ember.fx.passes.split_module import split_module

    e, _ = _pair("MLP")
    gm = fx.symbolic_trace(e)
    parts = split_module(gm, e, lambda n: 0 if n.name.startswith("fc1") else 1)
    x = ember.randn(2, 4)
    assert [n for n, _ in parts.named_children()] == ["submod_0", "submod_1"]
    assert ember.allclose(parts(x), gm(x))


def test_fuse_conv_bn_matches_eager():
    from ember.fx.experimental.optimization import fuse

    e, _ = _pair("CNN")
    x = ember.randn(2, 3, 4, 4)
    fused = fuse(e)
    assert not any(isinstance(m, ember.nn.BatchNorm2d) for m in fused.modules())
    assert ember.allclose(fused(x), e(x), atol=1e-5)


def test_fx_is_reachable_as_attribute():
    assert ember.fx.symbolic_trace is fx.symbolic_trace
    assert fx.PH is not None and fx.has_side_effect(print) is print


def test_var_and_keyword_only_parameters_match_torch():
    def f(x, *a, s=1, **kw):
        return x * s + a[0] + kw["z"]

    gm = fx.symbolic_trace(f)
    assert gm.code == torch.fx.symbolic_trace(f).code
    assert "def forward(self, x, s = 1, *a, **kw)" in gm.code


def test_tensor_attribute_dtype_argument_prints_as_torch():
    gm = fx.symbolic_trace(lambda x: x.to(ember.float64))
    assert "x.to(torch.float64)" in gm.code
    assert gm(ember.ones(1)).dtype == ember.float64


def test_split_module_matches_torch():
    from torch.fx.passes.split_module import split_module as t_split

    from ember.fx.passes.split_module import split_module

    def build(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = lib.nn.Linear(4, 8)
                self.p = lib.nn.Parameter(lib.ones(8))

            def forward(self, x, y):
                h = lib.relu(self.fc1(x))
                return h + y + self.p, h
        return M()

    def cb(n):
        return 0 if n.name in ("fc1", "relu") else 1

    e, t = build(ember), build(torch)
    eq, tq = {}, {}
    ep = split_module(fx.symbolic_trace(e), e, cb, qualname_map=eq)
    tp = t_split(torch.fx.symbolic_trace(t), t, cb, qualname_map=tq)
    assert (ep.code, ep.submod_0.code, ep.submod_1.code, eq) == \
        (tp.code, tp.submod_0.code, tp.submod_1.code, tq)
    x, y = ember.randn(2, 4), ember.randn(2, 8)
    assert ember.allclose(ep(x, y)[0], e(x, y)[0])


def test_custom_codegen_takes_a_list():
    import typing

    class ListCodeGen(fx.CodeGen):
        def gen_fn_def(self, free_vars, maybe_return_annotation):
            return (f"def forward(self, args_list: List[torch.Tensor]){maybe_return_annotation}:"
                    f"\n    {', '.join(free_vars)} = args_list")

        def additional_globals(self):
            return [("List", typing.List)]  # noqa: UP006  (as torch's docs write it)

        def process_inputs(self, *inputs):
            assert len(inputs) == 1
            return inputs[0]

    gm = fx.symbolic_trace(lambda a, b: a + b)
    gm.graph.set_codegen(ListCodeGen())
    gm.recompile()
    a, b = ember.ones(1), ember.ones(1)
    assert ember.equal(gm([a, b]), a + b)
    assert ember.equal(fx.Interpreter(gm).run([a, b]), a + b)


def test_erasing_nodes_while_iterating():
    g, x, a, b = _add_graph()
    out = [n for n in g.nodes if n.op == "output"][0]
    out.args = (x,)
    for n in g.nodes:
        if n.op == "call_function":
            n.replace_all_uses_with(x)
            g.erase_node(n)
    assert [n.name for n in g.nodes] == ["x", "output"]


def test_annotations_print_like_torch():
    import typing

    def f(lib):
        # typing.Optional, as most published code still writes it
        def fn(x, y: typing.Optional[lib.Tensor] = None,  # noqa: UP045
               z: list[int] = [1]) -> lib.Tensor:  # noqa: B006
            return x + 1
        return fn

    eg, tg = fx.symbolic_trace(f(ember)), torch.fx.symbolic_trace(f(torch))
    assert (eg.code, str(eg.graph)) == (tg.code, str(tg.graph))
    assert ember.equal(eg(ember.ones(1)), ember.tensor([2.0]))


def test_tensor_type_matches_torch():
    from torch.fx import tensor_type as tt

    from ember.fx import tensor_type as et

    for lib in (et, tt):
        assert repr(lib.TensorType[(2, lib.Dyn)]) == "TensorType[(2, Dyn)]"
    pairs = [((1, 2), (1, "D")), ((1, 2), (1, 2, 3)), ((1, "D"), (1, 2))]
    for a, b in pairs:
        def mk(lib, dims):
            return lib.TensorType[tuple(lib.Dyn if d == "D" else d for d in dims)]
        for fn in ("is_consistent", "is_more_precise"):
            assert getattr(et, fn)(mk(et, a), mk(et, b)) == getattr(tt, fn)(mk(tt, a), mk(tt, b))


def test_operator_schemas_match_torch():
    import typing

    from torch.fx import operator_schemas as to

    from ember.fx import operator_schemas as eo

    for a, b in [(float, int), (int, bool), (list[int], int), (typing.List[int], int),  # noqa: UP006
                 (list[float], list[int])]:
        assert eo.type_matches(a, b) == to.type_matches(a, b)
    for x in ([int, int], (int, bool), [int, str]):
        assert eo.create_type_hint(x) == to.create_type_hint(x)
    e = eo.normalize_function(ember.nn.functional.relu, (ember.ones(1),),
                              normalize_to_only_use_kwargs=True)
    t = to.normalize_function(torch.nn.functional.relu, (torch.ones(1),),
                              normalize_to_only_use_kwargs=True)
    assert list(e.kwargs) == list(t.kwargs) == ["input", "inplace"]
    assert eo.normalize_function(ember.nn.functional.relu, (1, 2, 3, 4)) is None


def test_immutable_collections_hash_and_pickle():
    from ember.fx.immutable_collections import immutable_dict, immutable_list

    xs, d = immutable_list([1, 2]), immutable_dict(a=1)
    assert hash(xs) == hash((1, 2)) and pickle.loads(pickle.dumps(xs)) == xs
    assert pickle.loads(pickle.dumps(d)) == d
    with pytest.raises(TypeError, match="does not support mutation"):
        d["b"] = 2


def test_transformer_preserves_node_meta():
    gm = fx.symbolic_trace(E["CNN"]())
    new = fx.Transformer(gm).transform()
    assert [n.meta.get("nn_module_stack") is not None for n in new.graph.nodes] == \
        [n.meta.get("nn_module_stack") is not None for n in gm.graph.nodes]
    assert new.code == gm.code


def test_proxy_is_a_tensor_like():
    g = fx.Graph()
    p = fx.Proxy(g.placeholder("x"))
    assert ember.overrides.is_tensor_like(p)
    assert repr(p) == "Proxy(x)" and repr(p.shape) == "Proxy(getattr_1)"


def test_record_stack_traces_points_at_user_code():
    class M(ember.nn.Module):
        def forward(self, x):
            return ember.relu(x) + 1

    tracer = fx.Tracer()
    tracer.record_stack_traces = True
    graph = tracer.trace(M())
    traces = {n.name: n.stack_trace for n in graph.nodes}
    assert traces["x"] is None and "return ember.relu(x) + 1" in traces["relu"]
    assert traces["relu"].startswith('File "') and "test_fx.py" in traces["relu"]
    readable = fx.GraphModule(tracer.root, graph).print_readable(False)
    assert "in forward, code: return ember.relu(x) + 1" in readable


def test_concrete_args_with_ph_keep_an_input():
    def f(x, scale, flag):
        return x * scale if flag else x

    gm = fx.symbolic_trace(f, concrete_args={"scale": fx.PH, "flag": True})
    tg = torch.fx.symbolic_trace(f, concrete_args={"scale": torch.fx.PH, "flag": True})
    assert [n.name for n in gm.graph.nodes] == [n.name for n in tg.graph.nodes]
    assert ember.equal(gm(ember.ones(1), 3.0, True), ember.tensor([3.0]))
