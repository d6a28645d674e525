"""The ``__torch_function__`` layer: Tensor subclasses and function modes that override ember's
public API, as PyTorch's ``torch.overrides`` protocol describes.

NOTE [ __torch_function__ ]
This is the outermost layer of the dispatcher (NOTE [ Dispatch ] in ember/_dispatch.py): it
sees *public API calls* -- ``ember.add``, ``Tensor.sum``, ``t + 1``, ``t[0]`` -- before any
argument normalisation, and may replace them. A call is overridden when

- a ``TorchFunctionMode`` is active on the thread: its ``__torch_function__(func, types,
  args, kwargs)`` runs first, with the mode popped while it runs; or
- an argument (or an element of a list/tuple argument) is an object whose type defines
  ``__torch_function__`` other than ``_disabled_torch_function_impl`` -- any Tensor
  subclass but ``Parameter``/``Buffer`` (the default ``Tensor.__torch_function__`` runs the
  function and re-wraps tensor results in the subclass), or any class at all (a
  "tensor-like").

Each public function is wrapped once, when declared, by ``wrap_public``: a generated function
with the wrapped function's own signature whose first statement is ``if _active[0]:`` -- a
list cell that turns True the first time a Tensor subclass taking part in the protocol is
defined (and stays so) or while a function mode is entered. So a program that never
subclasses Tensor pays one list read and one call frame per public call; once one exists, a
call on plain arguments pays a set look-up per argument's type (NOTE [ Subclasses found by
their type ]). Objects that are not Tensors at all are found only when the call fails with
TypeError or AttributeError (they would have failed anyway), so they cost nothing either.
"""

from __future__ import annotations

import inspect
import itertools
import threading

from ._core.device import device as _device_cls
from ._core.dtype import dtype as _dtype_cls
from ._core.size import Size as _Size
from ._core.tensor import Tensor
from ._dispatch import named_union, without_latest

#: a one-element list read by every generated wrapper: True once the protocol may apply
_active = [False]


class _State(threading.local):
    subclasses_disabled = False  # DisableTorchFunctionSubclass
    all_disabled = False  # DisableTorchFunction
    modes = ()  # TorchFunctionMode stack, innermost last
    naming = (None, None)  # (a mode stack, the function names its modes act on or None)


state = _State()
_mode_pushes = 0
_subclass_seen = False  # a Tensor subclass taking part was defined
#: a subclass taking part was defined that the operators' own test must find (it has
#: operators of its own: NOTE [ Subclasses found by their type ])
_subclass_global = False
#: the Tensor subclasses defined that do not take part (``Parameter``, ``Buffer``)
_plain_subclasses: list = []
#: ``[True]`` while a function mode is entered on some thread: the generated wrappers' test
#: that the arguments' types alone cannot answer
_modes_on = [False]
_lock = threading.Lock()


def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """Set as a Tensor subclass's ``__torch_function__`` to opt it out of the protocol: its
    instances behave as plain tensors (results are plain Tensors)."""
    return func(*args, **(kwargs or {}))


def _is_disabled(tf):
    return getattr(tf, "__func__", tf) is _disabled_torch_function_impl


def _takes_part(cls) -> bool:
    tf = getattr(cls, "__torch_function__", None)
    return tf is not None and not _is_disabled(tf)


def _switch_on(operators=True):
    """The protocol may apply from now on: every wrapper takes its test; with ``operators``,
    the hottest operators too (``_dispatch.slow``), which a subclass found by its type
    spares them (NOTE [ Subclasses found by their type ])."""
    from . import _dispatch

    _active[0] = True
    if operators:
        _dispatch.torch_function_on = True
        _dispatch.slow[0] = True


def _subclass_defined(cls):
    """``Tensor.__init_subclass__``: a subclass taking part switches the protocol on, for
    good (its instances may live anywhere); one that does not is a plain argument type."""
    global _subclass_seen, _subclass_global
    with _lock:
        if not _takes_part(cls):
            _PLAIN.add(cls)
            _plain_subclasses.append(cls)
            if _subclass_seen:
                _guard_operators(cls)
            return
        if not _subclass_seen:
            for c in _plain_subclasses:
                _guard_operators(c)
        _subclass_seen = True
        routed = _route_operators(cls)
        _subclass_global = _subclass_global or not routed
        _switch_on(operators=not routed)


