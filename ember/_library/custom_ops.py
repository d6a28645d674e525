"""``LibraryOp``: a custom operator as an op of ember's registry, and its way through the door.

NOTE [ Custom ops ]
An operator defined through ``ember.library`` (``custom_op`` or ``Library.define``) is a
``LibraryOp``, a subclass of the registry's ``Op``: it is listed in ``ops`` under its
qualified name ``ns::name`` beside every built-in op, and its ``OpOverloadPacket`` sits in
``_dispatch.packets[ns]``, so ``ember.ops.<ns>.<name>`` (and ``.default``) finds it.

Its kernels take and return Tensors, where ember's own kernels take arrays. The boundary is
an adapter registered in the Op's kernel table per device type -- ``Op.register_kernel(
device_type, adapter)``, or ``Op.kernel`` for a kernel valid on every device type (torch's
CompositeExplicitAutograd) -- so ``Op.resolve`` picks a custom op's kernel exactly as it
picks a built-in one, and a device type without one raises NotImplementedError naming the op
and the device. ``adapter(*arrays, call=frame)`` wraps the arrays as Tensors, puts them back
into the call's arguments (``_Frame``), runs the Tensor-level kernel, checks its results
against the schema and returns ``(results, written)``: the results with arrays for tensors,
and the final arrays of the arguments the schema marks as written. The meta device's kernel
is the op's fake rule (``register_fake``), registered the same way under ``"meta"``.

A call of the op's handle (``ember.ops.ns.name.default``, also what ``CustomOpDef.__call__``
runs) goes:

1. bind the arguments to the schema (NOTE [ Schemas ]: defaults, checks, conversions);
2. a CompositeImplicitAutograd kernel, where no kernel is registered for the inputs' device
   type, runs in place of the op -- before the door, so modes see the ops it is made of;
3. the door: with a mode pushed, the innermost mode gets ``(handle, args, kwargs)`` in
   torch's normalised form (a rule from ``register_torch_dispatch`` for that mode's class
   runs instead of the mode's ``__torch_dispatch__``); below the last mode:
4. autograd, when grad mode is on and an input requires grad, by what the Autograd key holds:
   a kernel of the user's (typically an ``autograd.Function``) runs instead of the op; the
   formula from ``register_autograd`` (a ``Formula``), or nothing, makes the op run inside a
   generated ``autograd.Function`` whose backward is that formula (without one, backward
   raises torch's "no autograd formula was registered" error); ``fallthrough_kernel`` runs
   the op's Tensor-level kernel on the caller's tensors, so the ops inside it record;
5. the backend: the kernel for the array type of the first tensor runs; arguments the schema
   marks as written get their version counters bumped; results are wrapped, and a result the
   schema declares as an alias of an input (``Tensor(a!)``) is that input itself.

Registrations are stacks per (slot, key): the latest wins, and removing one (a ``Library``
being destroyed) uncovers the one below, as in torch's dispatcher.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np

from .. import _dispatch
from .._core.storage import _root
from .._core.tensor import Tensor, wrap
from .._ops._registry import Op, ops
from .schema import FunctionSchema, _Mismatch, convert

_state = _dispatch.state

# registration slots (NOTE [ Custom ops ]); keys are device types, None for "every device"
KERNEL = "kernel"  # the op's kernel (CPU, CUDA, Meta, CompositeExplicitAutograd)
COMPOSITE = "composite"  # CompositeImplicitAutograd: a body of other ops
AUTOGRAD = "autograd"  # an Autograd-key kernel (does its own autograd) or a Formula
RULE = "rule"  # register_torch_dispatch: key is the mode class
AUTOCAST = "autocast"  # register_autocast: key is the device type, value the dtype

_tokens = itertools.count()


def fallthrough_kernel():
    """A marker kernel: registered at the Autograd key, the op has no autograd layer of its
    own -- its kernel runs on the caller's tensors and the ember ops inside it record as they
    would anywhere (torch's fallthrough). It is never called.

    Example::

        >>> lib = ember.library.Library("doc_fallthrough", "DEF")
        >>> lib.define("twice(Tensor x) -> Tensor")
        'twice'
        >>> lib.impl("twice", lambda x: x * 2, "CPU")
        >>> lib.impl("twice", ember.library.fallthrough_kernel, "Autograd")
        >>> ember.ops.doc_fallthrough.twice(ember.ones(1, requires_grad=True)).grad_fn.name()
        'MulBackward0'
        >>> lib._destroy()
    """
    raise NotImplementedError("fallthrough_kernel() should never be called.")


class _Frame:
    """One call's arguments with its tensors taken out, to be put back around the arrays a
    kernel receives (NOTE [ Custom ops ])."""

    __slots__ = ("schema", "values", "slots", "written")

    def __init__(self, schema, values, slots, written):
        self.schema = schema
        self.values = values  # bound values, None where a tensor was taken out
        self.slots = slots  # per tensor: (argument index, list index or -1)
        self.written = written  # indices (into the tensors) of the arguments written to

    def rebuild(self, tensors):
        """``(positional args, keyword-only args)`` with ``tensors`` put back."""
        values = [list(v) if isinstance(v, list) else v for v in self.values]
        for (i, j), t in zip(self.slots, tensors):
            if j < 0:
                values[i] = t
            else:
                values[i][j] = t
        return self.schema.split(values)


def _frame(schema, values):
    """Take the tensors out of bound ``values``: ``(frame, tensors)``."""
    slots, tensors, written = [], [], []
    vals = list(values)
    for i, (a, v) in enumerate(zip(schema.arguments, values)):
        t = a.type
        if t.base != "Tensor" or v is None:
            continue
        if t.is_list:
            vals[i] = list(v)
            for j, e in enumerate(v):
                if e is None:
                    continue
                if t.is_write:
                    written.append(len(tensors))
                slots.append((i, j))
                tensors.append(e)
                vals[i][j] = None
        else:
            if t.is_write:
                written.append(len(tensors))
            slots.append((i, -1))
            tensors.append(v)
            vals[i] = None
    return _Frame(schema, vals, slots, written), tensors


class Formula:
    """What ``register_autograd`` registers at the Autograd key: the op runs inside a
    generated ``autograd.Function`` with this ``backward`` and ``setup_context``.

    Args:
        backward: ``backward(ctx, *grads)``, the gradients of the op's inputs.
        setup_context: ``setup_context(ctx, inputs, output)`` saving what backward needs,
            or None.

    Example:
        >>> import ember
        >>> from ember import library
        >>> @library.custom_op("docformula::twice", mutates_args=())
        ... def twice(x: ember.Tensor) -> ember.Tensor:
        ...     return x * 2
        >>> twice.register_autograd(lambda ctx, grad: grad * 2)
        >>> rule = library.ops["docformula::twice"].active(library.AUTOGRAD)
        >>> isinstance(rule, library.Formula)
        True
    """

    __slots__ = ("backward", "setup_context")

    def __init__(self, backward, setup_context):
        self.backward = backward
        self.setup_context = setup_context


class _CallInfo:
    """Rides along the tensors through ``Function.apply``: how to rebuild the call."""

    __slots__ = ("pos", "kw", "out_lens", "formula")

    def __init__(self, pos, kw, formula):
        self.pos = pos
        self.kw = kw
        self.formula = formula
        self.out_lens = None


class LibraryPacket(_dispatch.OpOverloadPacket):
    """``ember.ops.<ns>.<name>`` of a custom op: its overloads by name, and a call that
    picks the overload whose schema takes the arguments."""

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(f"The underlying op of '{self._ns}.{self.__name__}' has no "
                             f"overload name '{name}'")

    def __call__(self, *args, **kwargs):
        overloads = self._overloads
        if len(overloads) == 1:
            return next(iter(overloads.values()))(*args, **kwargs)
        order = sorted(overloads.values(), key=lambda o: o._overloadname != "default")
        for o in order:
            try:
                o.op.schema.bind(o.op.name, args, kwargs)
            except RuntimeError:
                continue
            return o(*args, **kwargs)
        return order[0](*args, **kwargs)  # raises the default overload's binding error

    def _remove(self, overload_name):
        self._overloads.pop(overload_name, None)
        self.__dict__.pop(overload_name, None)


class LibraryOverload(_dispatch.OpOverload):
    """``ember.ops.<ns>.<name>.<overload>`` of a custom op; ``_schema`` is its schema."""

    __slots__ = ("_schema",)


class LibraryOp(Op):
    """A custom operator in the registry: its schema, and its kernels and rules by slot.

    See NOTE [ Custom ops ]. ``library.define`` and ``library.custom_op`` make them; they are
    found in ``ember.library.ops`` by qualified name.

    Args:
        qualname: ``ns::name`` or ``ns::name.overload``.
        schema: the parsed schema (``FunctionSchema``) of its arguments and results.
        from_custom_op: whether ``custom_op`` made it (torch's messages differ).

    Raises:
        RuntimeError: when ``qualname`` is declared already, or names one of ember's own ops.

    Example:
        >>> import ember
        >>> from ember import library
        >>> @library.custom_op("doclibop::twice", mutates_args=())
        ... def twice(x: ember.Tensor) -> ember.Tensor:
        ...     return x * 2
        >>> op = library.ops["doclibop::twice"]
        >>> isinstance(op, library.LibraryOp), op.name
        (True, 'doclibop::twice')
    """

    is_builtin = False  # its kernels replace no specialisation (NOTE [ Hot path ])

    def __init__(self, qualname: str, schema: FunctionSchema, *, from_custom_op=False):
        if qualname in ops:
            raise RuntimeError(f"op {qualname!r} is declared twice")
        ns, rest = qualname.split("::", 1)
        opname, _, overload_name = rest.partition(".")
        table = _dispatch.packets.setdefault(ns, {})
        packet = table.get(opname)
        if packet is not None and not isinstance(packet, LibraryPacket):
            raise RuntimeError(f"ember.library: '{ns}::{opname}' is one of ember's own ops")
        # Op wants a kernel to exist; a custom op starts with none (kernels come per device
        # type), so the placeholder is dropped at once
        super().__init__(qualname, kernel=_no_kernel, differentiable=False)
        self.kernel = None
        self.saves_all_varargs = False
        self.namespace = ns
        self.opname = opname
        self.overload_name = overload_name or "default"
        self.schema = schema.with_name(f"{ns}::{opname}", overload_name)
        self.from_custom_op = from_custom_op
        self.disabled = set()  # device types whose kernel set_kernel_enabled turned off
        self.destroyed = False
        self._regs = {}
        self._slot_set = set()
        self._function = None
        self._has_alias_return = any(r.type.alias_set for r in self.schema.returns)
        if packet is None:
            packet = table[opname] = LibraryPacket(ns, opname)
        handle = LibraryOverload(packet, self.overload_name, self._entrance(), self)
        handle.below = self._below()
        handle._schema = self.schema
        handle.is_inplace = self.schema.is_mutable
        self.handle = handle
        self._handles = [handle, None]

    def describe(self) -> str:
        """How torch's messages name the op."""
        return f"<CustomOpDef({self.name})>" if self.from_custom_op else self.name

    # -- registrations ------------------------------------------------------------------------

    def register(self, slot, key, value):
        """Put ``value`` on top of the (slot, key) stack; returns a token for ``deregister``."""
        token = next(_tokens)
        self._regs.setdefault((slot, key), []).append((token, value))
        self._sync()
        return token

    def deregister(self, slot, key, token):
        """Remove one registration; the one below it (if any) becomes active again."""
        stack = self._regs.get((slot, key), [])
        self._regs[(slot, key)] = [e for e in stack if e[0] != token]
        if not self._regs[(slot, key)]:
            del self._regs[(slot, key)]
        self._sync()

    def active(self, slot, key=None):
        """The registration in force for (slot, key), or None."""
        stack = self._regs.get((slot, key))
        return stack[-1][1] if stack else None

    def kernel_for(self, device_type):
        """The Tensor-level kernel that runs on ``device_type`` (None if none)."""
        if device_type not in self.disabled:
            fn = self.active(KERNEL, device_type)
            if fn is not None:
                return fn
        return self.active(KERNEL, None) if device_type != "meta" else None

    def _sync(self):
        """Rebuild the Op's kernel table from the registrations (NOTE [ Custom ops ])."""
        self.overrides.clear()
        for (slot, key), stack in self._regs.items():
            if slot == KERNEL and key is not None and key not in self.disabled:
                Op.register_kernel(self, key, self._adapter(stack[-1][1], key != "meta"))
        default = self.active(KERNEL, None)
        if default is None:
            self.kernel = None
        else:
            adapter = self._adapter(default, True)

            def kernel(xp, *arrays, call):
                return adapter(*arrays, call=call)

            kernel.tensor_fn = default
            self.kernel = kernel
        self.impl.clear()
        self._slot_set = {slot for slot, _ in self._regs}
        self.differentiable = any(
            (slot == AUTOGRAD and stack[-1][1] is not fallthrough_kernel) or slot == COMPOSITE
            for (slot, _), stack in self._regs.items())

    def _adapter(self, fn, check_alias):
        """The array-level kernel around the Tensor-level ``fn`` (NOTE [ Custom ops ])."""
        op = self

        def adapter(*arrays, call):
            tensors = [wrap(a) for a in arrays]
            args, kwargs = call.rebuild(tensors)
            out = fn(*args, **kwargs)
            results = op._unwrap_results(out, arrays if check_alias else None)
            return results, tuple(tensors[k]._data for k in call.written)

        adapter.tensor_fn = fn
        return adapter

    # -- the entrance -------------------------------------------------------------------------

    def _entrance(self):
        op = self

        def run(*args, **kwargs):
            if op.destroyed:
                raise RuntimeError(f"{op.name}: this operator no longer exists (the Library "
                                   "that defined it was destroyed)")
            values = op.schema.bind(op.name, args, kwargs)
            if COMPOSITE in op._slot_set and op._decomposes(values):
                pos, kw = op.schema.split(values)
                return op.active(COMPOSITE)(*pos, **kw)
            if _dispatch.intercept and _state.modes:
                cargs, ckwargs = op.schema.call_form(values)
                return op._through_modes(cargs, ckwargs)
            return op.call(values)

        run.__name__ = self.opname
        run.__qualname__ = self.opname
        return run

    def _below(self):
        """The op's call below every mode (``OpOverload.below``): its kernels are Python, so
        the profiler runs this with its recorder on the stack, and the ops a kernel calls
        are recorded as the op's children (NOTE [ Profiler recording ] in
        ember/profiler/_recorder.py)."""
        op = self

        def below(*args, **kwargs):
            return op.call(op.schema.bind(op.name, args, kwargs))

        return below

    def _decomposes(self, values):
        """True when the CompositeImplicitAutograd kernel stands in for the op: no kernel is
        registered for the inputs' device type."""
        return self.kernel_for(self.device_type(values)) is None

    def _through_modes(self, args, kwargs):
        if RULE in self._slot_set:
            modes = _state.modes
            mode = modes[-1]
            for cls in type(mode).__mro__:
                rule = self.active(RULE, cls)
                if rule is not None:
                    _state.modes = modes[:-1]
                    try:
                        return rule(mode, self.handle, _tensor_types(args, kwargs), args,
                                    kwargs)
                    finally:
                        _state.modes = modes
        return _dispatch.through_modes(self.handle, args, kwargs)

    def call(self, values):
        """Run the op below the modes: autograd if needed, then the backend."""
        if _dispatch.record is not None and _state.grad_enabled and _requires_grad(values):
            device_type = self.device_type(values)
            ak = self.active(AUTOGRAD, device_type) or self.active(AUTOGRAD, None)
            if ak is fallthrough_kernel:
                return self._fall_through(values, device_type)
            if ak is not None and not isinstance(ak, Formula):
                pos, kw = self.schema.split(values)
                return ak(*pos, **kw)
            if not (self.schema.is_mutable and self._has_alias_return):
                return self._autograd_apply(values, ak)
        return self.backend(values)

    def _fall_through(self, values, device_type):
        """``fallthrough_kernel`` at the Autograd key: no autograd layer, so the kernel runs
        on the caller's tensors with grad mode on and the ops it is made of record as they
        would anywhere (torch's fallthrough)."""
        fn = self.kernel_for(device_type)
        if fn is None:
            return self.backend(values)  # raises: no kernel for this device type
        pos, kw = self.schema.split(values)
        out = fn(*pos, **kw)
        frame, tensors = _frame(self.schema, values)
        for k in frame.written:
            tensors[k]._bump()
        return out

    # -- the backend --------------------------------------------------------------------------

    def device_type(self, values) -> str:
        """The device type a call runs on: the first tensor's, else a Device argument's,
        else 'cpu'."""
        t = _first_tensor(values)
        if t is not None:
            return _dispatch.backend_of(t._data).name
        for a, v in zip(self.schema.arguments, values):
            if a.type.base == "Device" and v is not None:
                return v.type
        return "cpu"

    def _array_type(self, values):
        for a, v in zip(self.schema.arguments, values):
            if a.type.base == "Device" and v is not None:
                backend = _dispatch.backends_by_name.get(v.type)
                if backend is None:
                    raise RuntimeError(
                        f"ember: no backend is registered for device type '{v.type}'")
                return backend.array_type
        return np.ndarray

    def backend(self, values):
        """Run the kernel for the inputs' device type on bound ``values``."""
        frame, tensors = _frame(self.schema, values)
        if tensors:
            first = tensors[0]._data
            at = type(first)
        else:
            at = self._array_type(values)
        impl = self.impl.get(at)
        if impl is None:
            impl = self._resolve(at)
        arrays = []
        for t in tensors:
            a = t._data
            if type(a) is not at:
                if type(a) is np.ndarray and a.ndim == 0:  # a CPU scalar joins any device
                    a = _dispatch.backends_by_type[at].xp.asarray(a)
                else:
                    raise _dispatch.device_mismatch(self.name, first, a)
            arrays.append(a)
        results, written = impl(*arrays, call=frame)
        for k, a in zip(frame.written, written):
            t = tensors[k]
            if a is not t._data and type(a) is type(t._data):
                # the kernel swapped the data out (resize_, set_); a CPU scalar that joined
                # another device's call was written on a copy, and stays as it was
                t._set_data(a)
            t._bump()
        return self._wrap_results(results, values)

    def _resolve(self, at):
        backend = _dispatch.backends_by_type.get(at)
        if backend is not None and backend.name == "meta" and self.kernel_for("meta") is None:
            if self.from_custom_op and not self.schema.returns:
                # an op that only writes into its arguments: on meta there is nothing to
                # compute, as torch's automatic fake rule for such custom ops says
                return self._adapter(lambda *args, **kwargs: None, False)
            if not self.from_custom_op:
                raise NotImplementedError(
                    f"{self.name}: attempted to run this operator with Meta tensors, but "
                    "there was no fake impl or Meta kernel registered. Register one with "
                    f"ember.library.register_fake('{self.name}') or a 'Meta' kernel.")
            raise RuntimeError(
                f"There was no fake impl registered for {self.describe()}. ember needs one to "
                f"run the op on the meta device. Please use `{self.opname}.register_fake` to "
                "add one.")
        return self.resolve(at)

    def _unwrap_results(self, out, in_arrays):
        """A kernel's results, checked against the schema, with arrays for tensors."""
        rets = self.schema.returns
        if not rets:
            return []
        if len(rets) == 1:
            outs = (out,)
        elif isinstance(out, (tuple, list)) and len(out) == len(rets):
            outs = tuple(out)
        else:
            raise RuntimeError(
                f"{self.name}: the kernel returned {type(out).__name__}, but the schema "
                f"{self.schema} declares {len(rets)} results; return a tuple of them")
        results = []
        for k, (r, v) in enumerate(zip(rets, outs)):
            t = r.type
            if t.base == "Tensor" and not t.is_list:
                if v is None and t.optional:
                    results.append(None)
                elif isinstance(v, Tensor):
                    results.append(v._data)
                else:
                    raise RuntimeError(
                        f"{self.name}: result {k} should be a Tensor (schema {self.schema}), "
                        f"but the kernel returned {type(v).__name__}")
            elif t.base == "Tensor":
                if not isinstance(v, (list, tuple)) or not all(isinstance(e, Tensor)
                                                               for e in v):
                    raise RuntimeError(
                        f"{self.name}: result {k} should be a list of Tensors (schema "
                        f"{self.schema}), but the kernel returned {type(v).__name__}")
                results.append([e._data for e in v])
            else:
                try:
                    results.append(convert(v, t))
                except _Mismatch:
                    raise RuntimeError(
                        f"{self.name}: result {k} should be {t.py_name()} (schema "
                        f"{self.schema}), but the kernel returned {type(v).__name__}") from None
        if in_arrays is not None:
            self._check_aliasing(results, in_arrays)
        return results

    def _check_aliasing(self, results, in_arrays):
        """Results must be new tensors: not an input, not a view of one, not each other --
        unless the schema says so (``-> Tensor(a)``)."""
        taken = {id(_root(a)) for a in in_arrays}
        for r, v in zip(self.schema.returns, results):
            if r.type.base != "Tensor" or r.type.alias_set or v is None:
                continue
            for a in (v if isinstance(v, list) else (v,)):
                root = id(_root(a))
                if root in taken:
                    msg = (f"{self.name}: The output of this custom operator (1) must not also "
                           "be an input to this custom operator and (2) may not alias any "
                           "inputs to this custom operator or other returns. The most common "
                           "way to trigger this error is if we have y = custom_op(x) and y "
                           "and x are the same Tensor. Please instead return a clone of the "
                           "offending output tensor(s) (e.g. return x.clone()) or refactor the "
                           "custom operator to not return y.")
                    if self.from_custom_op:
                        raise RuntimeError(msg)
                    warnings.warn(msg + " This is deprecated and will become an error in a "
                                  "future version.", UserWarning, stacklevel=4)
                    return
                taken.add(root)

    def _wrap_results(self, results, values):
        rets = self.schema.returns
        if not rets:
            return None
        outs = []
        for r, v in zip(rets, results):
            t = r.type
            if t.base != "Tensor":
                outs.append(v)
                continue
            src = self._alias_source(t.alias_set, values) if t.alias_set else None
            if src is not None:
                outs.append(src)
            elif t.is_list:
                outs.append([wrap(a) for a in v])
            else:
                outs.append(None if v is None else wrap(v))
        return outs[0] if len(rets) == 1 else tuple(outs)

    def _alias_source(self, alias_set, values):
        for a, v in zip(self.schema.arguments, values):
            if a.type.alias_set == alias_set and isinstance(v, Tensor):
                return v
        return None

    # -- autograd -----------------------------------------------------------------------------

    def _autograd_apply(self, values, formula):
        """Run the op inside its generated ``autograd.Function`` (NOTE [ Custom ops ]);
        ``formula`` is the registered ``Formula`` or None."""
        fn = self._function or self._make_function()
        pos, kw = self.schema.split(values)
        flat = []
        for a, v in zip(self.schema.positional, pos):
            if a.type.base == "Tensor" and a.type.is_list and v is not None:
                flat.extend(v)
            else:
                flat.append(v)
        info = _CallInfo(pos, kw, formula)
        out = fn.apply(*flat, info)
        return self._restructure(out, info.out_lens)

    def _flatten_results(self, res):
        """Results as one flat tuple (lists of tensors spread out) and the list lengths."""
        rets = self.schema.returns
        if not rets:
            return (), ()
        outs = (res,) if len(rets) == 1 else res
        flat, lens = [], []
        for r, v in zip(rets, outs):
            if r.type.base == "Tensor" and r.type.is_list:
                flat.extend(v)
                lens.append(len(v))
            else:
                flat.append(v)
                lens.append(-1)
        return tuple(flat), tuple(lens)

    def _restructure(self, flat, lens):
        """The inverse of ``_flatten_results``."""
        if not lens:
            return None
        outs, i = [], 0
        for n in lens:
            if n < 0:
                outs.append(flat[i])
                i += 1
            else:
                outs.append(list(flat[i:i + n]))
                i += n
        return outs[0] if len(lens) == 1 else tuple(outs)

    def _make_function(self):
        from ..autograd.function import Function

        op = self
        schema = self.schema

        def forward(*flat):
            info = flat[-1]
            pos, i = [], 0
            for a, v in zip(schema.positional, info.pos):
                if a.type.base == "Tensor" and a.type.is_list and v is not None:
                    pos.append(list(flat[i:i + len(v)]))
                    i += len(v)
                else:
                    pos.append(flat[i])
                    i += 1
            values = list(pos) + [info.kw[a.name] for a in schema.kwarg_only]
            out, info.out_lens = op._flatten_results(op.backend(values))
            return out

        def setup_context(ctx, inputs, output):
            info = inputs[-1]
            ctx.needs_input_grad = ctx.needs_input_grad[:-1]
            ctx._arg_lens = tuple(
                len(v) if a.type.base == "Tensor" and a.type.is_list and v is not None else -1
                for a, v in zip(schema.positional, info.pos))
            ctx._out_lens = info.out_lens
            formula = info.formula
            ctx._formula = formula
            if formula is not None and formula.setup_context is not None:
                user_output = op._restructure(output, info.out_lens)
                if schema.kwarg_only:
                    formula.setup_context(ctx=ctx, inputs=tuple(info.pos),
                                          keyword_only_inputs=dict(info.kw),
                                          output=user_output)
                else:
                    formula.setup_context(ctx=ctx, inputs=tuple(info.pos), output=user_output)
            # zeros for missing gradients are made here, for tensor results only
            ctx._materialize = ctx.materialize_grads
            ctx.materialize_grads = False

        def backward(ctx, *grads):
            formula = ctx._formula
            if formula is None:
                raise RuntimeError(
                    f"Trying to backward through {op.handle} but no autograd formula was "
                    "registered. Please use register_autograd to add one.")
            if ctx._materialize:
                grads = [g if g is not None or m[1] is None else _zeros(m)
                         for g, m in zip(grads, ctx._out_meta)]
            structured = op._restructure(tuple(grads), ctx._out_lens)
            res = formula.backward(ctx, *((structured,) if len(ctx._out_lens) == 1 else
                                          structured))
            if not isinstance(res, tuple):
                res = (res,)
            lens = ctx._arg_lens
            if len(res) > len(lens) and all(r is None for r in res[len(lens):]):
                res = res[:len(lens)]
            if len(res) != len(lens):
                raise RuntimeError(
                    f"function {ctx.name()} returned an incorrect number of gradients "
                    f"(expected {len(lens)}, got {len(res)})")
            flat = []
            for a, n, r in zip(schema.positional, lens, res):
                if n < 0:
                    flat.append(r)
                elif r is None:
                    flat.extend([None] * n)
                elif isinstance(r, (list, tuple)) and len(r) == n:
                    flat.extend(r)
                else:
                    raise RuntimeError(
                        f"function {ctx.name()} returned {type(r).__name__} as the gradient "
                        f"of the list argument '{a.name}'; expected a list of {n} gradients "
                        "(or None)")
            flat.append(None)  # the call info
            return tuple(flat)

        name = f"GeneratedBackwardFor_{self.namespace}_{self.opname}_{self.overload_name}"
        self._function = type(name, (Function,), {
            "forward": staticmethod(forward), "setup_context": staticmethod(setup_context),
            "backward": staticmethod(backward), "__module__": __name__,
            "_profiler_event": False})  # the op's own event stands for it
        return self._function

    # -- lifetime -----------------------------------------------------------------------------

    def destroy(self):
        """Take the op out of the registry and of ``ember.ops`` (its Library went away)."""
        if self.destroyed:
            return
        self.destroyed = True
        if ops.get(self.name) is self:
            del ops[self.name]
        table = _dispatch.packets.get(self.namespace, {})
        packet = table.get(self.opname)
        if packet is not None:
            packet._remove(self.overload_name)
            if not packet._overloads:
                del table[self.opname]
        if not table:
            _dispatch.packets.pop(self.namespace, None)


def _no_kernel(xp, *arrays, **params):  # pragma: no cover - replaced in LibraryOp.__init__
    raise NotImplementedError


def _zeros(meta):
    shape, dtype, at = meta
    return wrap(_dispatch.backends_by_type[at].xp.zeros(shape, dtype))


def _tensors_in(values):
    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, list):
            for e in v:
                if isinstance(e, Tensor):
                    yield e


def _first_tensor(values):
    return next(_tensors_in(values), None)


def _requires_grad(values):
    return any(t._rg for t in _tensors_in(values))


def _tensor_types(args, kwargs):
    types = []
    for v in _tensors_in(list(args) + list(kwargs.values())):
        if type(v) not in types:
            types.append(type(v))
    return tuple(types)
