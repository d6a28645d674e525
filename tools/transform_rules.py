"""Count the registry's ops by the rule each transform uses (issue 18's closing note).

    python tools/transform_rules.py          # counts, and the ops vmap runs per example
    python tools/transform_rules.py --all    # every group's names

Forward mode (NOTE [ Which rule each op uses ] in ember/autograd/_forward.py): a
differentiable op is either linear or a view (the op applied to its tangents), or has a
``jvp`` formula of its own, or is element-wise (the diagonal rule), or else takes the
transpose of its vjp. ``vmap`` (NOTE [ vmap batching ] in ember/func/_batch_rules.py): an op
has a batching rule (``rule_names()``) or runs once per example (``fallback_names()``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# the repository root, not this folder: tools/coverage.py would shadow the ``coverage``
# package that numba imports when ember loads its compiled kernels
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))


def forward_groups():
    """``{group: sorted names}`` of the differentiable built-in ops by forward-mode rule:
    ``"linear or view"``, ``"own formula"``, ``"element-wise (diagonal)"``,
    ``"transpose of the vjp"``."""
    import ember  # noqa: F401  (registers every op family)
    from ember._ops._elementwise import ElementwiseOp
    from ember._ops._registry import ops
    from ember.autograd._forward import fallback_ops

    transpose = set(fallback_ops())
    groups = {"linear or view": [], "own formula": [], "element-wise (diagonal)": [],
              "transpose of the vjp": []}
    for name, op in sorted(ops.items()):
        if not op.differentiable or not op.is_builtin:
            continue
        if op.linear or op.view_of is not None:
            groups["linear or view"].append(name)
        elif op.jvp is not None:
            groups["own formula"].append(name)
        elif isinstance(op, ElementwiseOp):
            groups["element-wise (diagonal)"].append(name)
        elif name in transpose:
            groups["transpose of the vjp"].append(name)
        else:  # a vjp from outside ember's package: its formulas are not ours to count
            groups["transpose of the vjp"].append(name)
    return groups


def batching_groups():
    """``{"batching rule": names, "per-example fallback": names}`` over the registry."""
    import ember  # noqa: F401
    from ember._ops._registry import ops
    from ember.func._batch_rules import fallback_names, rule_names

    have = [n for n in rule_names() if n in ops]
    return {"batching rule": have, "per-example fallback": fallback_names()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--all", action="store_true", help="list every group's names")
    args = parser.parse_args(argv)
    fwd = forward_groups()
    total = sum(len(v) for v in fwd.values())
    print(f"forward mode: {total} differentiable ops")
    for group, names in fwd.items():
        print(f"  {group}: {len(names)}")
        if args.all or group == "transpose of the vjp":
            if names:
                print("    " + ", ".join(names))
    bat = batching_groups()
    print(f"vmap: {len(bat['batching rule']) + len(bat['per-example fallback'])} registry ops")
    for group, names in bat.items():
        print(f"  {group}: {len(names)}")
        if args.all or group == "per-example fallback":
            print("    " + ", ".join(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