def _switch_off_if_idle():
    """Called with ``_lock`` held when the last function mode left: with no subclass ever
    taking part, the wrappers go back to their fast path (autocast's outer layer comes and
    goes with its blocks); with subclasses found by their type only, the operators do."""
    from . import _dispatch

    if _mode_pushes == 0:
        _modes_on[0] = False
        _active[0] = _subclass_seen
        _dispatch.torch_function_on = _subclass_global
        _dispatch.slow[0] = (_subclass_global or _dispatch.intercept
                             or _dispatch.cpu_kernel_replaced)


def push_mode(mode):
    global _mode_pushes
    state.modes = state.modes + (mode,)
    with _lock:
        _mode_pushes += 1
        _modes_on[0] = True
        _switch_on()


def pop_mode(mode):
    global _mode_pushes
    state.modes = without_latest(state.modes, mode, "TorchFunctionMode.__exit__")
    with _lock:
        _mode_pushes -= 1
        _switch_off_if_idle()


# ------------------------------------------------------------------------------------------------
# finding the overloaded arguments


def overloaded_args(args, kwargs=None):
    """The arguments whose types take part in the protocol, one per type, in argument order
    with subclasses moved ahead of their parent classes (PyTorch's order)."""
    found = []
    types = []
    for x in itertools.chain(args, kwargs.values() if kwargs else ()):
        if type(x) is Tensor:
            continue
        if isinstance(x, (list, tuple)):
            for y in x:
                _consider(y, found, types)
        else:
            _consider(x, found, types)
    return found


#: argument types that never take part in the protocol: a call whose arguments are all of
#: these (or plain Tensors) skips the search -- the common call once a subclass exists
_PLAIN = {Tensor, int, float, bool, complex, str, type(None), type(Ellipsis), slice,
          _dtype_cls, _device_cls, _Size}


def _consult(public, args, kwargs):
    """Whether a call of ``public`` must go to ``handle``: a function mode on this thread may
    act on it, or an argument is not of a plain type (checked before the wrapper strips
    defaults, which costs more). A function mode that acts on a few functions only names
    them (``_ember_names``, as autocast's outer layer does): calls of other functions skip it
    (the door's NOTE [ Modes that name their ops ], for ``__torch_function__``)."""
    modes = state.modes
    if modes:
        cached = state.naming
        if cached[0] is modes:
            names = cached[1]
        else:
            names = named_union(modes, "_ember_names")
            state.naming = (modes, names)
        if names is None or public.__name__ in names:
            return True
    return not _only_plain(args, kwargs)


def _only_plain(args, kwargs):
    for x in args:
        t = type(x)
        if t not in _PLAIN and not _plain_after_all(t, x):
            return False
    if kwargs:
        for x in kwargs.values():
            t = type(x)
            if t not in _PLAIN and not _plain_after_all(t, x):
                return False
    return True


#: the homes of argument types that, lacking ``__torch_function__``, are remembered as plain
#: the first time a test meets them (ember's sentinels, NumPy's scalars and dtypes)
# (ember's classes are named torch's under the alias: NOTE [ Class names under the alias ])
_REMEMBERED = frozenset(["ember", "torch", "numpy", "builtins"])


def _plain_after_all(t, x) -> bool:
    """Whether ``x``, of a type not (yet) in ``_PLAIN``, cannot take part: a list or tuple
    of plain items, or an object of a type that has no ``__torch_function__`` and lives in
    ember, NumPy or the builtins -- remembered in ``_PLAIN`` from then on."""
    if t is list or t is tuple:
        return _only_plain(x, None)
    if getattr(t, "__torch_function__", None) is not None:
        return False
    if (getattr(t, "__module__", None) or "").partition(".")[0] in _REMEMBERED:
        _PLAIN.add(t)
    return True


