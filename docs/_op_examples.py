"""Write ``ember/_ops/_doc_examples.py``: one runnable example per registered op.

``python docs/_gen.py --examples`` (NOTE [ Generated docstrings ] in ember/_ops/_docs.py):

1. every entry already in the table is run again, statement by statement, and its output
   lines and result type are recorded afresh -- edit an entry's ``>>>`` lines by hand, run
   the tool, and its outputs follow;
2. every public op (function, method, in-place form) that has neither an entry nor a
   hand-written example gets one built from its signature: its tensor arguments are filled
   from a few small families of inputs (a float vector, 2x2 matrices, integers, bools,
   complex numbers), the other required arguments from their names (``dim=0``,
   ``size=(2, 3)``...), and the first family that runs without error (preferring results
   without NaN) is kept, followed by the method form's call when the op is also a Tensor
   method (``x.sin()`` after ``ember.sin(x)``). Ops whose result is random show its shape
   only;
3. ops for which no family works are listed, to be written by hand in the table.
"""

from __future__ import annotations

import contextlib
import doctest
import inspect
import io
import math
import os
import pprint  # noqa: F401  (kept for debugging the table)
import warnings

ROOT = os.environ.get("EMBER_DOCS_ROOT") or os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "ember", "_ops", "_doc_examples.py")

# tensor-valued parameters, by name
_TENSOR_PARAMS = {
    "input", "self", "other", "x", "y", "a", "b", "A", "B", "mat", "mat1", "mat2", "vec",
    "vec1", "vec2", "tensor", "tensor1", "tensor2", "end", "weight", "values", "elements",
    "test_elements", "batch1", "batch2", "condition", "input1", "input2", "x1", "x2", "real",
    "imag", "abs", "angle", "sorted_sequence", "boundaries", "exponent", "src", "mask",
}

# input families: name -> list of tensor literals handed out in order of the tensor params
_FAMILIES = [
    ("unit", ["ember.tensor([0.25, 0.5, 0.75])", "ember.tensor([1.0, 2.0, 3.0])",
              "ember.tensor([0.5, 0.5, 0.5])"]),
    ("float", ["ember.tensor([1.0, 2.0, 3.0])", "ember.tensor([0.5, 2.0, 4.0])",
               "ember.tensor([1.0, 1.0, 1.0])"]),
    ("matrix", ["ember.tensor([[2.0, 1.0], [1.0, 3.0]])",
                "ember.tensor([[1.0, 0.0], [2.0, 1.0]])",
                "ember.tensor([[0.5, 0.5], [0.5, 0.5]])"]),
    ("int", ["ember.tensor([6, 4, 9])", "ember.tensor([4, 6, 3])", "ember.tensor([1, 2, 3])"]),
    ("bool", ["ember.tensor([True, False, True])", "ember.tensor([True, True, False])",
              "ember.tensor([False, True, True])"]),
    ("complex", ["ember.tensor([1 + 2j, 3 - 1j])", "ember.tensor([0.5 + 0j, 1 + 1j])",
                 "ember.tensor([1 + 0j, 2 + 0j])"]),
    ("batch", ["ember.arange(8.0).reshape(2, 2, 2)", "ember.ones(2, 2, 2)",
               "ember.ones(2, 2)"]),
]

# other required parameters: name -> candidates (source text), tried in order
_VALUES = {
    "dim": ["0"], "dim0": ["0"], "dim1": ["1", "0"], "dim2": ["1"], "k": ["2", "1"],
    "n": ["2"], "size": ["(2, 3)"], "chunks": ["2"], "sections": ["2"],
    "split_size_or_sections": ["2"], "split_size": ["2"], "indices_or_sections": ["2"],
    "index": ["ember.tensor([0, 2])", "0"], "indices": ["ember.tensor([0, 2])"],
    "value": ["2.0"], "fill_value": ["7.0"], "start": ["0"], "length": ["2"], "dims": ["(0,)"],
    "shape": ["(3, 1)"], "repeats": ["2"], "shifts": ["1"], "p": ["2"], "q": ["0.5"],
    "window_length": ["4"], "steps": ["5"], "row": ["3"], "col": ["3"], "r": ["2"],
    "num_samples": ["2"], "source": ["0"], "destination": ["1"], "decimals": ["1"],
    "diagonal": ["0"], "offset": ["0"], "min": ["0.5"], "max": ["2.5"], "mean": ["0.0"],
    "std": ["1.0"], "stride": ["(1, 2)"], "sizes": ["(1, 3)"], "reduce": ['"sum"'],
    "bins": ["4"], "threshold": ["0.5"], "maxnorm": ["1.0"], "upper": ["False"],
}

