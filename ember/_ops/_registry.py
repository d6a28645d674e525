"""The operator registry: every op is declared once, here described.

An op is declared in ``ember/_ops/<family>.py`` in two parts that sit side by side:

1. An ``Op`` -- the kernel (written once against the array namespace ``xp``, so NumPy and
   CuPy share it), optional per-backend overrides, and the derivative formulas::

       def _mul_vjp(g, a, b):
           return g * b.conj(), g * a.conj()

       mul_op = Op("mul", ufunc="multiply", vjp=_mul_vjp)

2. The public function, decorated with ``@public``, which normalises arguments once and
   calls the dispatcher (``apply``) or a family helper. ``@public`` exposes it as
   ``ember.<name>`` and, when asked, as the method ``Tensor.<name>``, the in-place method
   ``Tensor.<name>_`` and dunders. The function's own signature and docstring (a sentence
   or two: what it computes) are the documentation, and ``list_ops()`` reports it.

Every docstring is then completed from the declaration -- Args from the signature, Returns,
a Note on autograd, dtypes, backends and the generated forms, where the op knowingly differs
from PyTorch a "Differences from PyTorch:" section written in its docstring (NOTE
[ Differences from PyTorch ] in ember/_ops/_docs.py), and an Example that the docs tests
run -- once all families are loaded (``document_all``; NOTE [ Generated docstrings ]
in ember/_ops/_docs.py). So an op is documented by declaring it, and its in-place and
method forms need no docstrings of their own.

NOTE [ Derivative formulas ]
``vjp(g, *inputs, **params)`` returns one gradient per tensor input (a tensor or None; a bare
tensor is accepted for single-input ops). It is written in ember ops so that create_graph
gives higher derivatives for free. ``g`` is the output's gradient (a tuple of them for
multi-output ops; None entries for outputs that got no gradient). ``inputs`` are the
tensor inputs in order; an input whose parameter name starts with ``_`` is not needed by the
formula, is not saved, and arrives as None -- that is how an op says what it keeps alive.
A keyword-only parameter named ``out`` receives the op's result (the tuple of all results for
multi-output ops), saved for the purpose. A keyword-only parameter named
``needs_input_grad`` receives one bool per tensor input, False where the input takes no part
in autograd, so a formula can skip work nobody will use and return None there (it comes from
the node's edges: saved tensors may return from saved-tensor hooks without requires_grad).
The remaining keyword parameters receive the op's static params by name.
Formulas need not reduce broadcast gradients nor cast them: the engine sums each gradient
to its input's shape and casts it to its input's dtype (ARCHITECTURE.md section 3).

``jvp(x_dots, *inputs, out, **params)`` is the forward-mode slot: ``x_dots`` holds one
tangent (or None) per tensor input; it returns the output tangent(s). Ops flagged
``linear=True`` get their jvp from applying the op to the tangents.
"""

from __future__ import annotations

import functools
import inspect
import sys

from .. import _dispatch
from . import _docs
from .._dispatch import backends_by_type
from .._overrides import wrap_public
from .._core.tensor import Tensor

#: name -> Op, every op ever declared
ops: dict = {}
#: ``[True]`` once every family is loaded: kernels registered after that replace ember's own
_sealed = [False]
#: name -> public function exposed as ember.<name>
functions: dict = {}
#: ``(name, function, method, has_inplace, dunders, alias)`` per ``public`` declaration, in
#: order: what ``document_all`` completes the docstrings from
_declared: list = []


def quiet_kernel(kernel):
    """``kernel`` run with NumPy's floating-point warnings off.

    ember's process-wide filter (NOTE [ Floating-point warnings ] in ember/__init__.py)
    drops the warnings a ufunc raises from ember's modules; a kernel that calls one of
    NumPy's (or SciPy's) Python-level routines (``np.sinc``, ``np.tensordot``,
    ``np.linalg.slogdet``, ``scipy.linalg.expm``) gets its warnings attributed to NumPy's
    module instead, which the filter must not cover (the user's own NumPy code keeps
    warning). Such a kernel is decorated with this.

    Args:
        kernel: a kernel function ``(xp, *arrays, **params)``.

    Returns:
        The wrapped kernel.

    Example:
        >>> import numpy as np, warnings
        >>> k = quiet_kernel(lambda xp, a: xp.sinc(a))
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("error")
        ...     float(k(np, np.array([np.inf]))[0])
        nan
    """
    import numpy as np

    @functools.wraps(kernel)
    def run(*args, **kwargs):
        with np.errstate(all="ignore"):
            return kernel(*args, **kwargs)

    return run


