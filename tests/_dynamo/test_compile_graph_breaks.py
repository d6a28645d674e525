"""``ember.compile`` with a callable backend on code fx cannot capture whole: the backend is
handed each graph between the graph breaks, as TorchDynamo hands them (node names, inputs
and outputs measured with torch 2.13 on the custom-backend tutorial's ``toy_example``)."""

import pytest

import ember


def toy_example(a, b):
    x = a / (ember.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


def test_compile_hands_backend_each_graph_between_breaks():
    seen = []

    def backend(gm, example_inputs):
        seen.append(([(n.op, n.name) for n in gm.graph.nodes],
                     [tuple(t.shape) for t in example_inputs]))
        return gm.forward

    opt = ember.compile(toy_example, backend=backend)
    a, b = ember.ones(10), -ember.ones(10)
    for _ in range(2):
        assert ember.equal(opt(a, b), toy_example(a, b))
    assert seen == [
        ([("placeholder", "l_a_"), ("placeholder", "l_b_"), ("call_function", "abs_1"),
          ("call_function", "add"), ("call_function", "x"), ("call_method", "sum_1"),
          ("call_function", "lt"), ("output", "output")], [(10,), (10,)]),
        ([("placeholder", "l_b_"), ("placeholder", "l_x_"), ("call_function", "b"),
          ("call_function", "mul_1"), ("output", "output")], [(10,), (10,)]),
    ]


def test_compile_graph_outputs_what_the_break_reads_first():
    graphs = []
    opt = ember.compile(toy_example, backend=lambda gm, ex: graphs.append(gm) or gm.forward)
    opt(ember.ones(3), ember.ones(3))
    out = [n for n in graphs[0].graph.nodes if n.op == "output"][0]
    assert [a.name for a in out.args[0]] == ["lt", "x"]


def test_compile_fullgraph_with_break_raises_unsupported():
    opt = ember.compile(toy_example, backend=lambda gm, ex: gm.forward, fullgraph=True)
    with pytest.raises(ember._dynamo.exc.Unsupported):
        opt(ember.ones(3), ember.ones(3))