def _consider(x, found, types):
    t = type(x)
    # (a class's home does not matter: one defined by ``exec`` without a ``__name__`` lives
    # in ``builtins`` and takes part as any other)
    if t is Tensor or t in types or not _takes_part(t):
        return
    # a subclass goes before the first of its parent classes already found
    for i, u in enumerate(types):
        if issubclass(t, u):
            types.insert(i, t)
            found.insert(i, x)
            return
    types.append(t)
    found.append(x)


# NOTE [ Subclasses found by their type ]
# The hottest operators (``a + b``, ``t[i]``) make the protocol's test themselves, behind
# the one cell ``_dispatch.slow``; switching that cell on for good once a subclass is defined
# made every plain ``a + b`` of the process 2.5x slower (importing DTensor did it). Python
# finds those operators on the left operand's class -- and asks a subclass's reflected
# operator first when the right operand's class subclasses the left's and defines its own
# -- so a subclass that leaves the operators to Tensor gets routed copies on its own class
# instead (``_route_operators``): the operator of the subclass always consults the
# protocol, Tensor's never does, and ``slow`` stays as it was. ``plain <op> sub`` reaches
# the subclass's reflected copy first, which hands the protocol ``Tensor.<op>`` with the
# operands in written order, as PyTorch's protocol sees that call. The generated wrappers
# (every other public function and method) keep ``_active``, with a test of their arguments'
# types written inline (``type(x) not in _PLAIN`` per parameter), so a call on plain
# tensors pays a few set look-ups and no call. Indexing a plain tensor with a subclass
# index leaves the fast int/slice/Tensor cases and finds it on the general path. A
# subclass with operators of its own (its ``__add__`` may call ``super().__add__``) keeps
# the global switch.

#: the binary operators whose reflected form a subclass must have for Python to ask it
#: first (``plain + sub``)
_REFLECTED = {f"__{n}__": f"__r{n}__" for n in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
    "lshift", "rshift")}


def _self_testing_operators():
    """Tensor's operators that make the protocol's test themselves behind ``_dispatch.slow``
    (``operator``), by name; empty until ember's operators are installed."""
    return {n: f for n, f in vars(Tensor).items()
            if inspect.isfunction(f) and _wrapped.get(f) is f}


def _routed(name, f, forward=None):
    """``cls.<name>``: Tensor's operator ``f`` consulting the protocol unconditionally; a
    reflected operator (``forward``: the left operand's form) called with a tensor on the
    left hands the protocol that call (NOTE [ Subclasses found by their type ])."""
    tests_itself = _wrapped.get(f) is f

    def op(self, other):
        if forward is not None and isinstance(other, Tensor):
            r = handle(forward, (other, self), {})
            return forward(other, self) if r is NOT_HANDLED else r
        if tests_itself:
            r = handle(f, (self, other), {})
            if r is not NOT_HANDLED:
                return r
        return f(self, other)

    op._ember_routed = True
    return _as_operator(op, name, f)


def _guarded(name, f):
    """``cls.<name>`` for a subclass that does not take part: Python asks its operator
    first for ``param + sub`` (``sub``'s class does not subclass ``Parameter``), so the
    operator looks at the right operand's type (NOTE [ Subclasses found by their type ])."""

    def op(self, other):
        if type(other) not in _PLAIN:
            r = handle(f, (self, other), {})
            if r is not NOT_HANDLED:
                return r
        return f(self, other)

    op._ember_guarded = True
    return _as_operator(op, name, f)


def _as_operator(op, name, f):
    """``op`` named and documented as Tensor's operator ``f`` (``Tensor.__add__``)."""
    op.__name__ = name
    op.__qualname__ = f"Tensor.{name}"
    op.__doc__ = f.__doc__
    return op


def _guard_operators(cls) -> None:
    """Give ``cls``, a subclass that does not take part, guarded copies of Tensor's
    self-testing binary operators it inherits."""
    for n, f in _self_testing_operators().items():
        if n in _REFLECTED and getattr(cls, n, None) is f:
            setattr(cls, n, _guarded(n, f))


