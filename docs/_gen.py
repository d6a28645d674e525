"""Generate the documentation pages that must not drift from the code.

Run by ``conf.py`` at the start of every Sphinx build (so the pages are always rebuilt from
the code being documented), and usable on its own::

    python docs/_gen.py                  # write docs/generated/ (what the build does)
    python docs/_gen.py --readme         # rewrite README.md's coverage table from the tool
    python docs/_gen.py --docstrings     # list public names lacking Args/Example sections
    python docs/_gen.py --doctest        # run every reference entry's example
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
    ("autograd.profiler", "ember.autograd.profiler"),
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
    ("utils.data.distributed", "ember.utils.data.distributed"),
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
    ("distributed.pipelining", "ember.distributed.pipelining"),
    ("hub", "ember.hub"),
    ("masked", "ember.masked"),
    ("quasirandom", "ember.quasirandom"),
    ("signal.windows", "ember.signal.windows"),
    ("utils.benchmark", "ember.utils.benchmark"),
    ("nn.attention.flex_attention", "ember.nn.attention.flex_attention"),
    ("nested", "ember.nested"),
    # modules inside the namespaces above that torch's reference documents on pages of their
    # own (``reference_gaps`` finds any other whose names the pages above do not show)
    ("nn.attention", "ember.nn.attention"),
    ("nn.grad", "ember.nn.grad"),
    ("nn.utils.rnn", "ember.nn.utils.rnn"),
    ("nn.utils.parametrize", "ember.nn.utils.parametrize"),
    ("nn.utils.parametrizations", "ember.nn.utils.parametrizations"),
    ("nn.utils.prune", "ember.nn.utils.prune"),
    ("nn.utils.stateless", "ember.nn.utils.stateless"),
    ("optim.swa_utils", "ember.optim.swa_utils"),
    ("autograd.graph", "ember.autograd.graph"),
    ("autograd.anomaly_mode", "ember.autograd.anomaly_mode"),
    ("distributions.constraints", "ember.distributions.constraints"),
    ("distributions.kl", "ember.distributions.kl"),
    ("accelerator", "ember.accelerator"),
    ("cpu", "ember.cpu"),
    ("mps", "ember.mps"),
    ("xpu", "ember.xpu"),
    ("compiler", "ember.compiler"),
    ("overrides", "ember.overrides"),
    ("serialization", "ember.serialization"),
    ("types", "ember.types"),
    ("torch_version", "ember.torch_version"),
    ("cuda.amp", "ember.cuda.amp"),
    ("backends.cpu", "ember.backends.cpu"),
    ("backends.cuda", "ember.backends.cuda"),
    ("backends.cudnn", "ember.backends.cudnn"),
    ("backends.mps", "ember.backends.mps"),
    ("backends.mkldnn", "ember.backends.mkldnn"),
    ("backends.opt_einsum", "ember.backends.opt_einsum"),
    ("distributed.algorithms", "ember.distributed.algorithms"),
]

# torch namespaces ember does not have yet: listed in the reference as such
ABSENT = []

# Besides NAMESPACES, every public module inside tools/coverage.py's namespaces whose names
# the pages above do not all show gets a page of its own, found at build time (``pages()``):
# ``cuda.nvtx``, ``fx.graph``, ``distributions.normal`` (for its helper ``broadcast_all``) ...
# These modules' docstrings are not complete yet, so they get no page until they are
# (tests/test_docs.py keeps this list from growing, and fails for a module on it whose
# docstrings have become complete). Issue 23 is done when it is empty.
UNFINISHED = set("""
""".split())

_found_pages = []
_imported_all = []


def import_public_modules():
    """Import every public module of ember (each dotted part without a leading ``_``).

    NOTE [ The reference does not depend on what was imported before ]
    A package's ``dir()`` shows a submodule only once something has imported it, so the
    modules ``reference_gaps`` finds (and the pages ``pages()`` adds for them) would depend
    on what the process had imported earlier: another test, an example. Importing every
    public module first, walking the package tree from ``ember.__path__``, makes the set of
    pages and names the same in every process. A module whose optional dependency is
    missing (an ``ImportError``) is left out, as a user without it cannot import it either.

    Returns:
        The dotted names of the modules imported, sorted.

    Example:
        >>> "ember.optim.adam" in import_public_modules()
        True
    """
    if not _imported_all:
        import pkgutil

        import ember

        found, stack = [], [ember]
        while stack:
            package = stack.pop()
            for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
                if info.name.rsplit(".", 1)[1].startswith("_"):
                    continue
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        module = importlib.import_module(info.name)
                except ImportError:
                    continue
                found.append(info.name)
                if info.ispkg:
                    stack.append(module)
        _imported_all.append(sorted(found))
    return _imported_all[0]


def coverage_namespaces():
    """tools/coverage.py's namespaces as paths below ``ember`` (``""`` for ``ember``)."""
    return ["" if ns == "torch" else ns for ns in _coverage_tool().NAMESPACES]


