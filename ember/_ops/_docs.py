"""Docstrings generated from the operator declarations (NOTE [ Generated docstrings ]).

NOTE [ Generated docstrings ]
An op is documented where it is declared: its public function's docstring (or the ``doc=``
of a family helper such as ``unary_op``) says in a sentence or two what it computes. The
rest of its reference entry is structured data the registry already holds, so ``public()``
(ember/_ops/_registry.py) completes every docstring from it when the op is declared:

- **Args** from the function's signature -- names, defaults, keyword-only markers -- with
  each parameter's type and meaning from ember/_ops/_doc_params.py (one description per
  parameter name, shared by every op that uses it; ``"op.param"`` keys where an op means
  something of its own by it);
- **Returns** from the op's kind: in-place forms return ``self``, view ops a view, ``out=``
  forms their ``out``; the result type of the recorded example (a tensor, a named tuple...);
- **Note**: whether autograd differentiates the op (it has a ``vjp``; forward mode when it
  has a ``jvp`` or is linear), the dtype rule of element-wise ops (``promote``/``allow``), the
  backends with kernels, and the other forms the declaration generated (``Tensor.<name>``,
  ``Tensor.<name>_``, ``out=``);
- **Differences from PyTorch**: the section of that name the declaration's docstring has,
  moved after the Note, plus what the op's family shares (NOTE [ Differences from PyTorch ]);
- **Example** from ``ember/_ops/_doc_examples.py``: one small doctest per op and in-place
  form, whose output lines ``python docs/_gen.py --examples`` records by running them (new
  ops get an example built from their signature there; hand-edit the input lines, rerun,
  and the outputs follow). tests/test_docs.py runs them all as doctests.

A section the hand-written docstring already has is kept as written and not generated.
The Sphinx reference, ``help()`` and the IDE all read the same completed ``__doc__``.
"""

from __future__ import annotations

import inspect
import re

from ._doc_params import OP_PARAMS, PARAMS  # the descriptions, one per parameter name

# -- Args ---------------------------------------------------------------------------------------


def _param_line(opname, p):
    key = f"{opname}.{p.name}"
    ty, text = OP_PARAMS.get(key) or PARAMS.get(p.name) or (None, None)
    if ty is None:
        ty, text = _guess(p)
    name = p.name
    if p.kind is p.VAR_POSITIONAL:
        name = "*" + name
    elif p.kind is p.VAR_KEYWORD:
        name = "**" + name
    if p.default is not p.empty and p.default is not None and "optional" not in ty:
        ty = (ty + ", optional") if ty else "optional"
    head = f"{name} ({ty})" if ty else name
    if p.default is not p.empty and p.default is not None and p.name not in ("out",):
        text = f"{text} Default: ``{_show(p.default)}``."
    if p.kind is p.KEYWORD_ONLY and p.name != "out":
        text += " Keyword-only."
    return f"{head}: {text}"


class _Param:
    """What ``_param_line`` reads of an ``inspect.Parameter``, read from a code object (the
    docstrings of every op are completed at import: ``inspect.signature`` costs 10x more)."""

    __slots__ = ("name", "kind", "default")
    empty = inspect.Parameter.empty
    VAR_POSITIONAL = inspect.Parameter.VAR_POSITIONAL
    VAR_KEYWORD = inspect.Parameter.VAR_KEYWORD
    KEYWORD_ONLY = inspect.Parameter.KEYWORD_ONLY

    def __init__(self, name, kind, default=inspect.Parameter.empty):
        self.name, self.kind, self.default = name, kind, default


def _parameters(f):
    """``f``'s parameters as ``inspect.signature`` gives them (following ``__wrapped__``)."""
    g = f
    while not (isinstance(getattr(g, "__dict__", None), dict) and "__signature__" in g.__dict__):
        inner = getattr(g, "__wrapped__", None)
        if inner is None:
            break
        g = inner
    code = getattr(g, "__code__", None)
    if code is None or "__signature__" in getattr(g, "__dict__", {}) or \
            not inspect.isfunction(g):
        try:
            return list(inspect.signature(f).parameters.values())
        except (TypeError, ValueError):
            return []
    P = inspect.Parameter
    names = code.co_varnames
    npos, nkw, nposonly = code.co_argcount, code.co_kwonlyargcount, code.co_posonlyargcount
    defaults = g.__defaults__ or ()
    kwdefaults = g.__kwdefaults__ or {}
    out = []
    first_default = npos - len(defaults)
    for i in range(npos):
        kind = P.POSITIONAL_ONLY if i < nposonly else P.POSITIONAL_OR_KEYWORD
        d = defaults[i - first_default] if i >= first_default else P.empty
        out.append(_Param(names[i], kind, d))
    i = npos + nkw
    if code.co_flags & inspect.CO_VARARGS:
        out.append(_Param(names[i], P.VAR_POSITIONAL))
        i += 1
    for j in range(npos, npos + nkw):
        out.append(_Param(names[j], P.KEYWORD_ONLY, kwdefaults.get(names[j], P.empty)))
    if code.co_flags & inspect.CO_VARKEYWORDS:
        out.append(_Param(names[i], P.VAR_KEYWORD))
    return out