_RANDOM_WORDS = ("rand", "normal", "bernoulli", "dropout", "multinomial", "poisson",
                 "random", "uniform", "exponential", "geometric", "cauchy", "log_normal",
                 "binomial", "empty")


def _names_for(params):
    """Variable names for the tensor arguments: ``x``, ``y``, or the parameter's name."""
    out, used = {}, set()
    for p in params:
        v = {"input": "x", "self": "x", "other": "y"}.get(p, p)
        if v in used or v in ("abs", "min", "max", "input", "range", "sorted"):
            v = p + "_t"
        used.add(v)
        out[p] = v
    return out


def candidates(call, params, kind):
    """Candidate example sources for the op reached as ``call`` (``ember.add``, ``x.add_``).

    ``params``: the required parameters ``[(name, kind)]`` with kind "tensor", "other", or
    "varargs". Yields the example source lines (a list of statements).
    """
    tensors = [n for n, k in params if k == "tensor"]
    names = _names_for(tensors)
    for _family, literals in _FAMILIES:
        if len(tensors) > len(literals):
            continue
        lines = [f"{names[t]} = {literals[i]}" for i, t in enumerate(tensors)]
        others = [n for n, k in params if k != "tensor"]
        choices = [_VALUES.get(n, ["1"]) if k == "other" else ["2, 3", "0", "1, 0"]
                   for n, k in params if k != "tensor"]
        for combo in _combos(choices):
            vals = dict(zip(others, combo))
            args = []
            for n, k in params:
                if k == "tensor":
                    args.append(names[n])
                elif k == "kwonly":
                    args.append(f"{n}={vals[n]}")
                else:
                    args.append(vals[n])
            if kind in ("inplace", "method"):
                # the first tensor is the receiver
                recv, rest = args[0], args[1:]
                stmt = f"{recv}.{call}({', '.join(rest)})"
            else:
                stmt = f"ember.{call}({', '.join(args)})"
            yield lines + [stmt]


def _combos(choices):
    if not choices:
        yield ()
        return
    for first in choices[0]:
        for rest in _combos(choices[1:]):
            yield (first, *rest)


def required_params(fn, kind):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    out = []
    for i, p in enumerate(sig.parameters.values()):
        if p.kind is p.VAR_KEYWORD:
            continue
        if p.kind is p.VAR_POSITIONAL:
            out.append((p.name, "varargs"))
            continue
        if p.default is not p.empty:
            continue
        if p.kind is p.KEYWORD_ONLY:
            out.append((p.name, "kwonly"))
        elif p.name in _TENSOR_PARAMS or (i == 0 and kind != "function"):
            out.append((p.name, "tensor"))
        else:
            out.append((p.name, "other"))
    return out


# -- running examples ------------------------------------------------------------------------


def run(source_lines, globs=None):
    """Run statements as doctest would; return ``(text, result)``: the doctest text with its
    outputs, and the value of the last expression (None when it is a statement)."""
    import ember

    globs = {"ember": ember} if globs is None else globs
    text, result = [], None
    results = []
    for src in source_lines:
        buf = io.StringIO()
        try:
            code, is_expr = compile(src, "<example>", "eval"), True
        except SyntaxError:
            code, is_expr = compile(src, "<example>", "single"), False
        with contextlib.redirect_stdout(buf), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if is_expr:  # as the interactive prompt (and doctest): run once, show the repr
                result = eval(code, globs)
                if result is not None:
                    print(repr(result))
            else:
                exec(code, globs)
                result = None
        if is_expr:
            results.append((src, result))
        first, *more = src.split("\n")
        text.append(">>> " + first)
        text += ["... " + m for m in more]
        out = buf.getvalue().rstrip()
        for ln in out.split("\n") if out else []:
            text.append(ln.rstrip() or "<BLANKLINE>")
    run.results = results
    return "\n".join(text), result


_NONE = object()


def main_result(key, results):
    """The result of the example's first call of the op ``key`` shown as it is (``_NONE``
    when the example assigns or reduces it: its recorded type is then kept)."""
    name = key.split(".")[-1]
    for src, r in results:
        if (f".{name}(" in src or src.startswith(f"{name}(")) and not \
                src.rstrip().endswith(".shape") and "=" not in src.split("(")[0]:
            return r
    return _NONE


def result_kind(r):
    import ember

    if isinstance(r, ember.Tensor):
        return "Tensor"
    if isinstance(r, tuple) and hasattr(r, "_fields"):
        return "namedtuple:" + ", ".join(r._fields)
    if isinstance(r, ember.Size):
        return "Size"
    for t in (bool, int, float, tuple, list):
        if isinstance(r, t):
            return t.__name__
    return "None" if r is None else type(r).__name__