class Op:
    """One operator: kernel(s), derivative formulas and metadata. See the module docstring."""

    #: a view op returning several views of its input (unbind, split, chunk): in-place ops
    #: on those outputs must raise, as in PyTorch. Set on the op after declaring it.
    multi_output_view = False
    #: the OpOverloads dispatch modes see for this op (made on first need; NOTE [ Dispatch ])
    _handles = None
    #: False once someone registered a CPU kernel of their own: the entrances' CPU
    #: specialisations then step aside (NOTE [ Hot path ] in ember/_dispatch.py)
    builtin_cpu = True
    #: one of ember's own ops (custom ops from ember.library say False: no specialisation
    #: of theirs needs to step aside)
    is_builtin = True
    #: for a multi-output op whose vjp takes ``out``: the indices of the outputs the formula
    #: reads (None: all). Outputs it does not read are not saved, so an in-place op on them
    #: (``ReLU(inplace=True)`` after batch norm) leaves the backward pass valid.
    saved_outputs = None
    #: ``{input index: indices of the inputs whose gradients need it}``: an input is saved only
    #: when one of those requires grad (``mul`` keeps ``a`` for ``b``'s gradient only), so
    #: data that no formula will read is neither kept alive nor version-checked. None: every
    #: input the vjp names is saved.
    saved_for = None
    #: with ``saved_for``: an input left unsaved is kept as a data-free stand-in with its
    #: shape and strides (``_saved_<name>`` still answers None, as PyTorch's does), for
    #: formulas that read an unsaved operand's layout, as PyTorch's mm formulas read
    #: ``self_sym_strides`` to keep a column-major operand's layout in its gradient
    unsaved_layout = False
    #: the inputs PyTorch's node keeps as a transposed view (a linear layer's weight, saved
    #: as ``weight.t()``): an error about one modified in place shows the view's shape
    saved_transposed = ()
    #: ``out_needed(inputs, params)`` for a one-output op whose vjp takes ``out``: whether
    #: this call's formula reads the result (``std`` does, ``var`` does not; ``pow`` only
    #: for a tensor exponent that requires grad); when False the
    #: result is not saved, so an in-place write into it leaves the backward pass valid,
    #: and the formula receives ``out=None``. None: always saved.
    out_needed = None
    #: the indices of the inputs the formula reads only for their shape, dtype and device
    #: (``trace``, ``diff``; True: every input, for varargs ops such as ``block_diag``): the
    #: node keeps a data-free stand-in instead of the tensor, as PyTorch's nodes keep
    #: ``self_sym_sizes``, so writing into the input in place after the call leaves the
    #: backward pass valid. The stand-in's values are NaN (zero for integer dtypes).
    shape_only = None
    #: ``node_name_of(inputs, params)``: the backward node's class name for this call where
    #: PyTorch's depends on the call, or None for ``node_name``'s (NOTE [ Node names ] in
    #: ember/_ops/_node_names.py)
    node_name_of = None
    #: the order the backward node hands its inputs' gradients on (a permutation of the
    #: input indices; None: as listed): NOTE [ Edge order ] in ember/autograd/_engine.py
    edge_order = None

    def __init__(self, name, kernel=None, *, ufunc=None, vjp=None, jvp=None, linear=False,
                 differentiable=True, nondiff_outputs=(), view_of=None, overrides=None,
                 doc=None):
        if name in ops:
            raise RuntimeError(f"op {name!r} is declared twice")
        if kernel is None and ufunc is None and not overrides:
            raise ValueError(f"op {name!r}: give a kernel, a ufunc name or backend kernels")
        self.name = name
        self.kernel = kernel  # kernel(xp, *arrays, **params)
        self.ufunc = ufunc  # name of an xp ufunc implementing the op exactly
        self.overrides = dict(overrides or {})  # backend name -> kernel(*arrays, **params)
        self.impl = {}  # array type -> callable(*arrays, **params), filled lazily
        self.differentiable = differentiable and (vjp is not None)
        self.nondiff_outputs = tuple(nondiff_outputs)
        self.view_of = view_of  # index of the input the output is a view of
        self.linear = linear
        self.doc = doc
        self.node_name = None  # the backward node's class name; None: <CamelName>Backward0
        self.vjp = None
        self.saved_inputs = ()
        self.saves_out = False
        self.wants_needs = False
        self.param_names = ()
        if vjp is not None:
            self.defvjp(vjp)
        self.jvp = jvp
        ops[name] = self

    # -- derivative formulas ------------------------------------------------------------------

    def defvjp(self, fn):
        """Attach the reverse-mode formula (usable as a decorator)."""
        sig = inspect.signature(fn)
        positional, keywords = [], []
        for p in list(sig.parameters.values())[1:]:
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                positional.append(p.name)
            elif p.kind == p.VAR_POSITIONAL:
                # ``*_tensors``: the formula reads only how many there are (and their
                # order), never their values, so none is saved (``cat``)
                positional.append("*" if not p.name.startswith("_") else "*_")
            elif p.kind == p.KEYWORD_ONLY:
                keywords.append(p.name)
        self.vjp = fn
        self.saved_inputs = tuple(not n.startswith("_") for n in positional
                                  if n not in ("*", "*_"))
        self.saves_all_varargs = "*" in positional
        self.saves_out = "out" in keywords
        # a formula that takes ``needs_input_grad`` gets one bool per input (False where
        # the input takes no part in autograd) and may return None for those
        self.wants_needs = "needs_input_grad" in keywords
        self.differentiable = True
        return fn

    def defjvp(self, fn):
        self.jvp = fn
        return fn

    def name_overload(self, overload):
        """Show dispatch modes this op's functional form as ``aten.<name>.<overload>``,
        PyTorch's overload name for it (``transpose.int``), instead of ``default``.

        Example::

            >>> ops["transpose"]._handles[0].__name__
            'transpose.int'
        """
        op = self

        def run(*inputs, out=None, **params):
            return _dispatch.apply(op, inputs, params, out)

        handles = self._handles or [None, None]
        handles[0] = _dispatch.overload("aten", self.name, overload, run, self)
        self._handles = handles

    # -- kernels ------------------------------------------------------------------------------

    def register_kernel(self, backend_name, fn):
        """Give a backend its own kernel ``fn(*arrays, **params)`` for this op."""
        self.overrides[backend_name] = fn
        self.impl.clear()
        if backend_name == "cpu" and _sealed[0] and self.is_builtin:
            # someone replaced a built-in CPU kernel: specialisations must let it run
            self.builtin_cpu = False
            _dispatch.cpu_kernel_replaced = True
            _dispatch.slow[0] = True

    def resolve(self, array_type):
        """Find (and cache) the callable that runs this op on arrays of ``array_type``."""
        backend = backends_by_type.get(array_type)
        if backend is None:
            raise TypeError(f"{self.name}: expected Tensor inputs, got {array_type.__name__}")
        fn = self.overrides.get(backend.name)
        if fn is None and self.ufunc is not None:
            fn = getattr(backend.xp, self.ufunc, None)
        if fn is None and self.kernel is not None:
            fn = functools.partial(self.kernel, backend.xp)
        # a namespace may adapt the kernels run on its arrays (NOTE [ Meta device ] in
        # ember/backends/meta.py); NumPy and CuPy have no adapter
        adapt = getattr(backend.xp, "__ember_kernel__", None)
        if adapt is not None:
            fn = adapt(self, fn)
        if fn is None:
            raise NotImplementedError(
                f"ember: the op '{self.name}' has no kernel for device type "
                f"'{backend.name}'; register one with ember.library")
        self.impl[array_type] = fn
        return fn

    def backends(self):
        names = set(self.overrides)
        if self.kernel is not None or self.ufunc is not None:
            names.update(b.name for b in backends_by_type.values())
        return sorted(names)

    def __repr__(self):
        return f"<ember op {self.name}>"


