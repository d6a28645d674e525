"""The documentation: it builds with warnings as errors, its code runs, its tables tell the truth.

- The Sphinx build (docs/conf.py) of the guides, the operator table and the whole API
  reference, with ``-W``, and every entry the generated pages ask for is in the built
  inventory; skipped when the ``docs`` extra is not installed (``EMBER_DOCS_QUICK=1``: a
  sample of the reference).
- Every public name of the namespaces tools/coverage.py counts has an entry in the
  reference, and every entry's docstring has Args and an example.
- Every ```python block of the guides runs, page by page, in a scratch directory.
- The docstring examples of a sample of modules pass as doctests, and so do the examples
  of every registered op (ember/_ops/_doc_examples.py, NOTE [ Generated docstrings ]).
- The README's coverage table is what tools/coverage.py reports (needs torch), and its first
  two commands stay as they are.
"""

import doctest
import importlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_SPHINX = all(importlib.util.find_spec(m) is not None
                 for m in ("sphinx", "furo", "myst_parser"))

GUIDES = ["getting_started", "coming_from_pytorch", "autograd", "extending", "performance",
          "exporting"]

# the API pages the quick build renders: one large namespace, small ones, and the class page
# that takes the most care (Tensor's methods and properties are in the full build)
QUICK_PAGES = "ember.nn.functional,ember.nn.init,ember.fft,ember.utils.collect_env"

# modules whose docstring examples run as doctests here (ember's own documentation)
DOCTEST_MODULES = ["ember.nn.init", "ember.fft", "ember.linalg", "ember.serialization",
                   "ember.utils.collect_env", "ember.func", "ember.version",
                   "ember._core.dtype", "ember._core.size", "ember._core.device",
                   "ember._core.layout", "ember.random", "ember.autograd.grad_mode",
                   "ember.autograd._engine", "ember.autograd.function", "ember.testing",
                   "ember.utils.data.dataset", "ember.utils.data.sampler",
                   "ember.utils.data.dataloader", "ember.distributions.transforms",
                   "ember.multiprocessing._shared", "ember.distributed.pipelining._schedule_ir",
                   "ember.distributed.pipelining._orders"]


def _gen():
    spec = importlib.util.spec_from_file_location("_ember_docs_gen", DOCS / "_gen.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(not HAS_SPHINX, reason="needs the docs extra (sphinx, furo, myst-parser)")
def test_docs_build_without_warnings(tmp_path):
    src = tmp_path / "docs"
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns("generated", "_build"))
    # the whole reference by default, as CI builds it; EMBER_DOCS_QUICK=1 renders a sample
    env = dict(os.environ, EMBER_DOCS_ROOT=str(ROOT), EMBER_DOCS_COVERAGE="0",
               PYTHONPATH=str(ROOT))
    if os.environ.get("EMBER_DOCS_QUICK") == "1":
        env["EMBER_DOCS_PAGES"] = QUICK_PAGES
    start = time.perf_counter()
    # about 4 minutes of CPU time; on a machine loaded by other work, over 10 of wall time
    out = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b",
                          "html", str(src), str(tmp_path / "html")],
                         capture_output=True, text=True, env=env, timeout=1800)
    elapsed = time.perf_counter() - start
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    html = tmp_path / "html"
    for page in GUIDES + ["generated/ops", "generated/api/nn.functional", "coverage"]:
        assert (html / f"{page}.html").exists(), page
    assert "cross_entropy" in (html / "generated/api/nn.functional.html").read_text()
    assert _entries_missing_from_inventory(src / "generated" / "api", html) == []
    print(f"docs build: {elapsed:.1f}s")