def _has_nan(r):
    import ember

    if isinstance(r, ember.Tensor):
        try:
            return bool(r.detach().isnan().any()) or bool(r.detach().isinf().any())
        except Exception:  # noqa: BLE001
            return False
    if isinstance(r, (tuple, list)):
        return any(_has_nan(v) for v in r)
    return isinstance(r, float) and not math.isfinite(r)


def _acceptable(text, result):
    lines = text.split("\n")
    return len(lines) <= 10 and " at 0x" not in text and all(len(ln) <= 96 for ln in lines)


def _statements(entry_text):
    """The ``>>>`` statements of an example (continuation lines joined)."""
    parser = doctest.DocTestParser()
    return [ex.source.rstrip("\n") for ex in parser.get_examples(entry_text)]


def build(fn, key, kind):
    """An example for ``fn`` (reached as ``key``), or None."""
    if kind == "property":
        for _family, literals in _FAMILIES:
            try:
                text, result = run([f"x = {literals[0]}", f"x.{key.split('.')[-1]}"])
            except Exception:  # noqa: BLE001
                continue
            if _acceptable(text, result) and not _has_nan(result):
                return result_kind(result), text
        return None
    params = required_params(fn, kind)
    if params is None or sum(1 for _, k in params if k == "varargs") > 1:
        return None
    call = key[len("Tensor."):] if key.startswith("Tensor.") else key
    random = any(w in call for w in _RANDOM_WORDS)
    fallback = None
    tried = 0
    for lines in candidates(call, params, kind):
        tried += 1
        if tried > 40:
            break
        try:
            if random:  # a random result shows its shape only
                lines = lines[:-1] + [lines[-1] + ".shape"]
            text, result = run(lines)
        except Exception:  # noqa: BLE001  (the candidate does not fit this op)
            continue
        if not _acceptable(text, result):
            continue
        if random:
            return "Tensor", text
        if not _has_nan(result):
            return result_kind(result), with_method_form(key, fn, kind, lines, text)
        fallback = fallback or (result_kind(result),
                                with_method_form(key, fn, kind, lines, text))
    return fallback


def with_method_form(key, fn, kind, lines, text):
    """``text`` plus the call of the method form (``x.sin()`` after ``ember.sin(x)``) when
    the function is also a Tensor method and its first argument is a named tensor."""
    import re

    import ember

    if kind != "function" or getattr(ember.Tensor, key, None) is not fn:
        return text
    m = re.match(r"ember\." + re.escape(key) + r"\((\w+)(?:, (.*))?\)$", lines[-1])
    if not m or not any(ln.startswith(m.group(1) + " = ") for ln in lines):
        return text
    try:
        out, _ = run(lines + [f"{m.group(1)}.{key}({m.group(2) or ''})"])
    except Exception:  # noqa: BLE001  (the method takes other arguments: keep the function's)
        return text
    return out


# -- the table --------------------------------------------------------------------------------


def load():
    ns = {}
    if os.path.exists(TABLE):
        with open(TABLE, encoding="utf-8") as f:
            exec(compile(f.read(), TABLE, "exec"), ns)
    return ns.get("EXAMPLES", {}), ns.get("__doc__")


def targets(table=None):
    """``{key: (callable, kind)}`` for every public op form the registry declared, every
    Tensor method, the documented Tensor properties without an example of their own (or
    with one from ``table``), and the functions of ``NAMESPACES``."""
    import ember
    from ember._ops import _registry

    out = {}
    for n, function, method, has_inplace, _d, _a in _registry._declared:
        if function and n in _registry.functions:
            out[n] = (_registry.functions[n], "function")
        elif method and getattr(ember.Tensor, n, None) is not None:
            out["Tensor." + n] = (getattr(ember.Tensor, n), "method")
        ip = getattr(ember.Tensor, n + "_", None) if (method or has_inplace) else None
        if ip is not None:
            out["Tensor." + n + "_"] = (ip, "inplace")
    # every other public Tensor method
    for n in dir(ember.Tensor):
        raw = inspect.getattr_static(ember.Tensor, n, None)
        if n.startswith("_") or "Tensor." + n in out or not inspect.isfunction(raw):
            continue
        kind = "inplace" if n.endswith("_") and hasattr(ember.Tensor, n[:-1]) else "method"
        out["Tensor." + n] = (getattr(ember.Tensor, n), kind)
    # documented Tensor properties without an example
    for n in dir(ember.Tensor):
        raw = inspect.getattr_static(ember.Tensor, n, None)
        if not n.startswith("_") and isinstance(raw, property) and raw.__doc__ and \
                (">>>" not in raw.__doc__ or "Tensor." + n in (table or ())):
            out["Tensor." + n] = (raw, "property")
    # the functions of the op namespaces declared in ember/_ops (NAMESPACES)
    for ns in NAMESPACES:
        mod = getattr(ember, ns)
        names = getattr(mod, "__all__", None) or [n for n in dir(mod) if n[0] != "_"]
        for n in sorted(names):
            fn = getattr(mod, n, None)
            raw = inspect.unwrap(fn) if inspect.isfunction(fn) else None
            if raw is None or not raw.__module__.startswith("ember._ops.") or \
                    raw in _registry.functions.values():
                continue
            out[f"{ns}.{n}"] = (fn, "function")
            SOURCES[f"{ns}.{n}"] = _source_of(raw)
    return out