# ------------------------------------------------------------------------------------------------
# public functions


def public(fn=None, *, name=None, method=True, function=True, inplace=None, dunders=(),
           alias=()):
    """Expose ``fn`` as ``ember.<name>`` and (``method=True``) ``Tensor.<name>``.

    ``inplace`` may be a function implementing ``Tensor.<name>_`` or True, for the generic
    in-place form: compute out of place, then write into self (see ``inplace_from``).
    ``dunders`` lists Tensor dunder names bound to the same function.
    """

    def deco(f):
        n = name or f.__name__
        # what users call consults __torch_function__ first; ember's own modules keep
        # calling ``f`` (NOTE [ __torch_function__ ] in ember/_overrides.py)
        w = wrap_public(f, n, numpy_names=True)
        _declared.append((n, function, method, inplace is not None, dunders, alias))
        if function:
            if n in functions:
                raise RuntimeError(f"public function {n!r} is declared twice")
            functions[n] = w
            for a in alias:
                functions[a] = w
        if method:
            setattr(Tensor, n, w)
            for a in alias:
                setattr(Tensor, a, w)
        for d in dunders:
            setattr(Tensor, d, w)
        if inplace is not None:
            ip = wrap_public(inplace_from(f, n) if inplace is True else inplace, n + "_")
            setattr(Tensor, n + "_", ip)
            for a in alias:
                setattr(Tensor, a + "_", ip)
        return f

    return deco if fn is None else deco(fn)


