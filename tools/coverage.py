"""How much of PyTorch's public surface ember has (issue 17, "the whole everyday surface").

For each public torch namespace this script lists the public names real torch has, checks
whether ember has the same name at the same dotted path (``torch.nn.functional.relu`` ->
``ember.nn.functional.relu``), and prints a coverage table.

    python tools/coverage.py                    # table for every namespace, plus a total
    python tools/coverage.py --missing nn       # the names ember lacks in torch.nn
    python tools/coverage.py --markdown         # the table as Markdown, for the README
    python tools/coverage.py --namespaces torch,fft   # only some namespaces

What counts as a *public* name of a torch namespace (a module, or ``torch.Tensor``):

- It is listed by ``dir()`` and does not start with ``_``.
- It is not an imported module of some other namespace: a module attribute counts only when
  it is a child of the namespace (``torch.nn.functional`` counts for ``torch.nn``;
  ``torch.nn.functional.math`` and ``torch.os`` do not).
- It is not a typing helper: objects defined in ``typing``, ``typing_extensions``,
  ``collections.abc`` or ``__future__`` (``Optional``, ``Callable``, ``TypeVar`` instances,
  ``annotations``), and the ``TYPE_CHECKING`` flag.
- It is not a function or class imported from outside torch (``functools.wraps``,
  ``contextlib.contextmanager``, ``dataclasses.dataclass`` ...): such an object's
  ``__module__`` names a package other than ``torch``. Plain values (``torch.inf``,
  ``torch.float32``) always count.
- It is not a function torch keeps only to say it was removed (``torch.eig``, ``torch.lstsq``,
  ``torch.symeig`` ...): a Python function whose source raises an error saying the function
  "is now removed" / "has been removed".

For ``Tensor`` the public attributes of ``torch.Tensor`` are compared with ``ember.Tensor``.

A name counts as present in ember only if ``getattr`` on the ember namespace succeeds (ember's
module ``__getattr__`` raises AttributeError for names it lacks). A namespace whose ember
module cannot be imported counts as 0%. Presence is all this checks: whether the name
behaves as torch's does is for the tests.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import sys
import types
import warnings
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path, where its own name would shadow
# the ``coverage`` package for anything importing it (numba does, when ember loads it).
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

# The namespaces of issue 17, as dotted paths below ``torch`` ("" is ``torch`` itself).
NAMESPACES = [
    "torch", "Tensor", "nn", "nn.functional", "nn.init", "nn.utils", "optim",
    "optim.lr_scheduler", "utils.data", "autograd", "linalg", "fft", "special",
    "distributions", "amp", "backends", "cuda", "jit", "utils.checkpoint", "func",
    "profiler", "distributed", "fx", "onnx", "sparse", "library", "ao.quantization",
    "autograd.forward_ad", "autograd.functional", "autograd.profiler", "nn.parallel",
    "utils.tensorboard", "utils.data.distributed",
    "utils.flop_counter", "export", "futures", "distributed.rpc", "distributed.optim",
    "distributed.tensor", "distributed.tensor.parallel", "hub",
    "masked", "quasirandom", "signal.windows", "utils.benchmark",
    "nn.attention.flex_attention", "nested", "distributed.pipelining",
]

_TYPING_MODULES = {"typing", "typing_extensions", "collections.abc", "__future__"}
_REMOVED_PHRASES = ("is now removed", "has been removed", "was removed")


def _module_path(ns: str, root: str) -> str:
    """``'nn.functional'`` -> ``'torch.nn.functional'``; ``'torch'`` -> ``'torch'``."""
    return root if ns == "torch" else f"{root}.{ns}"


def _load(ns: str, root: str):
    """The namespace object (module or Tensor class) under ``root``, or None if absent."""
    if ns == "Tensor":
        return getattr(importlib.import_module(root), "Tensor", None)
    try:
        return importlib.import_module(_module_path(ns, root))
    except Exception:  # a missing or broken ember module counts as absent
        return None


def _is_typing_helper(name: str, obj) -> bool:
    if name == "TYPE_CHECKING":
        return True
    module = getattr(type(obj), "__module__", None)
    own = obj.__dict__.get("__module__") if hasattr(obj, "__dict__") else None
    for m in (module, own, getattr(obj, "__module__", None)):
        if isinstance(m, str) and m in _TYPING_MODULES:
            return True
    return False


def _is_foreign(obj) -> bool:
    """A function or class imported into torch from another package."""
    if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.isbuiltin(obj)):
        return False
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str):  # many C functions carry no module: torch's own
        return False
    return module.split(".")[0] != "torch"


def _is_removed(obj) -> bool:
    """A Python function torch keeps only to raise "this function was removed"."""
    if not inspect.isfunction(obj):
        return False
    try:
        source = inspect.getsource(obj)
    except (OSError, TypeError):
        return False
    return "raise" in source and any(p in source for p in _REMOVED_PHRASES)


def public_names(ns: str) -> list[str]:
    """The public names of torch namespace ``ns`` (see the module docstring for the rules).

    Args:
        ns: a namespace of ``NAMESPACES``, e.g. ``"nn.functional"`` or ``"Tensor"``.

    Returns:
        The sorted list of names.

    Example:
        >>> "relu" in public_names("nn.functional")  # doctest: +SKIP
        True
    """
    obj = _load(ns, "torch")
    if obj is None:
        raise ImportError(f"coverage: torch namespace {ns!r} cannot be imported")
    prefix = obj.__name__ + "." if isinstance(obj, types.ModuleType) else None
    names = []
    for name in dir(obj):
        if name.startswith("_"):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = getattr(obj, name)
        except Exception:
            continue
        if isinstance(value, types.ModuleType):
            if prefix is None or not value.__name__.startswith(prefix):
                continue
        elif _is_typing_helper(name, value) or _is_foreign(value) or _is_removed(value):
            continue
        names.append(name)
    return sorted(names)


def missing_names(ns: str, names: list[str] | None = None) -> list[str]:
    """The public torch names of ``ns`` that ember lacks.

    Args:
        ns: a namespace of ``NAMESPACES``.
        names: the torch names to check (default: ``public_names(ns)``).

    Returns:
        The sorted names for which ``getattr`` on the ember namespace fails; all of them
        when ember has no such namespace.

    Example:
        >>> "relu" in missing_names("nn.functional")  # doctest: +SKIP
        False
    """
    if names is None:
        names = public_names(ns)
    ember_obj = _load(ns, "ember")
    if ember_obj is None:
        return list(names)
    missing = []
    for name in names:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                getattr(ember_obj, name)
        except Exception:
            # a subpackage not imported yet is still there for ``import torch.<ns>.<name>``
            if not hasattr(ember_obj, "__path__") or \
                    importlib.util.find_spec(f"{ember_obj.__name__}.{name}") is None:
                missing.append(name)
    return missing


def coverage_table(namespaces: list[str]) -> list[tuple[str, int, int]]:
    """Rows ``(namespace, torch names, ember has)`` for each namespace.

    Args:
        namespaces: namespaces of ``NAMESPACES``.

    Returns:
        One tuple per namespace, in the order given.

    Example:
        >>> coverage_table(["fft"])  # doctest: +SKIP
        [('fft', 22, 22)]
    """
    # every namespace imported on both sides first: a subpackage counts as a name of its
    # parent once something has imported it (torch.distributed.checkpoint imports
    # torch.distributed.tensor.parallel), so the order of the rows must not decide
    for ns in namespaces:
        _load(ns, "torch")
        _load(ns, "ember")
    rows = []
    for ns in namespaces:
        names = public_names(ns)
        rows.append((ns, len(names), len(names) - len(missing_names(ns, names))))
    return rows


def _percent(has: int, total: int) -> str:
    return f"{100.0 * has / total:.0f}%" if total else "-"


def format_table(rows: list[tuple[str, int, int]], markdown: bool = False) -> str:
    """The rows of ``coverage_table`` plus a total line, as text or Markdown."""
    total = ("total", sum(r[1] for r in rows), sum(r[2] for r in rows))
    lines = []
    if markdown:
        lines.append("| namespace | torch names | ember has | coverage |")
        lines.append("|---|---:|---:|---:|")
        for ns, n, has in rows:
            label = ns if ns in ("torch", "Tensor") else f"torch.{ns}"
            lines.append(f"| `{label}` | {n} | {has} | {_percent(has, n)} |")
        pct = _percent(total[2], total[1])
        lines.append(f"| **total** | {total[1]} | {total[2]} | **{pct}** |")
    else:
        lines.append(f"{'namespace':<20} {'torch':>6} {'ember':>6} {'percent':>8}")
        lines.append("-" * 43)
        for ns, n, has in rows + [total]:
            if ns == "total":
                lines.append("-" * 43)
            lines.append(f"{ns:<20} {n:>6} {has:>6} {_percent(has, n):>8}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--missing", metavar="NS", help="print the names ember lacks in NS")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--namespaces", help="comma-separated namespaces (default: all)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    if args.missing:
        if args.missing not in NAMESPACES:
            parser.error(f"unknown namespace {args.missing!r}; choose from {NAMESPACES}")
        print("\n".join(missing_names(args.missing)))
        return 0
    namespaces = args.namespaces.split(",") if args.namespaces else NAMESPACES
    unknown = [ns for ns in namespaces if ns not in NAMESPACES]
    if unknown:
        parser.error(f"unknown namespaces {unknown}; choose from {NAMESPACES}")
    print(format_table(coverage_table(namespaces), markdown=args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
