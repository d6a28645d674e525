"""Generate the documentation pages that must not drift from the code.

Run by ``conf.py`` at the start of every Sphinx build (so the pages are always rebuilt from
the code being documented), and usable on its own::

    python docs/_gen.py                  # write docs/generated/ (what the build does)
    python docs/_gen.py --readme         # rewrite README.md's coverage table from the tool
    python docs/_gen.py --docstrings     # list public names lacking Args/Example sections
    python docs/_gen.py --examples       # rerun/extend the op examples (docs/_op_examples.py)

What it writes into ``docs/generated/``:

- ``api/<namespace>.rst`` -- one page per ember namespace, mirroring torch's reference: a
  summary table (autosummary) of every public name, then each name's entry (autodoc).
  The names are read from the live modules (``__all__``, else ``dir()``), never listed by
  hand, so a new function appears in the reference the day it is added.
- ``ops.md`` -- the operator registry (``ember.list_ops()``): every op's signature, the
  backends with kernels, and whether autograd differentiates it.
- ``coverage.md`` -- ``tools/coverage.py --markdown``: what ember has of each torch
  namespace. Needs torch installed (the ``test`` extra); without it the page says so.
"""

from __future__ import annotations

import argparse
import enum
import importlib
import inspect
import os
import re
import sys
import types
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
# the repository documented: this folder's parent, or EMBER_DOCS_ROOT (tests build a copy of
# docs/ elsewhere so that they never write into the checkout)
ROOT = os.environ.get("EMBER_DOCS_ROOT") or os.path.dirname(HERE)
OUT = os.path.join(HERE, "generated")

# (module path under ember, page title): torch's reference, namespace by namespace. "Tensor"
# is the class, documented method by method.
NAMESPACES = [
    ("", "ember"),
    ("Tensor", "ember.Tensor"),
    ("nn", "ember.nn"),
    ("nn.functional", "ember.nn.functional"),
    ("nn.init", "ember.nn.init"),
    ("nn.utils", "ember.nn.utils"),
    ("optim", "ember.optim"),
    ("optim.lr_scheduler", "ember.optim.lr_scheduler"),
    ("utils.data", "ember.utils.data"),
    ("utils.checkpoint", "ember.utils.checkpoint"),
    ("autograd", "ember.autograd"),
    ("autograd.functional", "ember.autograd.functional"),
    ("autograd.forward_ad", "ember.autograd.forward_ad"),
    ("func", "ember.func"),
    ("linalg", "ember.linalg"),
    ("fft", "ember.fft"),
    ("special", "ember.special"),
    ("random", "ember.random"),
    ("distributions", "ember.distributions"),
    ("amp", "ember.amp"),
    ("profiler", "ember.profiler"),
    ("multiprocessing", "ember.multiprocessing"),
    ("distributed", "ember.distributed"),
    ("cuda", "ember.cuda"),
    ("backends", "ember.backends"),
    ("jit", "ember.jit"),
    ("library", "ember.library"),
    ("onnx", "ember.onnx"),
    ("sparse", "ember.sparse"),
    ("testing", "ember.testing"),
    ("utils.collect_env", "ember.utils.collect_env"),
    ("nn.parallel", "ember.nn.parallel"),
    ("utils.tensorboard", "ember.utils.tensorboard"),
    ("utils.flop_counter", "ember.utils.flop_counter"),
    ("utils.viz", "ember.utils.viz"),
    ("fx", "ember.fx"),
    ("export", "ember.export"),
    ("ao.quantization", "ember.ao.quantization"),
    ("futures", "ember.futures"),
    ("distributed.rpc", "ember.distributed.rpc"),
    ("distributed.optim", "ember.distributed.optim"),
    ("distributed.checkpoint", "ember.distributed.checkpoint"),
    ("distributed.tensor", "ember.distributed.tensor"),
    ("distributed.tensor.parallel", "ember.distributed.tensor.parallel"),
    ("hub", "ember.hub"),
    ("masked", "ember.masked"),
    ("quasirandom", "ember.quasirandom"),
    ("signal.windows", "ember.signal.windows"),
    ("utils.benchmark", "ember.utils.benchmark"),
    ("nn.attention.flex_attention", "ember.nn.attention.flex_attention"),
]

# torch namespaces ember does not have yet: listed in the reference as such
ABSENT = []

# names documented on a page of their own rather than on their namespace's page
OWN_PAGE = {("", "Tensor")}