def out_overloads(accepts, refusal):
    """Declare that only some overloads of the decorated public function have an ``out=``
    form, as PyTorch's schemas say (``median(input)`` has none, ``median(input, dim)`` has
    one): a call that passes ``out=`` to an overload without one raises ``refusal(name)``,
    and the OpInfo table reads ``accepts`` to know which entries test ``out=``
    (``ember.testing._opinfo``).

    Args:
        accepts: ``accepts(**arguments) -> bool``, given the call's arguments by parameter
            name (defaults filled in): whether its overload has an ``out=`` form.
        refusal: ``refusal(name) -> Exception``: what PyTorch raises for such a call.

    Returns:
        A decorator, applied below ``@public``.

    Example::

        >>> @out_overloads(lambda dim, **_: dim is not None,
        ...                lambda name: TypeError(f"{name}(): no out= without dim"))
        ... def total(input, dim=None, *, out=None):
        ...     return input.sum() if dim is None else input.sum(dim, out=out)
        >>> total(ember.ones(2, 3), out=ember.empty(()))
        Traceback (most recent call last):
        TypeError: total(): no out= without dim
    """

    def deco(f):
        sig = inspect.signature(f)

        @functools.wraps(f)
        def checked(*args, **kwargs):
            if kwargs.get("out") is not None:
                bound = sig.bind(*args, **kwargs)
                bound.apply_defaults()
                if not accepts(**bound.arguments):
                    raise refusal(f.__name__)
            return f(*args, **kwargs)

        checked.__ember_out_accepts__ = accepts
        return checked

    return deco


def out_accepts(fn):
    """The ``accepts`` predicate ``fn`` was declared with by ``out_overloads`` (looked up
    through wrappers), or None when every overload of ``fn`` that takes ``out=`` has it."""
    seen = set()
    while fn is not None and id(fn) not in seen:
        seen.add(id(fn))
        accepts = getattr(fn, "__ember_out_accepts__", None)
        if accepts is not None:
            return accepts
        fn = getattr(fn, "__wrapped__", None)
    return None