def pages():
    """Every reference page as ``(path, title)``: ``NAMESPACES``, then the modules found
    inside the coverage tool's namespaces whose names no page of ``NAMESPACES`` shows
    (except ``UNFINISHED``).

    Returns:
        A list of ``(path, title)`` pairs, such as ``("cuda.nvtx", "ember.cuda.nvtx")``.

    Example:
        >>> ("nn.functional", "ember.nn.functional") in pages()
        True
    """
    if not _found_pages:
        import_public_modules()
        unshown = reference_gaps(coverage_namespaces(), NAMESPACES)
        _found_pages.append([g.split()[0] for g in unshown
                             if g.endswith(" (module)") and g.split()[0] not in UNFINISHED])
    return NAMESPACES + [(path, f"ember.{path}") for path in _found_pages[0]]

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


def _is_helper_import(mod, name, obj):
    """An internal helper imported from a private module: not API.

    NOTE [ Helpers imported into a public module ]
    A public module such as ``ember.optim.adam`` imports helpers it shares with its
    siblings (``closure_loss`` from ``ember.optim._base``); they sit in its ``dir()`` without
    an underscore. A name counts as the module's API when its ``__all__`` lists it, or when
    its object is defined in a public module (``ember.nn.init.constant``, beyond
    ``nn.init``'s ``__all__``, is torch's name too). A function that a module with an
    ``__all__`` leaves out of it and that comes from a module whose path has a private
    component (``ember.optim._base``, ``ember._core.tensor``) is the module's machinery, as
    torch's ``__all__`` says for its own modules. Classes are kept: a type re-exported that
    way (``ember.autograd.ProfilerActivity``, ``ember.types.SymInt``) is one users name.
    """
    listed = getattr(mod, "__all__", None)
    if listed is None or name in listed or not inspect.isfunction(obj):
        return False
    module = getattr(obj, "__module__", None)
    return isinstance(module, str) and module.split(".")[0] == "ember" and \
        any(part.startswith("_") for part in module.split("."))


# module-level names that are Python's machinery, not API (``from __future__ import
# annotations`` leaves ``annotations`` behind)
_NOT_API = {"annotations", "TYPE_CHECKING"}


def _is_typing(obj):
    """A typing helper (``Optional``, a ``TypeVar``) imported for annotations."""
    return any(getattr(o, "__module__", None) in ("typing", "typing_extensions",
                                                  "collections.abc")
               for o in (obj, type(obj)))


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
    # every name a user can reach: ``__all__`` and what ``dir()`` shows (a module's
    # ``__all__`` often lists only what ``import *`` should bring; torch's names beyond it,
    # such as ``ember.nn.init.constant`` or ``ember.hub.DEFAULT_CACHE_DIR``, count too)
    names = set(getattr(mod, "__all__", None) or ()) | set(dir(mod))
    out = []
    for name in sorted(names):
        if name.startswith("_") or (path, name) in OWN_PAGE or name in _NOT_API:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                obj = getattr(mod, name)
        except Exception:
            continue
        if isinstance(obj, types.ModuleType) or not _is_own(obj) or _is_typing(obj) or \
                _is_helper_import(mod, name, obj):
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


