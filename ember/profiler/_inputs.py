"""An event's inputs as PyTorch's profiler lists them under ``record_shapes``.

NOTE [ Recorded inputs ]
PyTorch's op events list one input per argument of the op's schema, in the schema's order,
defaults filled in: ``aten::conv2d`` has seven (``Input Dims`` ``[[5, 64, 56, 56],
[64, 64, 3, 3], [], [], [], [], []]``), and the trace gives each argument's ``Input type``
(a Tensor's C++ element type, ``Scalar``/``ScalarList`` for numbers and lists of them,
``TensorList``, ``''`` for None and anything else), ``Input Strides`` (in elements) and
``Concrete Inputs`` (the value of a number, list or dtype -- as its ``ScalarType`` code --
written as C++ prints it; ``''`` for Tensors). A Python number where the schema takes a
Tensor (``x.add(2.5)``) is a wrapped 0-d tensor: type ``double``, no value.

ember's ops receive ember's arguments (fewer, often named otherwise), so the recorder keeps
a cheap raw summary of the call (``record_call``: strides of the positional Tensors, the other
positional values, the keywords) and ``torch_inputs`` binds it to torch's argument list of
the event's name (``_event_schemas.ARGS``, or the overload table the dispatch modes see)
when the results are read: Tensors fill the schema's Tensor arguments in order, other
positional values the next argument, keywords go by name, defaults fill the rest, and an
argument left without a value is listed as None is. Events with no schema entry keep the
positional inputs only. All of this runs only while shapes are recorded.
"""

from __future__ import annotations

import numpy as np

from .._core.tensor import Tensor

__all__ = []

#: a number's type name, as PyTorch's events name a number passed where its op takes a Tensor
_NUMBER_TYPES = {bool: "bool", int: "long int", float: "double",
                 complex: "c10::complex<double>"}
#: a positional argument that was a Tensor (its shape, dtype and strides are kept beside)
TENSOR = object()
#: an argument torch's op has and the call did not give, with no default
_MISSING = object()


class _TensorInfo(tuple):
    """``(shape, dtype, strides in bytes)`` of a Tensor passed by keyword or in a list."""

    __slots__ = ()


def _info(t):
    d = t._data
    return _TensorInfo((d.shape, d.dtype, getattr(d, "strides", None)))


def _value(v):
    """What the recorder keeps of a non-Tensor argument: lists as tuples (a list may change
    after the call), Tensors inside them summarised."""
    if isinstance(v, Tensor):
        return _info(v)
    if isinstance(v, (list, tuple)):
        return tuple([_info(x) if isinstance(x, Tensor) else x for x in v])
    return v


def record_call(args, kwargs):
    """What the recorder keeps of an op call's inputs under ``record_shapes``:
    ``(shapes, dtypes, strides, values, keywords)``.

    ``shapes`` has, per positional argument, a Tensor's shape tuple, a tuple of shape tuples
    for a list of Tensors, or ``()``, then each Tensor keyword's shape (``shape_lists`` in
    _recorder.py turns them into PyTorch's nested lists); ``dtypes`` per positional
    argument a Tensor's NumPy dtype, a number's type name (``"double"``) or ``""``
    (``dtype_names`` names them); ``strides`` a Tensor's strides in bytes or None;
    ``values`` None when every positional argument was a Tensor, else per argument
    ``TENSOR`` or the kept value (lists as tuples); ``keywords`` ``(name, kept value)``
    pairs. Tensors met anywhere else are kept as ``(shape, dtype, strides)``."""
    n = len(args)
    # the common calls first: one or two Tensors, spelled out (no loop, no exception)
    if n == 2:
        a, b = args
        if isinstance(a, Tensor) and isinstance(b, Tensor):
            d = a._data
            e = b._data
            shapes = (d.shape, e.shape)
            dtypes = (d.dtype, e.dtype)
            strides = (d.strides, e.strides)
            values = None
        else:
            shapes, dtypes, strides, values = _mixed(args)
    elif n == 1 and isinstance(args[0], Tensor):
        d = args[0]._data
        shapes = (d.shape,)
        dtypes = (d.dtype,)
        strides = (d.strides,)
        values = None
    else:
        shapes, dtypes, strides, values = _mixed(args)
    kw = ()
    if kwargs:
        kw = []
        for k, v in kwargs.items():
            if isinstance(v, Tensor):
                shapes += (v._data.shape,)
                kw.append((k, _info(v)))
            elif isinstance(v, (list, tuple)):
                kw.append((k, _value(v)))
            else:
                kw.append((k, v))
        kw = tuple(kw)
        try:
            kw = _canonical.setdefault(kw, kw)
        except TypeError:   # an unhashable value: kept as it is
            pass
    # the collector untracks nested tuples one level per pass (NOTE [ Profiler recording ]):
    # the same shapes met before are tuples it has let go of already
    if len(_canonical) > 65536:
        _canonical.clear()
    if values is not None:
        try:
            values = _canonical.setdefault(values, values)
        except TypeError:
            pass
    canonical = _canonical.setdefault
    return canonical(shapes, shapes), canonical(dtypes, dtypes), canonical(strides, strides), \
        values, kw


