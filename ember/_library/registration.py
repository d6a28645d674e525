"""``Library`` and the registration plumbing shared by ``ember.library``'s functions.

torch names where a kernel goes by dispatch key (``"CPU"``, ``"Autograd"``,
``"CompositeImplicitAutograd"``, ...) or by device type (``"cpu"``, ``"default"``); both
become a (slot, key) of the op's registrations (NOTE [ Custom ops ] in custom_ops.py).
A ``Library`` remembers how to undo what it registered, and does so when it goes away.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from .. import _dispatch
from .._core.device import device
from .._ops._registry import ops
from . import schema as _schema
from .custom_ops import AUTOGRAD, COMPOSITE, KERNEL, LibraryOp, fallthrough_kernel

# ------------------------------------------------------------------------------------------------
# names, dispatch keys and device types

#: torch's dispatch keys that ember models, and the registration slot each one fills
KEYS = {
    "CPU": (KERNEL, "cpu"), "CUDA": (KERNEL, "cuda"), "Meta": (KERNEL, "meta"),
    "CompositeExplicitAutograd": (KERNEL, None),
    "CompositeExplicitAutogradNonFunctional": (KERNEL, None),
    "CompositeImplicitAutograd": (COMPOSITE, None),
    "Autograd": (AUTOGRAD, None), "AutogradCPU": (AUTOGRAD, "cpu"),
    "AutogradCUDA": (AUTOGRAD, "cuda"), "AutogradMeta": (AUTOGRAD, "meta"),
}
#: torch's dispatch keys ember has no counterpart for
OTHER_KEYS = {"Python", "PythonTLSSnapshot", "PythonDispatcher", "PreDispatch",
               "Functionalize", "ADInplaceOrView", "BackendSelect", "AutocastCPU",
               "AutocastCUDA", "FuncTorchBatched", "Batched", "PrivateUse1", "XLA", "MPS",
               "XPU", "HIP", "Lazy", "SparseCPU", "SparseCUDA", "QuantizedCPU",
               "AutogradPrivateUse1", "AutogradXLA", "AutogradMPS", "AutogradXPU"}


def split_qualname(qualname, where="ember.library"):
    """``("ns", "name")`` of ``"ns::name"`` (the name may carry ``.overload``)."""
    if not isinstance(qualname, str) or qualname.count("::") != 1:
        raise ValueError(
            f'Expected `qualname` to be of the form "namespace::name", but got {qualname}. '
            f"The qualname passed to the {where} APIs must consist of a namespace and a "
            "name, e.g. mylib::mysin")
    ns, name = qualname.split("::")
    if not ns.isidentifier() or not all(p.isidentifier() for p in name.split(".", 1)):
        raise ValueError(f"{where}: {qualname!r} is not a valid operator name; use "
                         "'namespace::name' with Python identifiers, e.g. 'mylib::mysin'")
    return ns, name


def own_namespace(ns, where):
    if ns in ("aten", "prim"):
        raise ValueError(f"{where}: the namespace '{ns}' holds ember's own ops; define custom "
                         "ops in a namespace of your own (your project's name, e.g. 'mylib')")


#: autocast keys: a kernel there runs in place of the op while autocast is on for its device
#: type, with autocast suspended (ember.amp.autocast_mode); torchvision registers them
AUTOCAST_KEYS = {"AutocastCPU": "cpu", "AutocastCUDA": "cuda", "AutocastXPU": "xpu",
                 "AutocastMPS": "mps"}


def slot_for_key(key, where):
    """The registration (slot, key) of one of torch's dispatch keys."""
    if key in KEYS:
        return KEYS[key]
    if key in AUTOCAST_KEYS:
        from .custom_ops import AUTOCAST

        return (AUTOCAST, AUTOCAST_KEYS[key])
    if key in _dispatch.backends_by_name:  # an out-of-tree device named as itself
        return (KERNEL, key)
    if key in OTHER_KEYS:
        raise NotImplementedError(
            f"{where}: ember has no dispatch key '{key}'; register kernels for 'CPU', 'CUDA', "
            "'Meta', 'CompositeExplicitAutograd', 'CompositeImplicitAutograd' or 'Autograd'")
    raise RuntimeError(f"could not parse dispatch key: {key}")


def slot_for_device_type(device_type):
    """The registration (slot, key) of a device type; None or "default": every device."""
    if device_type is None or device_type == "default":
        return (KERNEL, None)
    if not isinstance(device_type, str):
        raise TypeError(f"expected a device type such as 'cpu' or 'cuda', got "
                        f"{type(device_type).__name__}")
    return (KERNEL, device(device_type).type)  # raises for an unknown device type


def device_types_of(device_types):
    if device_types is None or isinstance(device_types, str):
        return [device_types]
    return list(device_types)