def _route_operators(cls) -> bool:
    """Give ``cls`` routed copies of Tensor's self-testing operators (and of the reflected
    partners Python must find on it); False, changing nothing, when ``cls`` has operators
    of its own or ember's are not installed yet (NOTE [ Subclasses found by their type ])."""
    own = _self_testing_operators()
    if "__add__" not in own or "__getitem__" not in own:
        return False
    names = set(own) | {_REFLECTED[n] for n in own if n in _REFLECTED}
    for n in names:
        f = getattr(cls, n, None)
        if f is not getattr(Tensor, n, None) and not getattr(f, "_ember_routed", False) and \
                not getattr(f, "_ember_guarded", False):
            return False
    forward_of = {r: f for f, r in _REFLECTED.items()}
    for n in names:
        if getattr(getattr(cls, n), "_ember_routed", False):
            continue  # inherited from a routed parent (a guarded one is replaced)
        fwd = forward_of.get(n)
        fwd = getattr(Tensor, fwd) if fwd is not None and fwd in own else None
        setattr(cls, n, _routed(n, getattr(Tensor, n), fwd))
    return True


def handle(public, args, kwargs, relevant=None):
    """Run ``public(*args, **kwargs)`` through the active modes and overloaded arguments
    (found among ``relevant`` when given, else among the arguments).

    Returns ``NOT_HANDLED`` when nothing overrides the call (the caller then runs it)."""
    if state.all_disabled:
        return NOT_HANDLED
    if not state.modes and _only_plain(args if relevant is None else relevant,
                                       None if relevant is not None else kwargs):
        return NOT_HANDLED
    overloaded = () if state.subclasses_disabled else overloaded_args(
        args if relevant is None else relevant, kwargs if relevant is None else None)
    types = tuple(type(x) for x in overloaded)
    modes = state.modes
    if modes:
        mode = modes[-1]
        state.modes = modes[:-1]
        try:
            r = mode.__torch_function__(public, types, args, kwargs)
        finally:
            state.modes = modes
        if r is not NotImplemented:
            return r
    if not overloaded:
        return NOT_HANDLED
    for x in overloaded:
        r = type(x).__torch_function__(public, types, args, kwargs)
        if r is not NotImplemented:
            return r
    name = getattr(public, "__name__", str(public))
    raise TypeError(f"no implementation found for '{name}' on types that implement "
                    f"__torch_function__: {[t for t in types]}")


class _NotHandled:
    def __repr__(self):
        return "NOT_HANDLED"


NOT_HANDLED = _NotHandled()


def handle_failed(public, args, kwargs):
    """After ``public`` raised TypeError/AttributeError: an argument that is no Tensor but
    implements ``__torch_function__`` (a tensor-like) gets the call instead."""
    if state.all_disabled or state.subclasses_disabled:
        return NOT_HANDLED
    if not overloaded_args(args, kwargs):
        return NOT_HANDLED
    return handle(public, args, kwargs)


# ------------------------------------------------------------------------------------------------
# the default Tensor.__torch_function__ and the result conversion


class _SwitchOff:
    """Context manager setting one flag of ``state`` for the block, then restoring it."""

    flag = ""

    def __enter__(self):
        self.prev = getattr(state, self.flag)
        setattr(state, self.flag, True)
        return self

    def __exit__(self, *exc):
        setattr(state, self.flag, self.prev)
        return False


class DisableTorchFunctionSubclass(_SwitchOff):
    """Context manager: inside, Tensor subclasses' ``__torch_function__`` is not consulted
    (modes still are). The default ``Tensor.__torch_function__`` runs the function so.

    Example::

        >>> with DisableTorchFunctionSubclass():
        ...     pass
    """

    flag = "subclasses_disabled"


class DisableTorchFunction(_SwitchOff):
    """Context manager: inside, neither subclasses nor modes are consulted.

    Example::

        >>> with DisableTorchFunction():
        ...     pass
    """

    flag = "all_disabled"


def _convert(ret, cls):
    if isinstance(ret, Tensor) and not isinstance(ret, cls):
        return ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)) and any(isinstance(r, Tensor) for r in ret):
        items = [_convert(r, cls) for r in ret]
        return type(ret)(items) if type(ret) in (tuple, list) else type(ret)(*items)
    return ret