def _import(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return importlib.import_module("ember" + (f".{path}" if path else ""))


def _is_own(obj):
    """A function or class defined in ember (not re-exported from elsewhere)."""
    if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.isbuiltin(obj)):
        return True
    module = getattr(obj, "__module__", None)
    return not isinstance(module, str) or module.split(".")[0] in ("ember", "torch")


def public_names(path):
    """The public names of ember namespace ``path`` as ``[(name, kind)]``.

    Args:
        path: a namespace below ``ember`` (``"nn.functional"``), ``""`` for ``ember`` itself,
            or ``"Tensor"``.

    Returns:
        Sorted ``(name, kind)`` pairs; kind is one of ``"class"``, ``"function"``,
        ``"data"`` for a module, and ``"method"``, ``"property"``, ``"attribute"`` for
        ``Tensor``. Submodules are left out (they have pages of their own).

    Example:
        >>> ("relu", "function") in public_names("nn.functional")
        True
    """
    if path == "Tensor":
        return _tensor_members()
    mod = _import(path)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n in dir(mod) if not n.startswith("_")]
    out = []
    for name in sorted(set(names)):
        if name.startswith("_") or (path, name) in OWN_PAGE:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                obj = getattr(mod, name)
        except Exception:
            continue
        if isinstance(obj, types.ModuleType) or not _is_own(obj):
            continue
        if obj is _tensor_class() and path:  # re-exported ember.Tensor: it has its own page
            continue
        if inspect.isclass(obj):
            kind = "class"
        elif callable(obj):
            kind = "function"
        else:
            kind = "data"
        out.append((name, kind))
    return out


def _tensor_class():
    import ember

    return ember.Tensor


def _tensor_members():
    import ember

    out = []
    for name in sorted(dir(ember.Tensor)):
        if name.startswith("_"):
            continue
        raw = inspect.getattr_static(ember.Tensor, name, None)
        if isinstance(raw, (property, types.GetSetDescriptorType, types.MemberDescriptorType)):
            kind = "property"
        elif callable(raw) or isinstance(raw, (staticmethod, classmethod)):
            kind = "method"
        else:
            kind = "attribute"
        out.append((name, kind))
    return out


def _title(text, ch="="):
    return f"{text}\n{ch * len(text)}\n"


def render_api_page(path, title, seen_classes=None):
    """The reST source of one namespace's reference page.

    ``seen_classes``: the classes already documented on earlier pages (updated). A class
    re-exported under a second path (``ember.no_grad`` and ``ember.autograd.no_grad``) gets
    its entry on both pages, the second one marked ``:no-index:`` (one index target each).
    """
    seen_classes = set() if seen_classes is None else seen_classes
    module = "ember" + (f".{path}" if path and path != "Tensor" else "")
    members = public_names(path)
    lines = [".. This page is generated by docs/_gen.py from the module; do not edit.\n",
             _title(title)]
    if path == "Tensor":
        lines += [".. currentmodule:: ember\n",
                  ".. autoclass:: Tensor\n   :no-members:\n"]
        prefix = "Tensor."
    else:
        lines += [f".. automodule:: {module}\n   :no-members:\n",
                  f".. currentmodule:: {module}\n"]
        prefix = ""
    if not members:
        lines.append("This namespace has no public names of its own yet.\n")
        return "\n".join(lines)
    lines += [".. autosummary::\n   :nosignatures:\n",
              *(f"   {prefix}{n}" for n, _ in members), ""]
    groups = {}
    for name, kind in members:
        groups.setdefault(kind, []).append(name)
    headings = [("class", "Classes", "autoclass"), ("function", "Functions", "autofunction"),
                ("data", "Constants and objects", "autodata"),
                ("method", "Methods", "automethod"), ("property", "Properties", "autoproperty"),
                ("attribute", "Attributes", "autoattribute")]
    for kind, heading, directive in headings:
        if kind not in groups:
            continue
        lines.append(_title(heading, "-"))
        for name in groups[kind]:
            extra = "\n   :no-value:" if kind == "data" else ""
            if kind == "class":
                obj = getattr(_import(path), name)
                key = f"{obj.__module__}.{obj.__qualname__}"
                if key in seen_classes:
                    extra = "\n   :no-index:"
                seen_classes.add(key)
            lines.append(f".. {directive}:: {prefix}{name}{extra}\n")
    return "\n".join(lines)