def render_api_index(names):
    lines = [".. This page is generated by docs/_gen.py; do not edit.\n",
             _title("API reference"),
             "One page per namespace, in the layout of PyTorch's reference. Every public "
             "name is listed from the live module; ``import ember as torch`` makes each of "
             "them available under its ``torch`` name.\n",
             ".. toctree::\n   :maxdepth: 1\n",
             *(f"   {p}" for p in names), ""]
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
    written, seen = [], set()
    for path, title in pages():
        if namespaces is not None and title not in namespaces:
            continue
        name = title.replace("ember.", "") if title != "ember" else "ember"
        write(os.path.join(out, "api", f"{name}.rst"), render_api_page(path, title, seen))
        written.append(name)
    for stale in set(os.listdir(os.path.join(out, "api"))) - {f"{p}.rst" for p in written}:
        if stale.endswith(".rst") and stale != "index.rst":  # from an earlier, larger build
            os.remove(os.path.join(out, "api", stale))
    write(os.path.join(out, "api", "index.rst"), render_api_index(written))
    write(os.path.join(out, "ops.md"), render_ops_table())
    write(os.path.join(out, "coverage.md"),
          render_coverage(coverage_markdown() if coverage else None))
    return written


# -- does the reference show every public name? ----------------------------------------------


def _child_modules(mod):
    """``{name: module}`` of the public modules inside package ``mod`` that ``dir()`` shows."""
    out = {}
    for name in dir(mod):
        value = getattr(mod, name, None) if not name.startswith("_") else None
        if isinstance(value, types.ModuleType) and value.__name__ == f"{mod.__name__}.{name}":
            out[name] = value
    return out


def reference_gaps(namespaces, page_list=None):
    """The public names of ember's namespaces that the API reference does not show.

    A name of namespace ``ns`` (what ``dir()`` or ``__all__`` lists, as for ``public_names``)
    is shown when it has an entry on ``ns``'s page, or its object (a function or class
    re-exported from elsewhere) has an entry on another page. A module inside ``ns`` is shown
    when it has a page of its own (or a page for a namespace inside it), or when it has no
    public names, or when all of its public names are shown on other pages.

    Args:
        namespaces: paths below ``ember`` (``"nn.functional"``; ``""`` for ``ember``), such as
            ``coverage_namespaces()``.
        page_list: the pages, ``(path, title)`` pairs (default: ``pages()``).

    Returns:
        Sorted dotted names (``"nn.foo"``; a module's as ``"nn.utils.foo (module)"``).

    Example:
        >>> reference_gaps(["fft"])
        []
    """
    import_public_modules()  # NOTE [ The reference does not depend on what was imported before ]
    paged = {path for path, _ in (pages() if page_list is None else page_list)}
    shown_objects = {id(_tensor_class())}  # on a page of its own
    for path in paged - {"Tensor"}:
        mod = _import(path)
        for name, kind in public_names(path):
            if kind in ("class", "function"):
                shown_objects.add(id(getattr(mod, name)))

    def shown(obj):
        return id(obj) in shown_objects

    def module_shown(path, mod):
        if path in paged or any(p.startswith(path + ".") for p in paged):
            return True
        for name in set(dir(mod)) | set(getattr(mod, "__all__", None) or ()):
            if name.startswith("_") or name in _NOT_API:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    obj = getattr(mod, name)
            except Exception:
                continue
            if isinstance(obj, types.ModuleType) or not _is_own(obj) or _is_typing(obj) or \
                    _is_helper_import(mod, name, obj):
                continue
            if not (inspect.isclass(obj) or callable(obj)) or not shown(obj):
                return False  # a constant is shown only on its module's own page
        return True

    gaps = []
    for path in namespaces:
        if path == "Tensor":
            continue
        mod = _import(path)
        entries = {n for n, _ in public_names(path)}
        prefix = f"{path}." if path else ""
        for name in sorted(set(dir(mod)) | set(getattr(mod, "__all__", None) or ())):
            if name.startswith("_") or name in _NOT_API or name in entries:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    obj = getattr(mod, name)
            except Exception:
                continue
            if isinstance(obj, types.ModuleType):
                if obj.__name__ == f"{mod.__name__}.{name}" and \
                        not module_shown(prefix + name, obj):
                    gaps.append(f"{prefix}{name} (module)")
            elif _is_own(obj) and not _is_typing(obj) and not shown(obj) and \
                    not _is_helper_import(mod, name, obj):
                gaps.append(prefix + name)
    return sorted(gaps)


