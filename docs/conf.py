"""Sphinx configuration for ember's documentation.

Why Sphinx (and not mkdocs-material + mkdocstrings): ember mirrors PyTorch's public API, and
PyTorch's reference is built with Sphinx; autodoc + autosummary read the docstrings straight
from the imported modules (ember's ops are created by decorators at import time, which
static parsers such as griffe do not see), napoleon reads the Google-style ``Args:`` /
``Returns:`` / ``Example:`` sections the house style asks for, and the doctest and
warnings-as-errors machinery (``-W``) is built in. MyST lets the narrative pages be Markdown
(as the README is), and furo is a clean, fast, accessible theme with dark mode.

Build (what CI and tests/test_docs.py run)::

    python -m pip install -e ".[docs]"
    python -m sphinx -W --keep-going -b html docs docs/_build/html

``EMBER_DOCS_PAGES`` (comma-separated page titles such as ``ember.fft,ember.nn.init``)
limits the API reference to those namespaces, for a quick build; ``EMBER_DOCS_COVERAGE=0``
skips regenerating the coverage table (which needs torch).
"""

from __future__ import annotations

import io
import os
import re
import sys
import warnings

# documenting a deprecated alias reads it, and reading it warns (torch's names do the same)
warnings.filterwarnings("ignore", message=r".*(is|are) deprecated", category=FutureWarning)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _gen  # noqa: E402

sys.path.insert(0, _gen.ROOT)  # the repository: document the checkout itself

project = "ember"
author = "the ember authors"
copyright = "2026, the ember authors"  # noqa: A001  (Sphinx's setting name)
release = version = __import__("ember").version.ember_version

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode" if os.environ.get("EMBER_DOCS_VIEWCODE") else "sphinx.ext.mathjax",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "README.md", "Thumbs.db", ".DS_Store"]
root_doc = "index"

myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

autosummary_generate = False  # the summary tables link to the entries on the same page
# No table-of-contents entry per documented object: the reference pages hold thousands, and
# furo copies every page's table of contents into the navigation of each of the ~210 pages
# (a third of the build's time; the summary table at the top of each page lists them all)
toc_object_entries = False
autodoc_default_options = {"no-value": False}
autodoc_typehints = "signature"
autodoc_member_order = "bysource"
autodoc_inherit_docstrings = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
# an "Attributes:" section as fields (``:ivar:``): the ``.. attribute::`` directives napoleon
# writes otherwise are Sphinx's, and NOTE [ Docstrings that do not parse ] checks each
# docstring with docutils alone, which does not know them
napoleon_use_ivar = True
# torch's layers document their shapes so; "Differences from PyTorch" is NOTE [ Differences
# from PyTorch ] in ember/_ops/_docs.py
napoleon_custom_sections = ["Shape", "Shapes", "Differences from PyTorch"]
# napoleon escapes a parameter name's trailing underscore (``from_``, ``to_``) only with this
# on; unescaped, reST reads ``from_`` as a link to a target named "from"
strip_signature_backslash = True
add_module_names = False
suppress_warnings = [
    # ember exports some classes under several names (ember.Generator and
    # ember.random.Generator), as torch does; a type annotation naming one of them is then
    # ambiguous, and either target is right
    "ref.python",
]

html_theme = "furo"
html_title = f"ember {release}"
html_static_path = []
html_show_sourcelink = False

# -- generated pages -------------------------------------------------------------------------


def _generate(app):
    pages = os.environ.get("EMBER_DOCS_PAGES")
    _gen.generate(namespaces=pages.split(",") if pages else None,
                  coverage=os.environ.get("EMBER_DOCS_COVERAGE", "1") != "0")


# -- docstrings that are not valid reStructuredText --------------------------------------------
# NOTE [ Docstrings that do not parse ]
# A docstring written as plain text (an unindented ``::`` example, ``*args`` read as
# emphasis, a table drawn with dashes) makes docutils warn, and the build runs with -W. Rather
# than letting one docstring break the reference, each docstring is first parsed on its own
# (after napoleon has turned its Args/Returns sections into fields); one that does not parse
# cleanly is shown verbatim as a literal block instead, and counted. The count is printed at
# the end of the build and ``python docs/_gen.py --docstrings`` lists what to improve.

_SAFE_ROLES = re.compile(r":(?:py:)?(?:func|class|meth|attr|mod|data|obj|exc|const|math|"
                         r"term|envvar|kbd|file|samp|abbr|command|program|option):`([^`]*)`")
_RISKY_ROLES = re.compile(r":(?:ref|doc|numref|download|any):`([^`]*)`")
_fallbacks: list[str] = []


def _parses_cleanly(text):
    from docutils.core import publish_doctree
    from docutils.utils import SystemMessage

    text = _SAFE_ROLES.sub(lambda m: "``" + m.group(1).replace("`", "") + "``", text)
    stream = io.StringIO()
    try:
        doctree = publish_doctree(text, settings_overrides={
            "report_level": 2, "halt_level": 5, "warning_stream": stream,
            "file_insertion_enabled": False, "raw_enabled": False, "traceback": True})
    except (SystemMessage, Exception):  # noqa: BLE001  (any failure: show the text verbatim)
        return False
    from docutils import nodes

    if any(m["level"] >= 2 for m in doctree.findall(nodes.system_message)):
        return False
    return not stream.getvalue()


# NOTE [ Registry lines ] (the backends and differentiability of each op) moved into the
# docstrings themselves: ember/_ops/_docs.py completes every op's docstring from its
# declaration (NOTE [ Generated docstrings ]), so help() and the reference say the same.


def _process_docstring(app, what, name, obj, options, lines):
    if not lines:
        return
    if what in ("data", "attribute") and not isinstance(obj, type) and \
            getattr(obj, "__doc__", None) == getattr(type(obj), "__doc__", None):
        lines[:] = []  # a constant's "docstring" is its type's (dict, str, ...): not about it
        return
    # references to labels and documents that the reference does not have would warn
    text = _RISKY_ROLES.sub(lambda m: "``" + m.group(1) + "``", "\n".join(lines))
    if _parses_cleanly(text):
        lines[:] = text.split("\n")
        return
    _fallbacks.append(name)
    import inspect

    raw = inspect.getdoc(obj) or text
    lines[:] = ["::", ""] + ["    " + ln for ln in raw.split("\n")] + [""]


def _report(app, exception):
    if exception is None and _fallbacks:
        path = os.path.join(app.outdir, "docstrings-shown-verbatim.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(sorted(set(_fallbacks))) + "\n")
        print(f"{len(set(_fallbacks))} docstrings are not valid reStructuredText and are "
              f"shown verbatim (listed in {path})")


def _safe_summary(doc, settings):
    """autosummary's first sentence, without splitting an inline literal in two."""
    summary = _extract_summary(doc, settings)
    if summary.count("``") % 2 or summary.count("`") % 2:
        first = " ".join(ln.strip() for ln in doc if ln.strip())
        summary = first.split(". ")[0].replace("`", "")
        summary = summary if summary.endswith(".") else summary + "."
    return summary


import sphinx.ext.autosummary as _autosummary  # noqa: E402

_extract_summary = _autosummary.extract_summary
_autosummary.extract_summary = _safe_summary


def setup(app):
    app.connect("builder-inited", _generate)
    # after napoleon (priority 500), which turns Args/Returns sections into fields
    app.connect("autodoc-process-docstring", _process_docstring, priority=900)
    app.connect("build-finished", _report)