#: a recorded tuple of shapes, strides or keywords -> the first equal one kept
_canonical: dict = {}


def _mixed(args):
    """``record_call``'s positional part for any arguments."""
    shapes = []
    dtypes = []
    strides = []
    values = []
    for a in args:
        if isinstance(a, Tensor):
            d = a._data
            shapes.append(d.shape)
            dtypes.append(d.dtype)
            strides.append(getattr(d, "strides", None))
            values.append(TENSOR)
            continue
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], Tensor):
            shapes.append(tuple([t._data.shape for t in a if isinstance(t, Tensor)]))
            dtypes.append("")
        else:
            shapes.append(())
            # a number beside a Tensor is a 0-d tensor to PyTorch's op, named by its type
            dtypes.append(_NUMBER_TYPES.get(type(a), ""))
        strides.append(None)
        values.append(_value(a))
    return tuple(shapes), tuple(dtypes), tuple(strides), tuple(values)


#: the overload key of a call whose arguments are torch's already, in its order
ORDERED = "<ordered>"


# -- schemas -----------------------------------------------------------------------------------

#: event name or overload key -> tuple of ``(name, kind, default)`` or None
_params: dict = {}


def _kind(type_text):
    """``T`` (a Tensor), ``TL`` (a list of them), ``L`` (a list of numbers) or ``O``."""
    t = type_text.replace("?", "")
    if t.startswith("Tensor"):
        return "TL" if t.endswith("]") else "T"
    return "L" if t.endswith("]") else "O"


def _parse(args_text):
    from .._library.schema import parse_schema

    schema = parse_schema(f"aten::x({args_text}) -> ()")
    out = []
    for a in schema.arguments:
        default = a.default_value if a.has_default_value() else _MISSING
        out.append((a.name, _kind(str(a.type)), default, a.kwarg_only))
    return tuple(out)


def params_of(name, overload_key=None):
    """torch's arguments of event ``name`` (``aten::conv2d``) as ``(name, kind, default,
    keyword only)`` tuples -- of overload ``overload_key`` (``"add.Tensor"``) when the
    overload table knows it -- or None when neither table has the op."""
    key = overload_key or name
    if key in _params:
        return _params[key]
    text = None
    if overload_key:
        from .._ops._overload_schemas import SCHEMAS

        full = SCHEMAS.get(overload_key)
        if full is not None and full.startswith(name + "(") or \
                full is not None and full.startswith(name + "."):
            text = full[full.index("(") + 1:full.rindex(") ->")]
    if text is None and name.startswith("aten::"):
        from ._event_schemas import ARGS

        text = ARGS.get(name[6:])
    try:
        found = _parse(text) if text is not None else None
    except Exception:  # a schema this parser does not read: positional inputs only
        found = None
    _params[key] = found
    return found


#: packet name -> its overload keys in the overload table
_by_packet: dict = {}