def render_api_index(pages):
    lines = [".. This page is generated by docs/_gen.py; do not edit.\n",
             _title("API reference"),
             "One page per namespace, in the layout of PyTorch's reference. Every public "
             "name is listed from the live module; ``import ember as torch`` makes each of "
             "them available under its ``torch`` name.\n",
             ".. toctree::\n   :maxdepth: 1\n",
             *(f"   {p}" for p in pages), ""]
    if ABSENT:
        lines.append("Not in ember yet: " + ", ".join(f"``torch.{a}``" for a in ABSENT)
                     + " (see :doc:`/coverage`).\n")
    return "\n".join(lines)


def _cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def render_ops_table():
    """The operator registry as a Markdown page (MyST): one row per ``list_ops()`` entry."""
    import ember

    rows = ember.list_ops()
    kernels = [r for r in rows if r["backends"] != ["composite"]]
    out = ["<!-- generated by docs/_gen.py from ember.list_ops(); do not edit -->", "",
           "# Operator registry", "",
           f"ember declares {len(kernels)} operators with kernels of their own and "
           f"{len(rows) - len(kernels)} public functions composed from them "
           "(backend `composite`: they run wherever their parts run and are "
           "differentiable through them). The table is `ember.list_ops()`, read at build "
           "time: the same declarations the dispatcher and the OpInfo tests use. Names "
           "starting with `_` are internal ops that public functions call.", "",
           "| op | signature | backends | differentiable |", "|---|---|---|---|"]
    for r in rows:
        sig = f"`{_cell(r['signature'])}`" if r["signature"] else ""
        out.append(f"| `{r['name']}` | {sig} | {', '.join(r['backends'])} | "
                   f"{'yes' if r['differentiable'] else 'no'} |")
    return "\n".join(out) + "\n"


def coverage_markdown():
    """``tools/coverage.py --markdown``'s table, or None when torch is not installed."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return None
    cov_tool = _coverage_tool()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = cov_tool.coverage_table(cov_tool.NAMESPACES)
    return cov_tool.format_table(rows, markdown=True).strip() + "\n"


def _coverage_tool():
    """tools/coverage.py as a module (by path: the name ``coverage`` is a PyPI package's)."""
    import importlib.util

    name = "_ember_coverage_tool"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, os.path.join(ROOT, "tools", "coverage.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


def render_coverage(table):
    head = ["<!-- generated by docs/_gen.py from tools/coverage.py; do not edit -->", ""]
    if table is None:
        return "\n".join(head + [
            "```{note}", "This build did not regenerate the table (PyTorch is not installed, "
            "or EMBER_DOCS_COVERAGE=0). Install the `test` extra and rebuild.", "```", ""])
    return "\n".join(head) + table


def write(path, text):
    """Write ``text`` to ``path`` only when it changed (keeps Sphinx's rebuilds incremental)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def generate(out=OUT, namespaces=None, coverage=True):
    """Write every generated page under ``out``.

    Args:
        out: the folder (``docs/generated``).
        namespaces: titles of the API pages to write (default: all).
        coverage: run the coverage tool (needs torch, ~5 s); False writes a note instead.

    Returns:
        The API page names written.
    """
    pages, seen = [], set()
    for path, title in NAMESPACES:
        if namespaces is not None and title not in namespaces:
            continue
        name = title.replace("ember.", "") if title != "ember" else "ember"
        write(os.path.join(out, "api", f"{name}.rst"), render_api_page(path, title, seen))
        pages.append(name)
    for stale in set(os.listdir(os.path.join(out, "api"))) - {f"{p}.rst" for p in pages}:
        if stale.endswith(".rst") and stale != "index.rst":  # from an earlier, larger build
            os.remove(os.path.join(out, "api", stale))
    write(os.path.join(out, "api", "index.rst"), render_api_index(pages))
    write(os.path.join(out, "ops.md"), render_ops_table())
    write(os.path.join(out, "coverage.md"),
          render_coverage(coverage_markdown() if coverage else None))
    return pages


# -- README's coverage table ---------------------------------------------------------------

BEGIN, END = "<!-- coverage:begin -->", "<!-- coverage:end -->"


def readme_table(readme_text):
    """The coverage table between the README's markers (None when the markers are absent)."""
    m = re.search(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), readme_text, re.S)
    return m.group(1) if m else None


def update_readme(path=os.path.join(ROOT, "README.md")):
    table = coverage_markdown()
    if table is None:
        raise SystemExit("docs/_gen.py --readme needs torch installed (the test extra)")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if readme_table(text) is None:
        raise SystemExit(f"{path} has no {BEGIN} ... {END} markers")
    new = re.sub(re.escape(BEGIN) + r"\n.*?" + re.escape(END),
                 lambda _: f"{BEGIN}\n{table}{END}", text, flags=re.S)
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)
    print(f"{path}: coverage table updated")