def _entries_missing_from_inventory(api_src, html):
    """The entries the generated pages ask for that the built reference does not hold: each
    ``.. autofunction:: relu`` of page ``nn.functional`` must be ``ember.nn.functional.relu``
    in Sphinx's inventory (``objects.inv``); a class shown a second time under another name
    (``:no-index:``) is held under its first."""
    from sphinx.util.inventory import InventoryFile

    inventory = InventoryFile.loads((html / "objects.inv").read_bytes(), uri="").data
    held = {name for kind, names in inventory.items() if kind.startswith("py:") for name in names}
    missing = []
    for page in sorted(api_src.glob("*.rst")):
        text = page.read_text()
        module = re.search(r"^\.\. (?:currentmodule|automodule):: (\S+)", text, re.M)
        if module is None:  # the index page
            continue
        for m in re.finditer(r"^\.\. auto(?:function|class|data|method|property|attribute):: "
                             r"(\S+)(\n   :no-index:)?", text, re.M):
            if m.group(2):
                continue
            full = f"{module.group(1)}.{m.group(1)}"
            if full not in held:
                missing.append(full)
    return missing


_RUN_BLOCKS = """
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
blocks = re.findall(r"^```python\\n(.*?)^```", text, re.S | re.M)
assert blocks, "no python blocks"
namespace = {"__name__": "__main__"}
for i, block in enumerate(blocks):
    exec(compile(block, f"{sys.argv[1]} block {i + 1}", "exec"), namespace)
"""


# ordinary use prints no warnings: a NumPy RuntimeWarning or UserWarning escaping ember
# (issue 23's "array is not writable" during padding) fails the page's run
_WARNINGS_FAIL = ("-W", "error::RuntimeWarning", "-W", "error::UserWarning")


