"""Where ``replace_pattern`` puts a replacement: before the first user of what the match
returned, as torch does (the documentation's example prints the same code)."""

import pytest

import ember
from ember.fx import subgraph_rewriter, symbolic_trace


def _docs_example(m):
    class M(m.nn.Module):
        def forward(self, x, w1, w2):
            m1 = m.cat([w1, w2]).sum()
            m2 = m.cat([w1, w2]).sum()
            return x + m.max(m1) + m.max(m2)

    def pattern(w1, w2):
        return m.cat([w1, w2]).sum()

    def replacement(w1, w2):
        return m.stack([w1, w2])

    gm = m.fx.symbolic_trace(M())
    m.fx.subgraph_rewriter.replace_pattern(gm, pattern, replacement)
    return gm


def test_replace_pattern_places_replacement_before_first_user_as_torch():
    torch = pytest.importorskip("torch")
    ours = _docs_example(ember)
    theirs = _docs_example(torch)
    assert [n.name for n in ours.graph.nodes] == [n.name for n in theirs.graph.nodes]
    assert ours.code == theirs.code


def test_replace_pattern_unused_result_goes_after_the_match():
    def f(x):
        ember.relu(x)
        return x + 1

    gm = symbolic_trace(f)
    subgraph_rewriter.replace_pattern(gm, lambda x: ember.relu(x), lambda x: ember.sigmoid(x))
    ops = [n.name for n in gm.graph.nodes]
    assert ops == ["x", "sigmoid", "add", "output"]