def _overload_for(name, overload_key, kw):
    """The overload whose arguments take the call's keywords: ember's ``sum`` is one op,
    with ``dim``/``keepdim`` keywords that torch's ``sum.dim_IntList`` has and its
    ``sum.default`` does not."""
    if not overload_key or not kw or not name.startswith("aten::"):
        return overload_key
    packet = overload_key.split(".")[0]
    if packet != name[6:]:
        return overload_key
    if not _by_packet:
        from .._ops._overload_schemas import SCHEMAS

        for k in SCHEMAS:
            _by_packet.setdefault(k.split(".")[0], []).append(k)
    keys = _by_packet.get(packet)
    if not keys or len(keys) < 2:
        return overload_key
    # (a ``False`` flag is what a call without it passes: ``x.sum()`` is ``sum.default``
    # though ember's op receives ``keepdim=False``)
    given = {k for k, v in kw if v is not None and v is not False}

    def score(key):
        p = params_of(name, key)
        return -1 if p is None else len(given & {a[0] for a in p})

    best = max(keys, key=score)
    return best if score(best) > score(overload_key) else overload_key


# -- binding -----------------------------------------------------------------------------------

#: PyTorch's ``ScalarType`` codes, which its events give for a dtype argument
_SCALAR_TYPES = {
    "uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5, "float32": 6,
    "float64": 7, "complex32": 8, "complex64": 9, "complex128": 10, "bool": 11,
    "bfloat16": 15, "float8_e5m2": 23, "float8_e4m3fn": 24, "uint16": 27, "uint32": 28,
    "uint64": 29,
}
#: a Python number where torch's op takes a Tensor is a wrapped 0-d tensor of this type
_WRAPPED = _NUMBER_TYPES


def _dtype_code(v):
    """The ScalarType code of an ember or NumPy dtype, else None."""
    from .._core import dtype as _dt

    if isinstance(v, _dt.dtype):
        return _SCALAR_TYPES.get(str(v).replace("ember.", ""))
    if isinstance(v, np.dtype):
        d = _dt.from_np.get(v)
        return None if d is None else _SCALAR_TYPES.get(str(d).replace("ember.", ""))
    return None