# -- docstring completeness -----------------------------------------------------------------

_ARGS = re.compile(r"^\s*(Args|Arguments|Parameters|Keyword args|Keyword Arguments)\s*:?\s*$",
                   re.M)
_EXAMPLE = re.compile(r"^\s*(Examples?::?|>>> )", re.M)


def docstring_gaps(namespaces=None):
    """Public names whose docstring lacks an Args (or Parameters) section or an example.

    Args:
        namespaces: titles from ``NAMESPACES`` to check (default: all).

    Returns:
        ``{title: [(name, what is missing), ...]}``. Classes are checked on the class
        docstring; names that take no arguments need no Args section; constants and
        re-exports of Python's own library (``ember.multiprocessing.Lock``) are skipped.

    Example:
        >>> gaps = docstring_gaps(["ember.fft"])
        >>> sorted(gaps) == ["ember.fft"]
        True
    """
    result = {}
    for path, title in NAMESPACES:
        if namespaces is not None and title not in namespaces:
            continue
        mod = _import(path) if path != "Tensor" else None
        gaps = []
        for name, kind in public_names(path):
            if kind in ("data", "attribute"):
                continue
            obj = getattr(__import__("ember").Tensor if mod is None else mod, name)
            module = getattr(obj, "__module__", None)
            if mod is not None and isinstance(module, str) and \
                    module.split(".")[0] not in ("ember", "torch"):
                continue  # Python's own (ember.multiprocessing re-exports multiprocessing)
            doc = inspect.getdoc(obj) or ""
            missing = []
            if not doc:
                missing.append("docstring")
            else:
                if _takes_arguments(obj, kind) and not _ARGS.search(doc):
                    missing.append("Args")
                if not _EXAMPLE.search(doc):
                    missing.append("Example")
            if missing:
                gaps.append((name, ", ".join(missing)))
        result[title] = gaps
    return result


def _is_ember_own(path, name):
    """Whether ``ember.<path>.<name>`` is ember's (not a re-export of Python's library)."""
    if path == "Tensor":
        return True
    module = getattr(getattr(_import(path), name, None), "__module__", None)
    return not isinstance(module, str) or module.split(".")[0] in ("ember", "torch")


def _takes_arguments(obj, kind):
    if kind == "property":
        return False
    if inspect.isclass(obj) and issubclass(obj, (BaseException, enum.Enum)):
        # an exception's arguments are its message and an enum's members are reached by
        # name: only a constructor of ember's own needs an Args section
        init = next((c.__dict__["__init__"] for c in obj.__mro__ if "__init__" in c.__dict__),
                    None)
        module = getattr(init, "__module__", None) or ""
        if not module.startswith(("ember", "torch")):
            return False
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return True
    params = [p for p in sig.parameters.values() if p.name not in ("self", "cls")]
    return bool(params)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--readme", action="store_true", help="rewrite README.md's coverage table")
    p.add_argument("--docstrings", action="store_true",
                   help="list public names whose docstring lacks Args or an Example")
    p.add_argument("--namespace", action="append", help="with --docstrings: only these titles")
    p.add_argument("--examples", action="store_true",
                   help="rerun the op examples of ember/_ops/_doc_examples.py, recording their "
                        "outputs, and add one for every op that lacks an example")
    args = p.parse_args(argv)
    sys.path.insert(0, ROOT)
    if args.readme:
        update_readme()
    elif args.examples:
        sys.path.insert(0, HERE)
        import _op_examples

        _op_examples.main()
    elif args.docstrings:
        gaps = docstring_gaps(args.namespace)
        total = 0
        for title, rows in gaps.items():
            for name, what in rows:
                print(f"{title}.{name}: no {what}")
            total += len(rows)
        counted = sum(len([n for n, k in public_names(path)
                           if k not in ("data", "attribute") and _is_ember_own(path, n)])
                      for path, title in NAMESPACES
                      if args.namespace is None or title in args.namespace)
        print(f"{total} of {counted} public callables lack a docstring with Args and Example")
    else:
        pages = generate()
        print(f"wrote {len(pages)} API pages, ops.md and coverage.md under {OUT}")


if __name__ == "__main__":
    main()
