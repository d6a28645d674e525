"""ember.utils.viz.make_dot: the autograd graph as Graphviz DOT text (and SVG with Graphviz)."""

import doctest
import re
import shutil

import pytest

import ember
from ember.utils import viz
from ember.utils.viz import DotGraph, make_dot

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")


def _labels(dot):
    return re.findall(r"\[label=(\"[^\"]*\"|\S+) fillcolor=(\w+)\]", dot.source)


def _edges(dot):
    return re.findall(r"^\s+(n\d+) -> (n\d+)", dot.source, flags=re.M)


def _mlp():
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU(), ember.nn.Linear(4, 2))
    return model, model(ember.ones(5, 3)).sum()


def test_make_dot_is_a_digraph():
    _, y = _mlp()
    src = make_dot(y).source
    assert src.startswith("digraph {\n") and src.endswith("}\n")


def test_make_dot_has_one_box_per_backward_node():
    _, y = _mlp()
    grey = [lbl for lbl, color in _labels(make_dot(y)) if color == "lightgrey"]
    # (torch's graph: each linear is an addmm of the weight's transpose, TBackward0)
    assert sorted(grey) == sorted(["SumBackward0", "AddmmBackward0", "ReluBackward0",
                                   "AddmmBackward0", "TBackward0", "TBackward0"])


def test_make_dot_names_parameters_with_shapes():
    model, y = _mlp()
    blue = [lbl for lbl, color in _labels(make_dot(y, params=dict(model.named_parameters())))
            if color == "lightblue"]
    assert sorted(blue) == ['"0.bias\\n(4)"', '"0.weight\\n(4, 3)"', '"2.bias\\n(2)"',
                            '"2.weight\\n(2, 4)"']


def test_make_dot_accepts_module_as_params():
    model, y = _mlp()
    assert make_dot(y, params=model).source == make_dot(
        y, params=dict(model.named_parameters())).source


def test_make_dot_unnamed_leaves_show_shape_only():
    x = ember.ones(2, 3, requires_grad=True)
    labels = _labels(make_dot((x * 2).sum()))
    assert ('"(2, 3)"', "lightblue") in labels


def test_make_dot_output_box_and_edges_follow_forward_direction():
    x = ember.ones(2, requires_grad=True)
    dot = make_dot((x * 2).sum(), params={"x": x})
    labels = dict(re.findall(r"^\s+(n\d+) \[label=(\"[^\"]*\"|\S+)", dot.source, flags=re.M))
    named = {(labels[a], labels[b]) for a, b in _edges(dot)}
    assert named == {('"x\\n(2)"', "MulBackward0"), ("MulBackward0", "SumBackward0"),
                     ("SumBackward0", '"()"')}


def test_make_dot_shared_leaf_drawn_once():
    x = ember.ones(2, requires_grad=True)
    dot = make_dot((x * x + x).sum(), params={"x": x})
    assert sum(1 for lbl, c in _labels(dot) if c == "lightblue") == 1


def test_make_dot_show_saved_draws_saved_tensor_shapes():
    a = ember.ones(2, 3, requires_grad=True)
    b = ember.ones(3, 4, requires_grad=True)
    dot = make_dot((a @ b).sum(), show_saved=True)
    orange = sorted(lbl for lbl, c in _labels(dot) if c == "orange")
    assert len(orange) == 2 and any("(2, 3)" in s for s in orange)
    assert any("(3, 4)" in s for s in orange)
    assert "[dir=none]" in dot.source


def test_make_dot_hides_saved_by_default():
    a = ember.ones(2, 3, requires_grad=True)
    assert "orange" not in make_dot((a * a).sum()).source


def test_make_dot_show_attrs_lists_non_tensor_values():
    x = ember.ones(2, 3, requires_grad=True)
    dot = make_dot(x.sum(dim=1), show_attrs=True)
    (label,) = [lbl for lbl, c in _labels(dot) if c == "lightgrey"]
    assert label.startswith('"SumBackward') and "dim: " in label


def test_make_dot_show_attrs_truncates_long_values():
    x = ember.ones(2, 3, requires_grad=True)
    dot = make_dot(x.sum(dim=1), show_attrs=True, max_attr_chars=4)
    assert "..." in dot.source


def test_make_dot_several_outputs():
    x = ember.ones(2, requires_grad=True)
    dot = make_dot((x * 2, x + 1))
    assert sum(1 for _, c in _labels(dot) if c == "darkolivegreen1") == 2
    assert sum(1 for _, c in _labels(dot) if c == "lightblue") == 1


def test_make_dot_tensor_without_graph_is_one_box():
    dot = make_dot(ember.ones(3))
    assert _labels(dot) == [('"(3)"', "darkolivegreen1")] and _edges(dot) == []


def test_make_dot_after_backward_still_draws():
    x = ember.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    assert "MulBackward0" in make_dot(y, show_saved=True).source


def test_make_dot_rejects_non_tensor():
    with pytest.raises(TypeError, match="Tensor"):
        make_dot([1.0])


def test_pipe_without_graphviz_raises_naming_install(monkeypatch):
    monkeypatch.setattr(viz.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="install Graphviz"):
        DotGraph("digraph {}\n").pipe()


@needs_dot
def test_pipe_svg_renders():
    _, y = _mlp()
    svg = make_dot(y).pipe("svg")
    assert b"<svg" in svg and b"AddmmBackward0" in svg


@needs_dot
def test_render_writes_dot_and_picture(tmp_path):
    _, y = _mlp()
    out = make_dot(y).render("g", format="svg", directory=str(tmp_path))
    assert out == str(tmp_path / "g.svg")
    assert (tmp_path / "g").read_text().startswith("digraph")


def test_docstring_examples_run():
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    globs = {"ember": ember, **vars(viz)}
    for test in doctest.DocTestFinder(exclude_empty=True).find(viz, "ember.utils.viz",
                                                               globs=globs):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