def shown_as(name, op, body, overload="default"):
    """An entrance that runs ``body`` (one way of running the declared op ``op``) and shows
    dispatch modes and the profiler the call as ``aten.<name>.<overload>``: PyTorch's name
    for what it computes, where ember runs an op of another name (``t()`` runs ``transpose``,
    a reduction's gradient runs ``_expand_back`` where PyTorch runs ``expand``, a derivative
    formula divides by a number where PyTorch calls ``div.Scalar``). Modes get ``body``'s
    arguments and ``op`` as the handle's op, so transformations keyed by op (vmap, forward
    AD) treat the call as ``op``'s. See NOTE [ Dispatch ] in ember/_dispatch.py.

    Args:
        name: the name modes see (``"t"``); when another declared op has it, the handle
            gets a packet of its own so that op keeps the name's table entry.
        op (Op): the op ``body`` runs.
        body: ``body(*args, **kwargs)``, run below the modes.
        overload (str): the overload name modes see (``"default"``, ``"Scalar"``...).

    Returns:
        The entrance, ``call(*args, **kwargs)``; its OpOverload is ``call.handle``.

    Example::

        >>> t = shown_as("t", ops["transpose"], lambda x, dim0=0, dim1=1:
        ...              _dispatch.apply(ops["transpose"], (x,), {"dim0": dim0, "dim1": dim1}))
        >>> str(t.handle), tuple(t(ember.ones(2, 3)).shape)
        ('aten.t.default', (3, 2))
    """

    def call(*args, **kwargs):
        if _dispatch.intercept and _dispatch.state.modes:
            return _dispatch.through_modes(handle, args, kwargs)
        return body(*args, **kwargs)

    owner = ops.get(name)
    if owner is not None and owner is not op:
        packet = _dispatch.OpOverloadPacket("aten", name, op)
        handle = _dispatch.OpOverload(packet, overload, call, op)
    else:
        handle = _dispatch.overload("aten", name, overload, call, op)
    call.handle = handle
    return call


def profiler_session():
    """The profiler's recording session when one records on this thread with its layer on
    the mode stack (``_Session`` in ember/profiler/_recorder.py), else None -- without
    importing the profiler when nothing has. Callers test ``_dispatch.intercept`` first."""
    recorder = sys.modules.get("ember.profiler._recorder")
    return recorder.recording_session() if recorder is not None else None


def observing_profiler():
    """The profiler's recording session when it alone watches this thread's ops (every
    mode on the stack only observes), else None: a call that ember runs as several ops
    where PyTorch runs one may then be recorded as that one op (``_Session.as_one_op`` in
    ember/profiler/_recorder.py). Costs one global read when nothing intercepts."""
    if not _dispatch.intercept or not _dispatch.state.modes:
        return None
    recorder = sys.modules.get("ember.profiler._recorder")
    return recorder.observing_session() if recorder is not None else None


def recorded_as(event, params=None):
    """Show the profiler a call of the decorated function, which ember composes in Python
    from several ops where PyTorch calls one op, as that op's event (``aten::dropout``),
    with the ops the function runs nested under it (NOTE [ Composite op events ] in
    ember/profiler/_recorder.py). Dispatch modes still see only the ops it runs, as
    PyTorch's modes see a composite op's decomposition. With no profiler recording the
    call costs one function call and one global read more (so hot single ops do not use
    it: ``matmul`` opens its event where it hands the call to the modes).

    Args:
        event: the event's name (``"aten::dropout"``), or ``event(bound)`` giving it (or
            None: no event) from the call's arguments by parameter name, defaults filled.
        params: the decorated function's parameter names in the order of PyTorch's op's
            arguments, ``None`` for an argument the function lacks (a number to PyTorch);
            they make the event's input shapes. Default: the function's parameters. Or
            ``params(bound)`` giving them, where they depend on the call.

    Returns:
        The decorator.

    Example::

        >>> @recorded_as("aten::dropout", ("input", "p", "training"))
        ... def dropout(input, p=0.5, training=True, inplace=False):
        ...     return input * 1
        >>> dropout.__wrapped__.__name__
        'dropout'
    """

    def deco(fn):
        sig = inspect.signature(fn)
        names = tuple(sig.parameters)
        defaults = {k: p.default for k, p in sig.parameters.items()
                    if p.default is not p.empty}
        order = params if callable(params) else tuple(params) if params is not None else names
        named = callable(event)

        @functools.wraps(fn)
        def call(*args, **kwargs):
            if _dispatch.intercept and _dispatch.state.modes:
                session = profiler_session()
                if session is not None:
                    bound = dict(defaults)
                    bound.update(zip(names, args))
                    bound.update(kwargs)
                    name = event(bound) if named else event
                    if name is not None:
                        return session.composite(
                            name, lambda: tuple(None if k is None else bound.get(k) for k in (
                                order(bound) if callable(order) else order)), fn, args, kwargs)
            return fn(*args, **kwargs)

        return call

    return deco


def method(fn=None, *, name=None):
    """Expose ``fn`` only as a Tensor method."""
    return public(fn, name=name, function=False)