def _show(v):
    if isinstance(v, str):
        return repr(v)
    if isinstance(v, type) or callable(v):
        return getattr(v, "__name__", repr(v))
    return repr(v)


def _guess(p):
    d = p.default
    if isinstance(d, bool):
        return "bool", f"the ``{p.name}`` flag."
    if isinstance(d, int):
        return "int", f"the ``{p.name}`` count."
    if isinstance(d, float):
        return "float", f"the ``{p.name}`` value."
    if isinstance(d, str):
        return "str", f"the ``{p.name}`` mode."
    return "Tensor", f"the ``{p.name}`` operand."


# -- the other generated sections -------------------------------------------------------------

_PROMOTE = {
    "same": "the result has the promoted dtype of the inputs (PyTorch's type promotion)",
    "float": "integer and bool inputs compute in the default float dtype",
    "compare": "the inputs compare in their promoted dtype; the result is bool",
    "int": "integer and bool inputs only; the result has their promoted dtype",
    "logical": "inputs of any dtype; the result is bool",
    "real": "as the promoted dtype, but complex inputs give their real dtype",
    "float_real": "integer and bool inputs compute in the default float dtype; complex "
                  "inputs give their real dtype",
}
_CATEGORIES = {0: "bool", 1: "integer", 2: "floating point", 3: "complex"}


def _notes(name, op, forms, declared, subject="input"):
    parts = []
    if op is not None:
        if op.differentiable:
            fwd = " (reverse and forward mode)" if (op.jvp is not None or op.linear) else ""
            parts.append(f"Autograd: differentiable{fwd}.")
        else:
            parts.append("Autograd: not differentiable.")
        promote = getattr(op, "promote", None)
        if promote in _PROMOTE:
            text = _PROMOTE[promote]
            allow = getattr(op, "allow", None)
            if allow is not None and len(allow) < 4:
                text += "; accepts " + ", ".join(_CATEGORIES[c] for c in sorted(allow))
            parts.append(f"Dtypes: {text}.")
        if op.kernel is not None or op.ufunc is not None:
            own = sorted(op.overrides)
            parts.append("Backends: all (one kernel, written against the array namespace)"
                         + (f"; specialised kernels for {', '.join(own)}." if own else "."))
        else:
            parts.append("Backends: " + ", ".join(sorted(op.overrides)) + ".")
        if op.view_of is not None:
            parts.append(f"The result is a view: it shares ``{subject}``'s memory.")
    elif declared:
        parts.append("Composed of other ember ops (no kernel of its own): it runs on every "
                     "backend they do, and autograd differentiates it through them where "
                     "they are differentiable.")
    if forms:
        parts.append("Forms: " + ", ".join(forms) + ".")
    return " ".join(parts)


def _returns(kind, result, op, has_out):
    if kind == "inplace":
        return "Tensor: ``self``, modified in place."
    if result in (None, "Tensor"):
        if op is not None and op.view_of is not None:
            return "Tensor: a view of ``self``." if kind == "method" else \
                "Tensor: a view of ``input``."
        if has_out:
            return "Tensor: the result (``out`` itself when given)."
        return "Tensor: the result."
    if result.startswith("namedtuple:"):
        fields = result.split(":", 1)[1]
        return f"named tuple ({fields}): the results, also usable as a plain tuple."
    words = {"tuple": "tuple of Tensors: the results.",
             "list": "list of Tensors: the results.",
             "bool": "bool: the answer.", "int": "int: the value.",
             "float": "float: the value.", "Size": "ember.Size: the shape.",
             "None": "None."}
    return words.get(result, f"{result}: the result.")


_SECTION = re.compile(r"^[ \t]*(?:(?P<args>(?:Args|Arguments|Parameters|Keyword args)[ \t]*:)"
                      r"|(?P<returns>(?:Returns|Return|Yields)[ \t]*:)"
                      r"|(?P<note>Note[ \t]*:[ \t]*$)"
                      r"|(?P<example>Examples?::?|>>> ))", re.M)