def tensor_torch_function(cls, func, types, args=(), kwargs=None):
    """The default ``Tensor.__torch_function__``: run ``func`` with subclass handling off and
    return its tensor results as ``cls`` instances."""
    if kwargs is None:
        kwargs = {}
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        ret = func(*args, **kwargs)
    if func in _nowrap:
        return ret
    return _convert(ret, cls)


#: functions whose results keep their own type (PyTorch's default no-wrap functions)
_nowrap: set = set()


# ------------------------------------------------------------------------------------------------
# the generated wrappers

_wrapped: dict = {}  # public wrapper -> the function it wraps


# NOTE [ NumPy's spellings ]
# PyTorch's functions and methods accept NumPy's names for two parameters: ``axis`` for
# ``dim`` and ``keepdims`` for ``keepdim`` (``torch.sum(x, axis=0, keepdims=True)``); its
# Python-level functions (``nn.functional``) do not. ember's ops declare ``dim``/``keepdim``
# only: ``wrap_public(..., numpy_names=True)``, which ``@public`` asks for, gives the wrapper
# the aliases. Giving both spellings is a TypeError.
_ALIASES = (("dim", "axis"), ("keepdim", "keepdims"))
_UNSET = object()


def _alias_clash(fname, name, alias):
    return TypeError(f"{fname}() got multiple values for argument '{name}' (also given as "
                     f"'{alias}')")


def wrap_public(f, name=None, numpy_names=False):
    """The public face of ``f``: the same signature, docstring and name, consulting the
    protocol first (NOTE [ __torch_function__ ]); with ``numpy_names``, also accepting
    ``axis``/``keepdims`` for ``dim``/``keepdim`` (NOTE [ NumPy's spellings ]). Idempotent."""
    if f in _wrapped or getattr(f, "_torch_function_wrapper", False):
        return f
    name = name or f.__name__
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        sig = None
    # ``*args`` cannot be forwarded without repacking it, which costs more than the generic
    # wrapper's single pass-through (measured: 200 ns against 110 ns a call)
    if sig is None or not inspect.isfunction(inspect.unwrap(f)) or \
            hasattr(f, "__signature__") or \
            any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values()):
        w = _generic_wrapper(f)
    else:
        w = _generated_wrapper(f, sig, name, numpy_names)
    w.__name__ = name
    w.__qualname__ = getattr(f, "__qualname__", name)
    w.__doc__ = f.__doc__
    w.__module__ = getattr(f, "__module__", None)
    w.__wrapped__ = f
    w._torch_function_wrapper = True
    _wrapped[w] = f
    return w


def operator(f):
    """Mark ``f``, a Tensor operator that makes the protocol's test itself (``if
    _active[0]: ...`` first, tensor-likes on TypeError), as needing no wrapper: the hottest
    calls save the wrapper's frame that way."""
    f._torch_function_wrapper = True
    _wrapped[f] = f
    return f


def _resolves_to(w, module_name, qualname) -> bool:
    import sys

    target = sys.modules.get(module_name or "")
    for part in (qualname or "").split("."):
        target = getattr(target, part, None)
    return target is w


def settle(w, module_name: str, qualname: str) -> None:
    """Give the public wrapper ``w`` the address ``module_name.qualname`` where it is bound,
    unless its own ``__module__``/``__qualname__`` already lead to it.

    A wrapper first copies the wrapped function's address, which leads to the *unwrapped*
    function when that one lives in another module (``nn.functional.relu`` wraps
    ``nn._activations.relu``); pickle finds functions by that address and refuses one that
    leads elsewhere, so a module holding ``F.relu`` could not be saved whole. Addresses are
    set once: the first namespace that binds a wrapper (``ember`` before ``ember.special``)
    keeps it.
    """
    if not _resolves_to(w, w.__module__, w.__qualname__):
        w.__module__ = module_name
        w.__qualname__ = qualname


def consult_in(namespace: dict) -> None:
    """Make the public functions of a module's ``namespace`` (``globals()``) consult the
    protocol: a function ember already wraps gets that same wrapper (so ``ember.special.expit
    is ember.sigmoid``), any other ember function a wrapper of its own."""
    faces = {raw: w for w, raw in _wrapped.items()}
    for name, f in list(namespace.items()):
        if name.startswith("_") or not inspect.isfunction(f) or \
                getattr(f, "_torch_function_wrapper", False):
            continue
        if not (f.__module__ or "").startswith("ember"):
            continue
        namespace[name] = w = faces.get(f) or wrap_public(f, name)
        settle(w, namespace.get("__name__"), name)


