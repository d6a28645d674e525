"""The documentation: it builds with warnings as errors, its code runs, its tables tell the truth.

- The Sphinx build (docs/conf.py) of the guides, the operator table and a subset of the API
  reference, with ``-W``; skipped when the ``docs`` extra is not installed. The full
  reference (every namespace) takes minutes on 2 cores, too long for this suite:
  ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` builds it.
- Every ```python block of the guides runs, page by page, in a scratch directory.
- The docstring examples of a sample of modules pass as doctests, and so do the examples
  of every registered op (ember/_ops/_doc_examples.py, NOTE [ Generated docstrings ]).
- The README's coverage table is what tools/coverage.py reports (needs torch), and its first
  two commands stay as they are.
"""

import doctest
import importlib
import importlib.util
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
                   "ember.multiprocessing._shared"]


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
    out = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b",
                          "html", str(src), str(tmp_path / "html")],
                         capture_output=True, text=True, env=env, timeout=600)
    elapsed = time.perf_counter() - start
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    html = tmp_path / "html"
    for page in GUIDES + ["generated/ops", "generated/api/nn.functional", "coverage"]:
        assert (html / f"{page}.html").exists(), page
    assert "cross_entropy" in (html / "generated/api/nn.functional.html").read_text()
    print(f"docs build: {elapsed:.1f}s")


_RUN_BLOCKS = """
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
blocks = re.findall(r"^```python\\n(.*?)^```", text, re.S | re.M)
assert blocks, "no python blocks"
namespace = {"__name__": "__main__"}
for i, block in enumerate(blocks):
    exec(compile(block, f"{sys.argv[1]} block {i + 1}", "exec"), namespace)
"""


@pytest.mark.parametrize("page", GUIDES)
def test_guide_code_blocks_run(page, tmp_path):
    # a fresh interpreter per page, as a reader has: no torch already imported, no state
    # left by other tests (the compat hook, seeds, registered ops)
    out = subprocess.run([sys.executable, "-c", _RUN_BLOCKS, str(DOCS / f"{page}.md")],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stderr[-4000:]


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


# namespaces whose every public callable has Args and an Example (the gap tool's report):
# the registry's ops and their forms, and the hand-written surface users touch most
COMPLETE_NAMESPACES = ["ember", "ember.Tensor", "ember.linalg", "ember.fft", "ember.special",
                       "ember.autograd", "ember.random", "ember.utils.data", "ember.testing",
                       "ember.multiprocessing", "ember.distributions"]


def test_reference_namespaces_have_args_and_example():
    gaps = _gen().docstring_gaps(COMPLETE_NAMESPACES)
    missing = {title: rows for title, rows in gaps.items() if rows}
    assert missing == {}, "run `python docs/_gen.py --docstrings` and complete these"


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