def inplace_from(fn, name):
    """The generic in-place form of an out-of-place op: ``self.<name>_(...)``."""
    from .._dispatch import commit_inplace_result, entrance

    @entrance(name + "_", inplace=True)
    def inplace(self, *args, **kwargs):
        return commit_inplace_result(name + "_", self, lambda: fn(self, *args, **kwargs))

    inplace.__name__ = name + "_"
    inplace.__qualname__ = "Tensor." + name + "_"
    inplace.__doc__ = f"In-place version of :meth:`Tensor.{name}`."
    return inplace


def _signature(f):
    try:
        return str(inspect.signature(f)) if f is not None else ""
    except (TypeError, ValueError):
        return ""


def list_ops():
    """Every registered op -- name, public signature, backends with kernels, differentiable --
    then every public function composed from them (backends ``["composite"]``: they run
    wherever their parts do, and are differentiable through them).

    Returns:
        list of dict: one ``{"name", "signature", "backends", "differentiable"}`` row each,
        ops first (sorted by name), then the composites.

    Example:
        >>> row = next(r for r in ember.list_ops() if r["name"] == "mul")
        >>> row["signature"], row["differentiable"]
        ('(input, other, *, out=None)', True)
    """
    rows = []
    for n, op in sorted(ops.items()):
        f = functions.get(n) or getattr(Tensor, n, None)
        rows.append({"name": n, "signature": _signature(f), "backends": op.backends(),
                     "differentiable": op.differentiable})
    for n, f in sorted(functions.items()):
        if n not in ops:
            rows.append({"name": n, "signature": _signature(f), "backends": ["composite"],
                         "differentiable": True})
    return rows


def document_all():
    """Complete the docstring of every public op from its declaration, once every family is
    loaded (NOTE [ Generated docstrings ] in ember/_ops/_docs.py): the functions, methods,
    in-place forms -- declared with ``public`` or set on Tensor beside it -- and aliases."""
    for n, function, method_, has_inplace, dunders, alias in _declared:
        op = ops.get(n)
        forms = []
        if function and method_:
            forms.append(f"``ember.{n}`` and the method ``Tensor.{n}``")
        inplace = getattr(Tensor, n + "_", None) if method_ or has_inplace else None
        if inplace is not None:
            forms.append(f"in place ``Tensor.{n}_``")
        forms += [f"the operator ``{d}``" for d in dunders]
        forms += [f"the alias ``{a}``" for a in alias]
        obj = functions.get(n) if function else getattr(Tensor, n, None)
        if obj is not None:
            doc = _docs.complete_all(obj, n if function else "Tensor." + n, op=op,
                                     kind="function" if function else "method", forms=forms)
            meth = getattr(Tensor, n, None)
            if meth is not None and meth is not obj and \
                    getattr(meth, "__wrapped__", None) is getattr(obj, "__wrapped__", obj):
                meth.__doc__ = doc  # a second wrapper of the same function (the method)
        if inplace is not None:
            _docs.complete_all(inplace, "Tensor." + n + "_", op=ops.get(n + "_") or op,
                               kind="inplace", base=n)
    # the other Tensor methods and the namespace functions (ember.linalg.*) with an example
    # in the table: their signature and example complete them the same way
    for key, entry in _docs.examples().items():
        if key.startswith("Tensor."):
            n = key[len("Tensor."):]
            static = inspect.getattr_static(Tensor, n, None)
            if isinstance(static, property):
                _docs.complete_property(static, key)
                continue
            obj = getattr(Tensor, n, None)
            base = n[:-1] if n.endswith("_") and hasattr(Tensor, n[:-1]) else None
            kind = "inplace" if base else "method"
        elif len(entry) > 2:  # a namespace function: (kind, text, "module:name")
            module, _, attr = entry[2].partition(":")
            obj = getattr(sys.modules.get(module), attr, None)
            base, kind = None, "function"
        else:
            continue
        if obj is not None:
            raw = getattr(obj, "__name__", "")
            _docs.complete_all(obj, key, op=ops.get(raw), kind=kind, base=base,
                               declared=False)
    from .._overrides import _wrapped

    _docs.sync_wrappers(_wrapped)