def _generic_wrapper(f):
    def w(*args, **kwargs):
        if _active[0] and (_modes_on[0] or not _only_plain(args, kwargs)):
            r = handle(w, args, kwargs)
            if r is not NOT_HANDLED:
                return r
        try:
            if kwargs:
                return f(*args, **kwargs)
            return f(*args)
        except (TypeError, AttributeError):
            r = handle_failed(w, args, kwargs)
            if r is NOT_HANDLED:
                raise
            return r

    return w


_TEMPLATE = """\
def _ember_w({params}):
{aliases}    if _active[0] and ({plain_test}) and _consult(_ember_w, ({pos}), {{{kw}}}):
        _ember_r = handle(_ember_w, *_given(({pos}), {{{kw}}}))
        if _ember_r is not NOT_HANDLED:
            return _ember_r
    try:
        {shortcut}return _ember_f({call})
    except (TypeError, AttributeError):
        _ember_r = handle_failed(_ember_w, *_given(({pos}), {{{kw}}}))
        if _ember_r is NOT_HANDLED:
            raise
        return _ember_r
"""


def _given_args(pos_defaults, kw_defaults, has_varargs):
    """``(args, kwargs) -> (args, kwargs)`` without the parameters left at their defaults,
    so an override sees the call about as it was written."""
    sentinel = object()

    def given(args, kwargs):
        if not has_varargs:
            n = len(args)
            while n and pos_defaults[n - 1] is not sentinel and \
                    args[n - 1] is pos_defaults[n - 1]:
                n -= 1
            args = args[:n]
        kwargs = {k: v for k, v in kwargs.items() if kw_defaults.get(k, sentinel) is not v}
        return args, kwargs

    return given, sentinel


def _numpy_aliases(sig):
    """The (name, alias) pairs of NOTE [ NumPy's spellings ] a signature can take: the name
    is a parameter, the alias is not, and (for a required name) every later positional
    parameter has a default, so the name can become optional."""
    ps = list(sig.parameters.values())
    names = {p.name for p in ps}
    if any(p.kind is p.VAR_KEYWORD for p in ps):
        return []
    found = []
    for name, alias in _ALIASES:
        if name not in names or alias in names:
            continue
        i = next(k for k, p in enumerate(ps) if p.name == name)
        if ps[i].kind is ps[i].POSITIONAL_ONLY:
            continue
        if ps[i].default is ps[i].empty and any(
                p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD for p in ps[i + 1:]):
            continue
        found.append((name, alias))
    return found