def lookup(op, where) -> LibraryOp:
    """The custom op named by ``op``: a CustomOpDef, an OpOverload(Packet) or a qualname."""
    inner = getattr(op, "_op", None)  # a CustomOpDef
    if isinstance(inner, LibraryOp):
        return inner
    if isinstance(op, _dispatch.OpOverloadPacket):
        op = op._overloads.get("default") or next(iter(op._overloads.values()), None)
    if isinstance(op, _dispatch.OpOverload):
        if isinstance(op.op, LibraryOp):
            return op.op
        raise NotImplementedError(
            f"{where}: {op} is one of ember's own ops; its kernels are array kernels, "
            "registered with ember.library.impl(op_name, device_type)")
    if isinstance(op, str):
        ns, name = split_qualname(op, where)
        if ns == "aten":
            raise NotImplementedError(
                f"{where}: {op} is one of ember's own ops; its kernels are array kernels, "
                "registered with ember.library.impl(op_name, device_type)")
        if name.endswith(".default"):
            name = name[:-len(".default")]
        found = ops.get(f"{ns}::{name}")
        if isinstance(found, LibraryOp):
            return found
        raise RuntimeError(f"operator {op} does not exist")
    raise TypeError(f"{where}: expected an operator (a CustomOpDef, an OpOverload or a "
                    f"'namespace::name' string), got {type(op).__name__}")


#: NOTE [ Overriding a built-in kernel ]
#: ``Library("aten", "IMPL").impl("mul.Tensor", fn, "CPU")`` replaces the CPU kernel of
#: ember's op ``mul`` for as long as the Library lives, as torch replaces the kernel of one
#: overload at one backend key. ember has one op where torch has several overloads
#: (``mul.Tensor``, ``mul.Scalar``), so the kernel serves all of them. What stays above the
#: kernel stays: argument preparation (an element-wise op's kernel gets its operands
#: promoted to one dtype), the mode stack and the op's derivative formula, so the result is
#: differentiable as before. ``fn`` receives Tensors that do not require grad, and the op's
#: static parameters (``dim``, ``keepdim``...) by keyword, runs with grad mode off, and
#: returns a Tensor or a tuple of them.
_BACKEND_KEYS = {"CPU": "cpu", "CUDA": "cuda", "Meta": "meta"}


def builtin_target(op_name, ns):
    """ember's own op that ``op_name`` (given to a Library of namespace ``ns``) names, or
    None for a custom op. ``"mul.Tensor"`` in the aten namespace names ``mul``."""
    if isinstance(op_name, _dispatch.OpOverloadPacket):
        op = op_name.op
        if op is None:
            op_name = op_name._overloads.get("default") or next(
                iter(op_name._overloads.values()), None)
        else:
            return None if isinstance(op, LibraryOp) else op
    if isinstance(op_name, _dispatch.OpOverload):
        op = op_name.op
        if op is None and op_name.namespace == "aten":
            op = ops.get(op_name.overloadpacket.__name__)
        return None if op is None or isinstance(op, LibraryOp) else op
    if not isinstance(op_name, str):
        return None
    if "::" in op_name:
        ns, op_name = op_name.split("::", 1)
    if ns != "aten":
        return None
    base = op_name.split(".", 1)[0]
    op = ops.get(base)
    if op is None or isinstance(op, LibraryOp):
        raise NotImplementedError(
            f"Library.impl: aten::{op_name}: ember has no op of that name whose kernel can "
            "be replaced (see ember.list_ops())")
    return op


def tensor_kernel(fn):
    """An array kernel ``(*arrays, **params) -> arrays`` running ``fn``, a kernel written
    on Tensors (NOTE [ Overriding a built-in kernel ])."""
    from .._core.tensor import Tensor, wrap
    from ..autograd.grad_mode import no_grad

    def unwrap(r):
        if isinstance(r, Tensor):
            return r._data
        if isinstance(r, (tuple, list)):
            return tuple(unwrap(x) for x in r)
        return r

    def kernel(*arrays, **params):
        args = [a if a is None or isinstance(a, (int, float, complex, bool)) else wrap(a)
                for a in arrays]
        with no_grad():
            return unwrap(fn(*args, **params))

    kernel.__wrapped__ = fn
    return kernel


def register(op, slot, key, fn, lib):
    token = op.register(slot, key, fn)
    if lib is not None:
        lib._undo.append(lambda: op.deregister(slot, key, token))
    return fn


# ------------------------------------------------------------------------------------------------
# Library


#: namespaces with a live Library(..., "DEF")
_def_namespaces: set = set()
#: the FRAGMENT libraries that define() and friends use when given no lib= (kept forever)
_keep_alive: dict = {}