def _sections(doc):
    """The sections ``doc`` has: a subset of {"args", "returns", "note", "example"}."""
    return {m.lastgroup for m in _SECTION.finditer(doc)}


def _indent(text, n=4):
    return "\n".join((" " * n + ln) if ln else ln for ln in text.split("\n"))


# -- Differences from PyTorch -----------------------------------------------------------------
# NOTE [ Differences from PyTorch ]
# Where an op knowingly behaves differently from PyTorch 2.13, its docstring says so in a
# section of its own, headed ``DIFFERS``. The declaration holds it: a hand-written section in
# the op's docstring (or ``doc=``), for what is particular to the op -- every op that the
# differential suite records in tests/differential/known_mismatches.py has one, and
# tests/test_docs.py checks that --, and a generated paragraph for what whole families
# share: ops that draw random numbers (a ``generator`` parameter, or declared in the random
# and dropout families) say where their seeded streams are PyTorch's (NOTE [ Random number
# generation ] in ember/_core/generator.py). ``complete`` places the section after the
# Note, before the Example, wherever it was written; the Sphinx build renders it as a
# section of its own (docs/conf.py, ``napoleon_custom_sections``).

#: the heading of the section (a napoleon custom section in docs/conf.py)
DIFFERS = "Differences from PyTorch:"
_DIFFERS_BLOCK = re.compile(r"^Differences from PyTorch:[ \t]*\n((?:[ \t]+\S.*\n|[ \t]*\n)*)",
                            re.M)
_EXAMPLE_HEAD = re.compile(r"^Examples?::?[ \t]*$", re.M)
_NOTE_HEAD = re.compile(r"^Note:[ \t]*$", re.M)
_NEXT_HEAD = re.compile(r"^\S", re.M)  # the line after a section's indented body
#: the families whose ops draw random numbers without taking a ``generator``
_RANDOM_FAMILIES = ("ember._ops.random_ops", "ember._ops.nn_dropout")
RANDOM_STREAMS = ("Random numbers: on the CPU, seeded streams are PyTorch's (see "
                  ":func:`ember.manual_seed`): a seed gives the numbers PyTorch draws from it. "
                  "On CUDA devices they are ember's own.")


def _draws_random_numbers(f, params):
    if any(p.name == "generator" for p in params):
        return True
    inner = f
    while getattr(inner, "__wrapped__", None) is not None:
        inner = inner.__wrapped__
    return getattr(inner, "__module__", None) in _RANDOM_FAMILIES


def _take_differences(doc):
    """``(paragraphs, doc without them)``: the text of ``doc``'s DIFFERS section."""
    m = _DIFFERS_BLOCK.search(doc + "\n")
    if m is None:
        return [], doc
    body = inspect.cleandoc(m.group(1)).strip()
    rest = (doc + "\n")[:m.start()] + (doc + "\n")[m.end():]
    return ([body] if body else []), re.sub(r"\n{3,}", "\n\n", rest).strip("\n")


def _place_differences(doc, paragraphs):
    """``doc`` with the DIFFERS section right after its Note (before its Example when it has
    no Note; at its end when it has neither)."""
    section = DIFFERS + "\n" + _indent("\n\n".join(paragraphs))
    note = _NOTE_HEAD.search(doc)
    m = _NEXT_HEAD.search(doc, note.end()) if note else _EXAMPLE_HEAD.search(doc)
    if m is None:
        return doc.rstrip("\n") + "\n\n" + section + "\n"
    return doc[:m.start()] + section + "\n\n" + doc[m.start():]


_table: list = []


def examples():
    """The example table, ``ember/_ops/_doc_examples.py`` (loaded once)."""
    if not _table:
        from . import _doc_examples

        _table.append(_doc_examples.EXAMPLES)
    return _table[0]