def _generated_wrapper(f, sig, fname=None, numpy_names=False):
    """A wrapper with ``f``'s exact parameters, so the common path forwards them without
    packing ``*args``/``**kwargs`` (measured: 20 ns a call against 150 ns)."""
    params, pos, kw, call = [], [], [], []
    # the generated names start with _ember_ so no parameter of ``f`` can shadow them
    env = {"_ember_f": f, "_active": _active, "handle": handle, "handle_failed": handle_failed,
           "_consult": _consult, "_ember_modes": _modes_on, "_ember_plain": _PLAIN,
           "_ember_only_plain": _only_plain,
           "NOT_HANDLED": NOT_HANDLED, "_ember_unset": _UNSET, "_ember_clash": _alias_clash}
    pos_defaults, kw_defaults = [], {}
    has_varargs = any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values())
    env["_given"], none = _given_args(pos_defaults, kw_defaults, has_varargs)
    aliases = _numpy_aliases(sig) if numpy_names else []
    aliased = dict(aliases)
    alias_src = []
    # NOTE [ Subclasses found by their type ]: each argument's type, inline
    plain_test = ["_ember_modes[0]"]
    star_done = False
    for i, p in enumerate(sig.parameters.values()):
        n = p.name
        default = ""
        if p.default is not p.empty:
            env[f"_d{i}"] = p.default
            default = f"=_d{i}"
        if n in aliased:
            a = aliased[n]
            if p.default is p.empty:  # required unless given by its alias
                default = "=_ember_unset"
                alias_src.append(
                    f"    if {a} is not _ember_unset:\n"
                    f"        if {n} is not _ember_unset:\n"
                    f"            raise _ember_clash({fname or f.__name__!r}, {n!r}, {a!r})\n"
                    f"        {n} = {a}\n"
                    f"    elif {n} is _ember_unset:\n"
                    f"        raise TypeError(\"{fname or f.__name__}() missing required "
                    f"argument '{n}'\")\n")
            else:
                alias_src.append(
                    f"    if {a} is not _ember_unset:\n"
                    f"        if {n} is not _d{i}:\n"
                    f"            raise _ember_clash({fname or f.__name__!r}, {n!r}, {a!r})\n"
                    f"        {n} = {a}\n")
        plain_test.append(f"not _ember_only_plain({n}, None)" if p.kind is p.VAR_POSITIONAL
                          else f"not _ember_only_plain((), {n})" if p.kind is p.VAR_KEYWORD
                          else f"type({n}) not in _ember_plain")
        if p.kind is p.POSITIONAL_ONLY or p.kind is p.POSITIONAL_OR_KEYWORD:
            pos_defaults.append(none if p.default is p.empty else p.default)
            params.append(n + default)
            pos.append(n + ", ")
            call.append(n)
        elif p.kind is p.VAR_POSITIONAL:
            params.append("*" + n)
            pos.append("*" + n + ", ")
            call.append("*" + n)
            star_done = True
        elif p.kind is p.KEYWORD_ONLY:
            if not star_done:
                params.append("*")
                star_done = True
            params.append(n + default)
            if p.default is not p.empty:
                kw_defaults[n] = p.default
            kw.append(f"{n!r}: {n}, ")
            call.append(f"{n}={n}")
        else:  # VAR_KEYWORD
            params.append("**" + n)
            kw.append("**" + n + ", ")
            call.append("**" + n)
    if aliases:
        if not star_done:
            params.append("*")
        params.extend(f"{a}=_ember_unset" for _, a in aliases)
    if any(p.kind is p.POSITIONAL_ONLY for p in sig.parameters.values()):
        last = max(i for i, p in enumerate(sig.parameters.values())
                   if p.kind is p.POSITIONAL_ONLY)
        params.insert(last + 1, "/")
    # keyword-only parameters left at their defaults are not passed on: building the
    # keyword dict for the call measured more than the rest of the wrapper together
    kw_only = [(i, p) for i, p in enumerate(sig.parameters.values())
               if p.kind is p.KEYWORD_ONLY and p.default is not p.empty]
    shortcut = ""
    if kw_only:
        test = " and ".join(f"{p.name} is _d{i}" for i, p in kw_only)
        short_call = [c for c in call if not any(c == f"{p.name}={p.name}" for _, p in kw_only)]
        shortcut = f"if {test}:\n            return _ember_f({', '.join(short_call)})\n        "
    src = _TEMPLATE.format(params=", ".join(params), pos="".join(pos), kw="".join(kw),
                           call=", ".join(call), shortcut=shortcut, aliases="".join(alias_src),
                           plain_test=" or ".join(plain_test))
    exec(compile(src, f"<ember wrapper of {f.__qualname__}>", "exec"), env)
    return env["_ember_w"]


# ------------------------------------------------------------------------------------------------
# Tensor's side of the protocol


def _as_subclass(self, cls):
    """A ``cls`` instance sharing this tensor's data and autograd history (an alias)."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass(): argument 'cls' must be a Tensor subclass, "
                        f"got {cls!r}")
    from ._ops.shape import alias

    with DisableTorchFunctionSubclass():
        t = alias(self)
    t.__class__ = cls
    return t


def _init_subclass(cls, **kwargs):
    super(Tensor, cls).__init_subclass__(**kwargs)
    _subclass_defined(cls)


Tensor.__torch_function__ = classmethod(tensor_torch_function)
Tensor.__init_subclass__ = classmethod(_init_subclass)
Tensor.as_subclass = _as_subclass