def _source_of(raw):
    """``"module:name"`` of the family module that holds ``raw`` (its ``__module__`` may be
    the module of the helper that made it)."""
    import sys

    for mname, m in sorted(sys.modules.items()):
        if not mname.startswith("ember._ops.") or m is None:
            continue
        for attr in (raw.__name__, raw.__qualname__):
            f = getattr(m, attr, None)
            if f is not None and (f is raw or inspect.unwrap(f) is raw):
                return f"{mname}:{attr}"
    return f"{raw.__module__}:{raw.__name__}"


#: namespaces whose functions are declared in ember/_ops (their docstrings are completed
#: from the table: NOTE [ Generated docstrings ])
NAMESPACES = ("linalg", "fft", "special")
#: key -> "module:function" for namespace functions (filled by ``targets``)
SOURCES: dict = {}


def _hand_written_example(fn, key, table):
    """Whether ``fn``'s docstring has an example that did not come from the table."""
    doc = fn.__doc__ or ""
    if key in table:
        return False
    return ">>>" in doc or "Example::" in doc


def write(table, path=TABLE):
    head = ('"""One doctest example per registered op and in-place form (NOTE [ Generated '
            'docstrings ]\nin ember/_ops/_docs.py). Written by ``python docs/_gen.py '
            '--examples``, which runs every\nexample and records its output and result '
            'type; edit the ``>>>`` lines and rerun it.\n\nname -> (result type, doctest '
            'text). Names are ``ember.<name>`` functions, or\n``Tensor.<name>`` for methods '
            'and in-place forms.\n"""\n\n'
            '# ruff: noqa: E501  (recorded outputs are as long as ember prints them)\n'
            '# fmt: off\nEXAMPLES = {\n')
    body = []
    for key in sorted(table):
        kind, text = table[key][:2]
        src = SOURCES.get(key) or (table[key][2] if len(table[key]) > 2 else None)
        if '"""' in text or "\\" in text:
            lit = repr("\n" + text + "\n")
        else:
            lit = '"""\n' + text + '\n"""'
        more = f", {src!r}" if src else ""
        body.append(f"    {key!r}: ({kind!r}, {lit}{more}),\n")
    with open(path, "w", encoding="utf-8") as f:
        f.write(head + "".join(body) + "}\n")


def main(only=None, verbose=True):
    import ember  # noqa: F401

    table, _ = load()
    wanted = targets(table)
    # entries of names that are no longer public are dropped
    table = {k: v for k, v in table.items() if k in wanted}
    refreshed, failed_refresh = {}, []
    for key, (_, text, *_src) in sorted(table.items()):
        try:
            out, result = run(_statements(text))
        except Exception as e:  # noqa: BLE001
            failed_refresh.append(f"{key}: {type(e).__name__}: {e}")
            refreshed[key] = table[key]
            continue
        first_call = [s for s in _statements(text) if f"{key.split('.')[-1]}(" in s]
        keep = (key.startswith("Tensor.") and key.endswith("_")) or \
            (first_call and first_call[0].endswith(".shape"))
        found = main_result(key, run.results)
        kind = table[key][0] if keep or found is _NONE else result_kind(found)
        refreshed[key] = (kind, out, *([SOURCES[key]] if key in SOURCES else table[key][2:]))
    added, missing = [], []
    for key, (fn, kind) in sorted(wanted.items()):
        if key in refreshed or _hand_written_example(fn, key, table):
            continue
        if only and key not in only:
            continue
        got = build(fn, key, kind)
        if got is None:
            missing.append(key)
            continue
        refreshed[key] = got
        added.append(key)
    write(refreshed)
    if verbose:
        print(f"{TABLE}: {len(refreshed)} examples ({len(added)} new)")
        for line in failed_refresh:
            print("failed to run:", line)
        if missing:
            print(f"{len(missing)} ops have no example (write one by hand in the table):")
            print(" ".join(missing))
    return refreshed, missing, failed_refresh