# -- the reference's examples, as doctests ----------------------------------------------------


def run_examples(namespaces=None):
    """Run the example of every entry of the reference as a doctest.

    Each runs with ``ember`` and ``np`` defined, and the public names of its namespace and of
    the module that defines it (examples written inside a module use its names unqualified).
    An object shown on several pages runs once. Run it in a scratch directory: examples may
    write files.

    Args:
        namespaces: titles from ``NAMESPACES`` (default: all).

    Returns:
        ``(ran, failed)``: how many docstrings had examples, and the titles of those that
        failed (``"ember.nn.Softshrink"``).

    Example:
        >>> run_examples(["ember.fft"])[1]
        []
    """
    import builtins
    import doctest

    import numpy as np

    import ember

    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    parser = doctest.DocTestParser()

    def names_of(module):
        return {k: v for k, v in vars(module).items()
                if not k.startswith("__") and not hasattr(builtins, k)}

    seen, failed, ran = set(), [], 0
    for path, title in pages():
        if namespaces is not None and title not in namespaces:
            continue
        holder = ember.Tensor if path == "Tensor" else _import(path)
        for name, _kind in public_names(path):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # reading a deprecated alias warns
                    obj = inspect.getattr_static(holder, name) if path == "Tensor" else \
                        getattr(holder, name)
                    obj = getattr(obj, "fget", getattr(obj, "__func__", obj))
            except Exception:
                continue
            doc = inspect.getdoc(obj) if callable(obj) or isinstance(obj, type) else None
            if not doc or ">>>" not in doc or id(obj) in seen:
                continue
            seen.add(id(obj))
            globs = names_of(sys.modules.get(getattr(obj, "__module__", None) or "", builtins))
            if path != "Tensor":
                globs.update(names_of(holder))
            # as typed at the prompt (a class defined there belongs to ``__main__``)
            globs.update(ember=ember, np=np, __name__="__main__")
            test = parser.get_doctest(doc, globs, f"{title}.{name}", None, 0)
            ran += 1
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if runner.run(test, out=lambda s: None).failed:
                    failed.append(f"{title}.{name}")
    return ran, failed


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
    for path, title in pages():
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
    # a parameter whose name starts with ``_`` is internal (``_dispatch_key``): not API
    params = [p for p in sig.parameters.values()
              if p.name not in ("self", "cls") and not p.name.startswith("_")]
    return bool(params)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--readme", action="store_true", help="rewrite README.md's coverage table")
    p.add_argument("--docstrings", action="store_true",
                   help="list public names whose docstring lacks Args or an Example")
    p.add_argument("--doctest", action="store_true",
                   help="run every entry's example as a doctest (from a scratch directory)")
    p.add_argument("--namespace", action="append",
                   help="with --docstrings or --doctest: only these titles")
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
    elif args.doctest:
        ran, failed = run_examples(args.namespace)
        print("\n".join(failed + [f"{len(failed)} of {ran} examples failed"]))
        raise SystemExit(1 if failed else 0)
    elif args.docstrings:
        gaps = docstring_gaps(args.namespace)
        total = 0
        for title, rows in gaps.items():
            for name, what in rows:
                print(f"{title}.{name}: no {what}")
            total += len(rows)
        counted = sum(len([n for n, k in public_names(path)
                           if k not in ("data", "attribute") and _is_ember_own(path, n)])
                      for path, title in pages()
                      if args.namespace is None or title in args.namespace)
        print(f"{total} of {counted} public callables lack a docstring with Args and Example")
    else:
        written = generate()
        print(f"wrote {len(written)} API pages, ops.md and coverage.md under {OUT}")


if __name__ == "__main__":
    main()