def test_readme_tour_runs_without_optional_extras(tmp_path):
    # a new user has run the README's first command only: no onnx, no torch
    block = "import sys\nsys.modules['onnx'] = sys.modules['torch'] = None\n" + _RUN_BLOCKS
    out = subprocess.run([sys.executable, *_WARNINGS_FAIL, "-c", block,
                          str(ROOT / "README.md")],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stderr[-4000:]
    assert _written_outside_runs(tmp_path) == []


def _written_outside_runs(folder):
    """What a page's code left in its working directory other than the run folder ``runs/``
    (a reader runs the code from the repository's root, which must stay clean)."""
    return sorted(p.name for p in Path(folder).iterdir() if p.name != "runs")


@pytest.mark.parametrize("page", GUIDES)
def test_guide_code_blocks_run(page, tmp_path):
    # a fresh interpreter per page, as a reader has: no torch already imported, no state
    # left by other tests (the compat hook, seeds, registered ops)
    out = subprocess.run([sys.executable, *_WARNINGS_FAIL, "-c", _RUN_BLOCKS,
                          str(DOCS / f"{page}.md")],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stderr[-4000:]
    assert _written_outside_runs(tmp_path) == []


@pytest.mark.parametrize("module", DOCTEST_MODULES)
def test_docstring_examples_pass(module, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mod = importlib.import_module(module)
    tests = [t for t in doctest.DocTestFinder().find(mod) if t.examples]
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failed = []
    for t in tests:
        t.globs.setdefault("ember", importlib.import_module("ember"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if runner.run(t, out=lambda s: None).failed:
                failed.append(t.name)
    assert not failed, f"doctests failing in {module}: {failed}"


def test_every_reference_example_passes(tmp_path):
    # every entry's example on every page, as a doctest, in a fresh interpreter (examples
    # seed generators, set defaults and register ops) and a scratch directory
    out = subprocess.run([sys.executable, str(DOCS / "_gen.py"), "--doctest"],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    last = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    m = re.fullmatch(r"(\d+) of (\d+) examples failed", last)
    assert out.returncode == 0 and m and int(m.group(2)) > 2000, (
        out.stdout[-3000:] + out.stderr[-3000:])
    assert _written_outside_runs(tmp_path) == []


def _run_doctest(text, name, globs):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    test = doctest.DocTestParser().get_doctest(text, globs, name, None, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return runner.run(test, out=lambda s: None).failed


def test_registry_op_examples_pass():
    # every example the op docstrings show (NOTE [ Generated docstrings ]), as doctests
    import ember
    from ember._ops._doc_examples import EXAMPLES

    failed = [k for k, (_, text, *_source) in EXAMPLES.items()
              if _run_doctest(text, k, {"ember": ember})]
    assert len(EXAMPLES) > 400 and not failed, (
        f"failing op examples (fix them, or rerun `python docs/_gen.py --examples` if the "
        f"new output is right): {failed}")


def test_registry_op_docstrings_have_every_section():
    import ember
    from ember._ops import _registry

    gen = _gen()
    missing = []
    for n, function, _method, _ip, _d, _a in _registry._declared:
        obj = _registry.functions.get(n) if function else getattr(ember.Tensor, n, None)
        if obj is None:  # declared for a namespace of its own (ember.special.erfcx)
            continue
        doc = obj.__doc__ or ""
        if not (gen._EXAMPLE.search(doc) and "Returns:" in doc and "Note:" in doc):
            missing.append(n)
        elif gen._takes_arguments(obj, "function") and not gen._ARGS.search(doc):
            missing.append(n)
    assert missing == [], (
        "run `python docs/_gen.py --examples` to give new ops an example (or write one in "
        f"ember/_ops/_doc_examples.py): {missing}")


def test_inplace_form_docstring_names_its_op():
    import ember

    doc = ember.Tensor.add_.__doc__
    assert "Tensor.add" in doc and "``self``, modified in place" in doc and ">>> x.add_(" in doc


def test_ops_page_lists_every_registered_op():
    import ember

    page = _gen().render_ops_table()
    for row in ember.list_ops():
        assert f"| `{row['name']}` |" in page, row["name"]


def test_api_page_lists_every_public_name():
    import ember.nn.functional as F

    gen = _gen()
    page = gen.render_api_page("nn.functional", "ember.nn.functional")
    for name in ("relu", "cross_entropy", "scaled_dot_product_attention", "pad"):
        assert getattr(F, name) and f".. autofunction:: {name}\n" in page


def test_api_pages_cover_every_namespace_in_the_coverage_tool():
    gen = _gen()
    documented = {path for path, _ in gen.NAMESPACES} | set(gen.ABSENT)
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        spec = importlib.util.spec_from_file_location("_cov_tool", ROOT / "tools" / "coverage.py")
        cov = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cov)
    finally:
        sys.path.pop(0)
    wanted = {"" if ns == "torch" else ns for ns in cov.NAMESPACES}
    assert wanted - documented == set()


def test_readme_first_two_commands_unchanged():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = readme.split("```")[1]
    assert first == (
        'bash\npython -m pip install -e ".[examples]" && python examples/char_gpt.py'
        "   # main job: train a character-level GPT\n"
        'python -m pip install -e ".[test]" && python -m pytest -n 2'
        "               # set up and pass the tests\n")


@pytest.mark.skipif(not HAS_TORCH, reason="the coverage tool needs torch")
def test_readme_coverage_table_matches_tool():
    gen = _gen()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = gen.readme_table(readme)
    assert table is not None, "README.md lost its coverage:begin/end markers"
    # in a fresh interpreter: modules other tests imported would otherwise count
    code = ("import importlib.util, sys\n"
            f"spec = importlib.util.spec_from_file_location('g', {str(DOCS / '_gen.py')!r})\n"
            "g = importlib.util.module_from_spec(spec); spec.loader.exec_module(g)\n"
            "sys.stdout.write(g.coverage_markdown())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert table == out.stdout, (
        "README.md's coverage table is stale: run `python docs/_gen.py --readme`")


def test_docstring_gap_tool_reports_counts(capsys):
    gen = _gen()
    gen.main(["--docstrings", "--namespace", "ember.fft"])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(r"\d+ of \d+ public callables lack a docstring with Args and Example",
                        last)


def test_every_public_callable_has_args_and_example():
    # every page of the reference: functions, classes, Tensor's methods
    gaps = _gen().docstring_gaps()
    missing = {title: rows for title, rows in gaps.items() if rows}
    assert missing == {}, "run `python docs/_gen.py --docstrings` and complete these"


def test_reference_shows_every_public_name_of_every_namespace():
    # the namespaces tools/coverage.py counts: each public name (``dir()`` and ``__all__``)
    # has an entry in the reference, on its namespace's page or, re-exported, on another;
    # each module inside them has a page, but those whose docstrings are unfinished
    gen = _gen()
    gaps = gen.reference_gaps(gen.coverage_namespaces())
    names = [g for g in gaps if not g.endswith(" (module)")]
    modules = sorted(g.split()[0] for g in gaps if g.endswith(" (module)"))
    assert names == [], "add these to their namespace's page (docs/_gen.py public_names)"
    assert modules == sorted(gen.UNFINISHED)


def test_reference_pages_do_not_depend_on_earlier_imports():
    # NOTE [ The reference does not depend on what was imported before ] in docs/_gen.py: a
    # fresh interpreter, which has imported nothing, finds the pages and names this process
    # finds after the other tests imported what they use
    code = ("import importlib.util, json, sys\n"
            f"spec = importlib.util.spec_from_file_location('g', {str(DOCS / '_gen.py')!r})\n"
            "g = importlib.util.module_from_spec(spec); spec.loader.exec_module(g)\n"
            "pages = g.pages()\n"
            "json.dump([pages, g.reference_gaps(g.coverage_namespaces())], sys.stdout)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    fresh_pages, fresh_gaps = json.loads(out.stdout)
    gen = _gen()
    assert [tuple(p) for p in fresh_pages] == gen.pages()
    assert fresh_gaps == gen.reference_gaps(gen.coverage_namespaces())
    # every public module was imported: the pages include modules nothing else imports
    assert "ember.optim.adam" in gen.import_public_modules()


def test_unfinished_modules_are_unfinished():
    # a module on docs/_gen.py's UNFINISHED list whose docstrings are complete comes off it
    # (and gets its page); the list only shrinks
    gen = _gen()
    gen.NAMESPACES = gen.NAMESPACES + [(m, f"ember.{m}") for m in sorted(gen.UNFINISHED)]
    gaps = gen.docstring_gaps([f"ember.{m}" for m in sorted(gen.UNFINISHED)])
    assert sorted(t[len("ember."):] for t, rows in gaps.items() if not rows) == []


def test_nn_functional_docstrings_have_args_and_example():
    gaps = _gen().docstring_gaps(["ember.nn.functional"])["ember.nn.functional"]
    # has_torch_function is the protocol helper of ember.overrides, documented there
    assert [name for name, _ in gaps if name != "has_torch_function"] == []


def test_nn_functional_examples_pass():
    import numpy as np

    import ember
    import ember.nn.functional as F

    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    parser = doctest.DocTestParser()
    failed, ran = [], 0
    for name in dir(F):
        fn = getattr(F, name)
        doc = getattr(fn, "__doc__", None) if callable(fn) and not name.startswith("_") else None
        if not doc or ">>>" not in doc:
            continue
        # examples written inside the module use its other names unqualified
        test = parser.get_doctest(doc, {**vars(F), "ember": ember, "np": np}, f"F.{name}", None, 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ran += 1
            if runner.run(test, out=lambda s: None).failed:
                failed.append(name)
    assert ran > 100 and not failed, failed


# -- Differences from PyTorch (NOTE [ Differences from PyTorch ] in ember/_ops/_docs.py) --------

DIFFERS = "Differences from PyTorch:"


def _named(op_id):
    """The ember object an OpInfo id names: its longest prefix that resolves
    (``linalg.lu.rectangular`` is ``ember.linalg.lu``, ``diff.bool`` is ``ember.diff``)."""
    import ember

    parts = op_id.split(".")
    for n in range(len(parts), 0, -1):
        obj = ember
        for p in parts[:n]:
            obj = getattr(obj, p, None)
            if obj is None:
                break
        if obj is not None:
            return obj
    raise LookupError(op_id)


def test_known_mismatch_ops_document_their_differences():
    # every difference the differential suite records is stated where users read about the op
    from tests.differential.known_mismatches import KNOWN

    missing = sorted({op for op, _kind in KNOWN if DIFFERS not in (_named(op).__doc__ or "")})
    assert missing == [], f"write a {DIFFERS!r} section in these ops' docstrings: {missing}"


def test_differences_section_sits_between_note_and_example():
    from ember._ops import _docs

    def twice(input):
        """Twice ``input``.

        Differences from PyTorch:
            Made up.
        """

    doc = _docs.complete(twice, "abs")  # abs's example from the table; a composite's Note
    assert doc.index("Note:") < doc.index(DIFFERS) < doc.index("Made up.") < doc.index(
        "Example:")


@pytest.mark.parametrize("name", ["randn", "randint", "bernoulli", "multinomial", "dropout",
                                  "Tensor.normal_", "Tensor.random_", "nn.functional.dropout",
                                  "nn.functional.rrelu", "nn.init.kaiming_uniform_"])
def test_random_op_docstring_says_streams_differ(name):
    doc = _named(name).__doc__
    assert DIFFERS in doc and "seeded streams" in doc[doc.index(DIFFERS):]


def test_deterministic_op_docstring_has_no_differences_section():
    import ember

    assert DIFFERS not in ember.add.__doc__ and DIFFERS not in ember.Tensor.matmul.__doc__


def test_completing_a_docstring_twice_keeps_one_differences_section():
    import ember
    from ember._ops import _docs

    def draw(size, *, generator=None):
        """Draw.

        Differences from PyTorch:
            Made up.
        """

    once = _docs.complete(draw, "draw", declared=False)
    assert _docs.complete(draw, "draw", declared=False) == once
    assert once.count(DIFFERS) == 1 and once.count("seeded streams") == 1
    assert once.index("Made up.") < once.index("seeded streams")
    assert ember.randn.__doc__.count(DIFFERS) == 1


@pytest.mark.skipif(not HAS_SPHINX, reason="needs the docs extra (sphinx, furo, myst-parser)")
def test_differences_section_renders_as_a_section_of_its_own():
    import ast

    from sphinx.ext.napoleon import Config, GoogleDocstring

    import ember

    conf = ast.parse((DOCS / "conf.py").read_text())
    sections = next(ast.literal_eval(node.value) for node in conf.body
                    if isinstance(node, ast.Assign)
                    and getattr(node.targets[0], "id", "") == "napoleon_custom_sections")
    text = str(GoogleDocstring(ember.abs.__doc__, Config(napoleon_custom_sections=sections)))
    assert ".. rubric:: Differences from PyTorch" in text


# docstrings that once fell back to verbatim text in the reference (NOTE [ Docstrings that do
# not parse ] in docs/conf.py): shapes such as (*, in1) read as emphasis, ``*args, **kwargs``
# on one Args line, an Args entry whose names wrap, an "Attributes:" section
_ONCE_VERBATIM = ["ember.bilinear", "ember.channel_shuffle", "ember.convolution",
                  "ember.sparse_coo_tensor", "ember.compile", "ember.func", "ember.jit.fork",
                  "ember.autograd.Function", "ember.nn.LazyConv2d", "ember.nn.RNNBase",
                  "ember.nn.LazyConvTranspose1d", "ember.nn.parallel.DistributedDataParallel",
                  "ember.nn.utils.skip_init", "ember.quasirandom.SobolEngine",
                  "ember.distributed.optim.DistributedOptimizer",
                  "ember.autograd.profiler_util.EventList",
                  "ember.autograd.profiler_util.EventMetadata",
                  "ember.autograd.profiler_util.FunctionEvent"]


@pytest.mark.skipif(not HAS_SPHINX, reason="needs the docs extra (sphinx, furo, myst-parser)")
@pytest.mark.parametrize("name", _ONCE_VERBATIM)
def test_docstring_parses_as_restructuredtext(name, monkeypatch):
    import inspect

    from sphinx.ext.napoleon import Config, GoogleDocstring

    monkeypatch.syspath_prepend(str(DOCS))
    conf = importlib.import_module("conf")
    module, _, attr = name.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        obj = importlib.import_module(name)
    settings = {k: getattr(conf, k) for k in dir(conf)
                if k.startswith("napoleon_") or k == "strip_signature_backslash"}
    text = str(GoogleDocstring(inspect.getdoc(obj), Config(**settings),
                               what="class" if isinstance(obj, type) else "function"))
    assert conf._parses_cleanly(text), text


def test_getting_started_lists_every_extra():
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    page = (DOCS / "getting_started.md").read_text()
    assert [e for e in extras if f"| `{e}` |" not in page] == []