class Library:
    """A set of operator definitions and kernels in one namespace (torch's ``Library``).

    ``kind`` is ``"DEF"`` (defines the namespace's operators; one per namespace),
    ``"FRAGMENT"`` (defines more of them, any number) or ``"IMPL"`` (only registers kernels).
    Everything registered through a Library lasts as long as it does: when it is garbage
    collected (or ``_destroy()`` is called) its operators and kernels are removed again.

    Args:
        ns: the namespace, e.g. ``"mylib"``.
        kind: ``"DEF"``, ``"FRAGMENT"`` or ``"IMPL"``.
        dispatch_key: the default dispatch key of ``impl`` (default: ``""``, meaning
            CompositeImplicitAutograd).

    Example::

        >>> lib = ember.library.Library("doc_lib", "DEF")
        >>> lib.define("twice(Tensor x) -> Tensor")
        'twice'
        >>> lib.impl("twice", lambda x: x * 2, "CPU")
        >>> ember.ops.doc_lib.twice(ember.ones(2))
        tensor([2., 2.])
        >>> lib._destroy()
    """

    def __init__(self, ns: str, kind: str, dispatch_key: str = ""):
        if kind not in ("IMPL", "DEF", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind}")
        if not isinstance(ns, str) or not ns.isidentifier():
            raise ValueError(f"Library: the namespace must be an identifier, got {ns!r}")
        if kind != "IMPL":
            own_namespace(ns, "Library")
        if kind == "DEF" and ns in _def_namespaces:
            raise RuntimeError(
                f"Only a single Library(..., 'DEF') can be used to register the namespace {ns}; "
                "please put all of your definitions in a single Library. If you were trying "
                "to specify implementations, consider using kind 'IMPL' (which can be "
                "duplicated). If you really intended to define operators for a single "
                "namespace in a distributed way, you can use kind 'FRAGMENT' to explicitly "
                "indicate this.")
        if dispatch_key:
            slot_for_key(dispatch_key, "Library")
        self.ns = ns
        self.kind = kind
        self.dispatch_key = dispatch_key
        self._undo = []
        self._destroyed = False
        if kind == "DEF":
            _def_namespaces.add(ns)
            self._undo.append(lambda: _def_namespaces.discard(ns))

    def __repr__(self):
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})"

    def _check_alive(self):
        if self._destroyed:
            raise RuntimeError(f"{self!r} was destroyed; make a new Library")

    def define(self, schema: str, alias_analysis: str = "", *, tags=()) -> str:
        """Define an operator of this namespace from a schema string (NOTE [ Schemas ]).

        Args:
            schema: ``"name(Tensor x, *, float alpha=1.0) -> Tensor"``; ``Tensor(a!)``
                marks an argument the op writes to, ``name.overload(...)`` an overload.
            alias_analysis: accepted for compatibility (ember reads aliasing from the
                schema).
            tags: accepted for compatibility.

        Returns:
            The operator's name (without the overload name).

        Example::

            >>> lib = ember.library.Library("doc_define", "FRAGMENT")
            >>> lib.define("myadd(Tensor a, Tensor b, *, float alpha=1.0) -> Tensor")
            'myadd'
            >>> lib._destroy()
        """
        self._check_alive()
        s = _schema.parse_schema(schema)
        name = s.name
        if "::" in name:
            ns, name = name.split("::")
            if ns != self.ns:
                raise ValueError(f"define: {s.name} is not in this Library's namespace "
                                 f"'{self.ns}'")
        if self.kind == "IMPL":
            raise RuntimeError(
                f'def("{name}"): Cannot define an operator inside of a Library(..., "IMPL"). '
                "All definitions should be placed in the Library(..., 'DEF') of their "
                "namespace, or in a Library(..., 'FRAGMENT').")
        qualname = f"{self.ns}::{name}" + (f".{s.overload_name}" if s.overload_name else "")
        if qualname in ops:
            raise RuntimeError(
                f"Tried to register an operator ({self.ns}::{schema}) with the same name and "
                "overload name multiple times. Each overload's schema should only be "
                "registered with a single call to def().")
        op = LibraryOp(qualname, s)
        self._undo.append(op.destroy)
        return name

    def impl(self, op_name, fn: Callable, dispatch_key: str = "", *, with_keyset=False,
             allow_override=True) -> None:
        """Register ``fn`` as an operator's kernel at a dispatch key.

        Args:
            op_name: the operator's name in this namespace (``"myadd"``, ``"myadd.out"``)
                or its OpOverload.
            fn: the kernel; it takes the operator's arguments, Tensors included, and
                returns its results. ``fallthrough_kernel`` at ``"Autograd"`` makes the
                op non-differentiable.
            dispatch_key: ``"CPU"``, ``"CUDA"``, ``"Meta"``, ``"CompositeExplicitAutograd"``
                (every device type), ``"CompositeImplicitAutograd"`` (a body of other ops,
                differentiable through them), ``"Autograd"`` (a kernel that does its own
                autograd, e.g. with an ``autograd.Function``); ``""``: the Library's
                dispatch key, else CompositeImplicitAutograd.
            with_keyset: not supported (ember has no dispatch key sets).
            allow_override: False to refuse replacing a kernel registered before.

        Example::

            >>> lib = ember.library.Library("doc_impl", "DEF")
            >>> lib.define("double(Tensor x) -> Tensor")
            'double'
            >>> lib.impl("double", lambda x: x + x, "CompositeImplicitAutograd")
            >>> ember.ops.doc_impl.double(ember.tensor([1.0, 2.0]))
            tensor([2., 4.])
            >>> lib._destroy()
        """
        self._check_alive()
        if with_keyset:
            raise NotImplementedError("Library.impl: with_keyset=True is not supported "
                                      "(ember has no dispatch key sets)")
        if not callable(fn):
            raise TypeError(f"Input function is required to be a callable but found type "
                            f"{type(fn)}")
        builtin = builtin_target(op_name, self.ns)
        if builtin is not None:
            return self._impl_builtin(builtin, fn, dispatch_key or self.dispatch_key)
        if isinstance(op_name, (_dispatch.OpOverload, _dispatch.OpOverloadPacket)):
            op = lookup(op_name, "Library.impl")
        else:
            name = op_name if "::" in op_name else f"{self.ns}::{op_name}"
            op = lookup(name, "Library.impl")
        key = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        slot, k = slot_for_key(key, "Library.impl")
        if fn is fallthrough_kernel and slot != AUTOGRAD:
            raise NotImplementedError(
                "Library.impl: ember supports fallthrough_kernel at the Autograd key only")
        if not allow_override and op.active(slot, k) is not None:
            raise RuntimeError(
                "This is not allowed since there's already a kernel registered from python "
                f"overriding {op.name}'s behavior for {key} dispatch key and {self.ns} "
                "namespace.")
        register(op, slot, k, fn, self)

    def _impl_builtin(self, op, fn, key):
        """Replace the kernel of ember's own op ``op`` at a backend key (``"CPU"``,
        ``"CUDA"``, ``"Meta"``) by ``fn``, a kernel on Tensors, until this Library goes
        away (NOTE [ Overriding a built-in kernel ])."""
        device_type = _BACKEND_KEYS.get(key)
        if device_type is None:
            raise NotImplementedError(
                f"Library.impl: ember replaces its own ops' kernels at a backend key ('CPU', "
                f"'CUDA', 'Meta'), not at '{key or 'CompositeImplicitAutograd'}' "
                f"({op.name} keeps its derivative formula and modes above the kernel)")
        before = op.overrides.get(device_type)
        op.register_kernel(device_type, tensor_kernel(fn))

        def undo():
            if before is None:
                op.overrides.pop(device_type, None)
                if device_type == "cpu":
                    op.builtin_cpu = True
            else:
                op.overrides[device_type] = before
            op.impl.clear()
            getattr(op, "direct_cpu", {}).clear()  # NOTE [ Direct CPU kernels ]

        self._undo.append(undo)

    def fallback(self, fn, dispatch_key="", *, with_keyset=False):
        """Not supported: ember's counterpart of a dispatch-key fallback is a dispatch mode
        (``TorchDispatchMode``), which sees every op call.

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError(
            "Library.fallback: ember has no dispatch-key fallbacks; to see every op call, "
            "push a TorchDispatchMode (ember.utils._python_dispatch)")

    def _destroy(self):
        """Remove everything this Library registered (runs when it is garbage collected)."""
        if self._destroyed:
            return
        self._destroyed = True
        undo, self._undo = self._undo, []
        for fn in reversed(undo):
            fn()

    def __del__(self):
        try:
            self._destroy()
        except Exception:  # interpreter shutdown: the registry may already be gone
            pass


@contextlib.contextmanager
def scoped_library(ns, kind, dispatch_key=""):
    """A Library destroyed when the ``with`` block ends (torch's test helper)."""
    lib = Library(ns, kind, dispatch_key)
    try:
        yield lib
    finally:
        lib._destroy()


def library_for(qualname, lib):
    ns, _ = split_qualname(qualname)
    if lib is not None:
        return lib
    lib = _keep_alive.get(ns)
    if lib is None:
        lib = _keep_alive[ns] = Library(ns, "FRAGMENT")
    return lib


def is_dispatch_key(name) -> bool:
    """True for one of torch's dispatch key names (``"CPU"``, ``"Autograd"``, ...), as
    opposed to a device type (``"cpu"``)."""
    return name in KEYS or name in OTHER_KEYS