def complete(f, name, *, op=None, kind="function", forms=(), base=None, declared=True):
    """Complete ``f.__doc__`` from the declaration (NOTE [ Generated docstrings ]).

    Args:
        f: the public function (or Tensor method) as declared.
        name: its public name; ``Tensor.<name>`` for methods and in-place forms.
        op: the registered ``Op`` of the same name, or None for a composite.
        kind: ``"function"``, ``"method"`` or ``"inplace"``.
        forms: the other forms the declaration generated (for the note).
        base: for in-place forms, the name of the out-of-place op.
        declared: whether ``f`` was declared in the registry (a composite when ``op`` is
            None); False for other Tensor methods and namespace functions: no note then
            unless ``op`` is given.

    Returns:
        The completed docstring (also stored on ``f``).

    Example:
        >>> from ember._ops import _docs
        >>> def twice(input, *, out=None):
        ...     '''Twice ``input``.'''
        >>> doc = _docs.complete(twice, "twice")
        >>> print(doc[:doc.index("Returns:")])
        Twice ``input``.
        <BLANKLINE>
        Args:
            input (Tensor): the input tensor.
            out (Tensor, optional): the tensor to write the result into (resized when its...
        <BLANKLINE>
    """
    doc = inspect.cleandoc(f.__doc__ or "")
    opname = name.rsplit(".", 1)[-1]
    if not doc:
        if kind == "inplace" and base:
            doc = (f"In-place version of :meth:`Tensor.{base}` (see :func:`ember.{base}`): "
                   "writes the result into ``self``.")
        else:
            doc = f"The ``{opname}`` operator."
    differs, doc = _take_differences(doc)
    have = _sections(doc)
    params = [p for p in _parameters(f)
              if not (p.name == "self" and kind in ("method", "inplace"))]
    if _draws_random_numbers(f, params) and not any(RANDOM_STREAMS in d for d in differs):
        differs.append(RANDOM_STREAMS)
    has_out = any(p.name == "out" for p in params)
    entry = examples().get(name)
    extra = []
    if "args" not in have and params:
        extra.append("Args:\n" + _indent("\n".join(_param_line(opname, p) for p in params)))
    if "returns" not in have and (entry or declared or op is not None):
        result = entry[0] if entry else None
        extra.append("Returns:\n" + _indent(_returns(kind, result, op, has_out)))
    note = _notes(opname if base is None else base, op, forms, declared,
                  "self" if kind in ("method", "inplace") else "input")
    if note and "note" not in have:
        extra.append("Note:\n" + _indent(note))
    if "example" not in have and entry:
        extra.append("Example:\n" + _indent(entry[1].strip("\n")))
    if extra:
        doc = doc + "\n\n" + "\n\n".join(extra) + "\n"
    if differs:
        doc = _place_differences(doc, differs)
    f.__doc__ = doc
    return doc


#: the functions whose docstrings ``complete_all`` completed (for ``sync_wrappers``)
completed: list = []


def sync_wrappers(wrapped):
    """Give every public wrapper (``{wrapper: function}``, ember/_overrides.py) of a completed
    function the completed docstring: wrappers made before the completion copied the old
    one."""
    done = {}
    for f in completed:
        done[id(f)] = f.__doc__
        inner = getattr(f, "__wrapped__", None)
        while inner is not None:
            done[id(inner)] = f.__doc__
            inner = getattr(inner, "__wrapped__", None)
    for w, f in list(wrapped.items()):
        doc = done.get(id(f))
        if doc is not None and w.__doc__ != doc:
            try:
                w.__doc__ = doc
            except (AttributeError, TypeError):
                pass
    completed.clear()


def complete_all(obj, name, **kw):
    """``complete`` the docstring of ``obj`` and of every function it wraps (``__wrapped__``):
    the public wrapper and the declared function show the same text.

    A docstring that cannot be completed (an object of a kind this module does not know)
    keeps its text: documentation must never stop ``import ember``; the docs tests
    (tests/test_docs.py) report what is incomplete.
    """
    try:
        # the declared function's docstring is the source: the public wrapper copied it
        # when it was made, and a family may finish it after that (nn_rnn's ``{args}``)
        chain, inner = [], obj
        while inner is not None:
            chain.append(inner)
            inner = getattr(inner, "__wrapped__", None)
        source = next((g.__doc__ for g in reversed(chain) if getattr(g, "__doc__", None)),
                      None)
        if source and source != obj.__doc__:
            obj.__doc__ = source
        doc = complete(obj, name, **kw)
    except Exception:  # noqa: BLE001  (see above)
        return getattr(obj, "__doc__", None)
    completed.append(obj)
    inner = getattr(obj, "__wrapped__", None)
    while inner is not None and getattr(inner, "__doc__", doc) != doc:
        try:
            inner.__doc__ = doc
        except (AttributeError, TypeError):
            break
        inner = getattr(inner, "__wrapped__", None)
    return doc


def complete_property(prop, name):
    """Add the table's example to a Tensor property's docstring when it has none."""
    doc = inspect.cleandoc(prop.__doc__ or "")
    entry = examples().get(name)
    if entry and doc and "example" not in _sections(doc):
        try:
            prop.__doc__ = doc + "\n\nExample:\n" + _indent(entry[1].strip("\n")) + "\n"
        except (AttributeError, TypeError):  # a property type with a read-only docstring
            pass
    return prop.__doc__
