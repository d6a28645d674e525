"""tools/transform_rules.py: the registry's ops counted by forward-mode rule and by batching
rule (issue 18's closing note)."""

import importlib.util
from pathlib import Path

from ember._ops._registry import ops
from ember.func._batch_rules import fallback_names, rule_names

_TOOL = Path(__file__).resolve().parents[2] / "tools" / "transform_rules.py"


def _tool():
    spec = importlib.util.spec_from_file_location("transform_rules", _TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_batching_groups_partition_the_registry():
    groups = _tool().batching_groups()
    have, slow = set(groups["batching rule"]), set(groups["per-example fallback"])
    assert not have & slow
    assert have | slow == {n for n, op in ops.items() if op.is_builtin}


def test_forward_groups_cover_every_differentiable_op_once():
    groups = _tool().forward_groups()
    names = [n for g in groups.values() for n in g]
    assert len(names) == len(set(names))
    assert set(names) == {n for n, op in ops.items() if op.differentiable and op.is_builtin}


def test_fallback_names_excludes_ops_with_rules():
    slow = set(fallback_names())
    assert not slow & set(rule_names())
    assert "cross_entropy_loss" not in slow and "binary_cross_entropy" not in slow


def test_tool_prints_counts(capsys):
    assert _tool().main([]) == 0
    out = capsys.readouterr().out
    assert "per-example fallback:" in out and "own formula:" in out
