"""``ember._dynamo.explain``: graph counts, break reasons, user stacks and ops as PyTorch 2.13
reports them (expected values measured with torch 2.13's ``torch._dynamo.explain`` on the
same functions; NOTE [ Explain by recording ] in ember/_dynamo/_explain.py)."""

import operator
import warnings

import pytest

import ember
import ember.nn.functional as F


def toy_example(a, b):
    x = a / (ember.abs(a) + 1)
    print("woo")
    if b.sum() < 0:
        b = b * -1
    return x * b


def inner(x):
    if x.sum() > 0:
        return x * 2
    return x


def outer(x):
    return inner(ember.cos(x)) - 1


def scalar_read(x):
    y = x.sin()
    z = y.item()
    return y * z


def forced(x):
    x = x + 1
    ember._dynamo.graph_break()
    return F.relu(x)


def only_prints(x):
    print("hi")
    return x


def ends_in_tolist(x):
    for i in range(3):
        x = x + i
    return x.tolist()


def names(out):
    return [getattr(op, "__name__", op) for ops in out.ops_per_graph for op in ops]


def test_explain_toy_example_counts_breaks_and_ops(capsys):
    out = ember._dynamo.explain(toy_example)(ember.ones(10), -ember.ones(10))
    assert capsys.readouterr().out == "woo\n"
    assert (out.graph_count, out.graph_break_count, out.op_count) == (3, 2, 6)
    assert [len(ops) for ops in out.ops_per_graph] == [3, 1, 2]
    assert out.ops_per_graph[0][1:] == [operator.add, operator.truediv]
    assert out.ops_per_graph[1] == [operator.lt]
    first, second = out.break_reasons
    assert first.reason.startswith("Failed to trace builtin operator\n")
    assert "builtin operator `print` with argument types ['str'] (has_kwargs False)" in \
        first.reason
    assert second.reason == "generic_jump TensorVariable()"
    print_line = toy_example.__code__.co_firstlineno + 2
    assert second.user_stack[0].name == f"torch_dynamo_resume_in_toy_example_at_{print_line}"


def test_explain_graphs_run_and_return_what_later_code_reads():
    a, b = ember.tensor([1.0, -2.0]), ember.tensor([-3.0, 1.0])
    out = ember._dynamo.explain(toy_example)(a, b)
    first = out.graphs[0]
    assert [n.target for n in first.graph.nodes if n.op == "placeholder"] == ["L_a_"]
    (x,) = first(a)
    assert ember.equal(x, a / (a.abs() + 1))
    assert out.graphs[-1].compile_subgraph_reason.reason == "return_value"


def test_explain_break_in_called_function_splits_both_frames():
    out = ember._dynamo.explain(outer)(ember.ones(3))
    assert (out.graph_count, out.graph_break_count) == (4, 3)
    nested, own = out.break_reasons
    assert nested.reason == "Data-dependent branching"
    assert [f.name for f in nested.user_stack] == ["outer", "inner"]
    assert own.reason == "generic_jump TensorVariable()"
    assert [f.name for f in own.user_stack] == ["inner"]
    assert out.ops_per_graph == [[ember.cos], [operator.gt], [operator.mul], [operator.sub]]


def test_explain_item_breaks_after_method_only_graph():
    out = ember._dynamo.explain(scalar_read)(ember.ones(1))
    assert (out.graph_count, out.op_count) == (2, 1)
    assert out.ops_per_graph == [[], [operator.mul]]
    assert out.break_reasons[0].reason.startswith(
        "Unsupported Tensor.item() call with capture_scalar_outputs=False")


def test_explain_user_graph_break():
    out = ember._dynamo.explain(forced)(ember.ones(3))
    assert names(out) == ["add", "relu"]
    assert out.break_reasons[0].reason.startswith("Call to `torch._dynamo.graph_break()`")


def test_explain_without_ops_reports_no_graph():
    out = ember._dynamo.explain(only_prints)(ember.ones(3))
    assert (out.graph_count, out.graph_break_count, out.break_reasons) == (0, -1, [])


def test_explain_tolist_at_the_end_keeps_one_graph():
    out = ember._dynamo.explain(ends_in_tolist)(ember.ones(3))
    assert (out.graph_count, out.graph_break_count, out.op_count) == (1, 0, 3)
    assert out.break_reasons[0].reason.startswith("Tensor.tolist() with non-integer tensor")


def test_explain_module_records_functional_calls():
    net = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.ReLU())
    out = ember._dynamo.explain(net)(ember.ones(2, 4))
    assert names(out) == ["linear", "relu"]
    assert out.graph_break_count == 0


def test_explain_prints_sections_as_torch():
    text = str(ember._dynamo.explain(forced)(ember.ones(3)))
    assert text.startswith("Graph Count: 2\nGraph Break Count: 1\nOp Count: 2\n"
                           "Break Reasons:\n  Break Reason 1:\n    Reason: Call to")
    for section in ("    User Stack:\n      <FrameSummary file ", "Ops per Graph:\n  Ops 1:\n",
                    "Out Guards:\n  Guard 1:\n    Name: ''\n    Source: shape_env\n",
                    "Create Function: TENSOR_MATCH", "Compile Times: TorchDynamo compilation"):
        assert section in text


def test_explain_old_call_form_warns():
    with pytest.warns(FutureWarning, match="deprecated"):
        out = ember._dynamo.explain(forced, ember.ones(2))
    assert out.graph_count == 2


def test_explain_error_propagates_and_restores_profile_hook():
    import sys

    def bad(x):
        return x + ember.ones(5)

    with pytest.raises(RuntimeError):
        ember._dynamo.explain(bad)(ember.ones(3))
    assert sys.getprofile() is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ember.ones(2).add(1).sum().item() == 4.0


def test_explain_names_module_state_inputs_as_torch():
    class Net(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = ember.nn.Sequential(ember.nn.Linear(4, 4))

        def forward(self, x):
            return ember.relu(self.block(x))

    out = ember._dynamo.explain(Net())(ember.ones(3, 4))
    names = [n.target for n in out.graphs[0].graph.nodes if n.op == "placeholder"]
    assert names == ["L_x_", "L_self_modules_block_modules_0_parameters_weight_",
                     "L_self_modules_block_modules_0_parameters_bias_"]