def _elements(strides, dtype):
    if strides is None:
        return []
    size = getattr(dtype, "itemsize", 0) or 1
    return [s // size for s in strides]


def _kind_of(v):
    """The kind of argument (``_kind``) a kept value fills."""
    if v is TENSOR or type(v) is _TensorInfo:
        return "T"
    return "TL" if type(v) is tuple and v and type(v[0]) is _TensorInfo else "O"


#: arguments PyTorch's op always receives with one value from the calls ember records
#: under its name, which ember's kernel does not take
_FIXED = {"aten::_softmax": (("half_to_float", False),),
          "aten::_log_softmax": (("half_to_float", False),)}
#: ember's keyword -> torch's argument of that meaning
_ALIASES = {"shape": "size"}


def _bind(name, params, n, values, kw):
    """For each of torch's arguments, the index of the positional argument (int), the kept
    keyword value (a 1-tuple) or its default / ``_MISSING`` (a 1-tuple) it gets."""
    slots = [None] * len(params)
    positional = [i for i, p in enumerate(params) if not p[3]]
    nxt = 0
    j = 0
    while j < n:
        v = TENSOR if values is None else values[j]
        wants = _kind_of(v)
        k = nxt
        if wants != "O":
            while k < len(positional) and params[positional[k]][1] not in (wants, "TL"):
                k += 1
        if k >= len(positional):
            break
        slot = positional[k]
        kind = params[slot][1]
        if kind == "TL" and wants == "T" or kind == "L" and type(v) is int:
            # Tensors passed one by one where torch's op takes a list (``cat``), the sizes
            # of a creation op (``ones(2, 3)``): one argument
            end = j + 1
            while end < n and _kind_of(TENSOR if values is None else values[end]) == wants \
                    and (wants == "T" or type(values[end]) is int):
                end += 1
            slots[slot] = list(range(j, end))
            j = end
        else:
            slots[slot] = j
            j += 1
        nxt = k + 1
    names = {p[0]: i for i, p in enumerate(params)}
    for key, v in kw:
        i = names.get(key)
        if i is None and key in _ALIASES:
            i = names.get(_ALIASES[key])
        if i is not None and slots[i] is None:
            slots[i] = (v,)
    for key, v in _FIXED.get(name, ()):
        i = names.get(key)
        if i is not None and slots[i] is None:
            slots[i] = (v,)
    return [(params[i][2],) if s is None else s for i, s in enumerate(slots)]


def torch_inputs(name, overload_key, shapes, dtypes, call):
    """An op event's inputs as PyTorch lists them (NOTE [ Recorded inputs ]).

    Args:
        name: the event's name (``aten::conv2d``).
        overload_key: the overload the call came in by (``"add.Tensor"``), or None.
        shapes, dtypes: the recorder's raw positional shapes and dtypes.
        call: ``record_call``'s ``(strides, values, keywords)``.

    Returns:
        ``(input_shapes, input_dtypes, concrete_inputs, dims, strides)``, one entry per
        argument of torch's op (``dims`` keeps a Tensor list's shapes, which
        ``input_shapes`` lists as ``[]`` as PyTorch's do), or None when torch's arguments
        for ``name`` are not known.
    """
    if overload_key == ORDERED:
        values = call[1]
        params = tuple((str(i), _kind_of(TENSOR if values is None else values[i]), _MISSING,
                        False) for i in range(len(call[0])))
    else:
        params = params_of(name, _overload_for(name, overload_key, call[2]))
    if params is None:
        return None
    from ._recorder import dtype_names

    strides, values, kw = call
    n = min(len(strides), len(shapes))
    if kw and n and (values is None or values[0] is TENSOR):
        # ember's ops receive the dtype they compute in (``sum``'s); PyTorch's event shows
        # the one the caller asked for, which is none when it is the input's
        kw = tuple([(k, v) for k, v in kw if k != "dtype" or v is not dtypes[0]])
    input_shapes, types, concrete, dims, strides_out = [], [], [], [], []
    for (_, kind, _, _), slot in zip(params, _bind(name, params, n, values, kw)):
        shape = stride = None
        if type(slot) is list:   # several positional arguments as one list
            v = tuple([_TensorInfo((shapes[i], dtypes[i], strides[i])) if values is None or
                       values[i] is TENSOR else values[i] for i in slot])
            slot = (v,)
        if type(slot) is int:
            v = TENSOR if values is None else values[slot]
            if v is TENSOR:
                shape, dt, stride = shapes[slot], dtypes[slot], strides[slot]
            else:
                slot = (v,)
        if type(slot) is tuple:
            v = slot[0]
            if type(v) is _TensorInfo:
                shape, dt, stride = v
        if shape is not None:
            s = list(shape)
            input_shapes.append(s)
            dims.append(s)
            types.append(dtype_names((dt,))[0])
            strides_out.append(_elements(stride, dt))
            concrete.append(None)
            continue
        if type(v) is tuple and v and type(v[0]) is _TensorInfo:
            input_shapes.append([])
            dims.append([list(t[0]) for t in v])
            types.append("TensorList")
            strides_out.append([_elements(t[2], t[1]) for t in v])
            concrete.append(None)
            continue
        input_shapes.append([])
        dims.append([])
        strides_out.append([])
        if v is _MISSING or v is None:
            types.append("")
            concrete.append(None)
        elif kind == "T" and type(v) in _WRAPPED:
            types.append(_WRAPPED[type(v)])
            concrete.append(None)
        elif type(v) in (bool, int, float):
            types.append("Scalar")
            concrete.append(v)
        elif isinstance(v, (list, tuple)) and all(type(x) in (bool, int, float) for x in v):
            types.append("ScalarList")
            concrete.append(list(v))
        else:
            code = _dtype_code(v)
            types.append("" if code is None else "Scalar")
            concrete.append(code)
    return input_shapes, types, concrete, dims, strides_out


def node_inputs(shapes, dtypes, strides):
    """A backward node's event inputs (the gradients it receives) in ``torch_inputs``' form."""
    from ._recorder import dtype_names

    return (shapes, dtype_names(dtypes), [None] * len(shapes), shapes,
            [_elements(s, d) for s, d in zip(strides, dtypes)])


def _number_text(v):
    """A number as PyTorch's trace writes a concrete input (C++'s ``double`` printing)."""
    if type(v) is bool:
        return str(v)
    if type(v) is float:
        text = f"{v:.17g}"
        if text.lstrip("-").isdigit():
            text += "."
        return text
    return str(v)


def concrete_texts(concrete):
    """``concrete_inputs`` as the trace's ``Concrete Inputs`` strings."""
    out = []
    for v in concrete:
        if v is None:
            out.append("")
        elif isinstance(v, list):
            out.append("[" + ", ".join(_number_text(x) for x in v) + "]")
        else:
            out.append(_number_text(v))
    return out
