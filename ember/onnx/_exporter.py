"""``ember.onnx.export``: a model traced through the dispatcher and written as an ONNX graph.

NOTE [ ONNX export ]
PyTorch exports by capturing a graph (``torch.export`` or the TorchScript tracer) and
translating each ATen op. Ember has the same vantage point without a separate capture
machinery: every op call goes through one door (NOTE [ Dispatch ] in ember/_dispatch.py), so
the model runs once on the example inputs, under ``no_grad``, with a dispatch mode that sees
each op with its arguments and results.

- Each tensor the trace meets becomes a ``Value`` (ember/onnx/_builder.py), looked up by the
  tensor's identity (every tensor seen is kept alive until the export ends, so identities
  are not reused). Model inputs are graph inputs; parameters and buffers are initializers
  named by their ``state_dict`` keys; tensors made outside any recorded op are constants.
- An op none of whose tensor arguments depends on a model input is not written: its results
  are constants, kept as arrays, and become initializers only if a later op uses them. This
  is constant folding, done by the trace itself (``arange`` for positions, a causal mask,
  ``weight * 2``).
- An op that does depend on an input is written by its translation (NOTE [ ONNX
  translations ] in ember/onnx/_translations.py); an op without one raises
  ``OnnxExporterError`` naming it. An in-place op makes its tensor name the new value.
- Python numbers read from tensors (``x.size(0)`` in a ``view``) are fixed at their traced
  values, as in PyTorch's tracer; reshapes are written so that dimensions marked dynamic
  (``dynamic_axes``/``dynamic_shapes``) may still change (see the translations' note).
- Python control flow on a value that depends on the inputs (``if x.sum() > 0:``; a user
  frame calling ``Tensor.__bool__`` on a written value, seen by a profile hook on this
  thread) cannot be written: with ``dynamo=True`` (the default) export raises, as PyTorch's
  ``torch.export``-based exporter does; with ``dynamo=False`` the branch taken is kept and
  ``TracerWarning`` says so, as PyTorch's TorchScript tracer does. ``ember.cond`` with such
  a predicate is written as an ONNX ``If``: each branch runs once on the operands with the
  builder's node list swapped for the branch's own, and the nodes become the ``then``/
  ``else`` subgraphs (they read outer values by name, which ONNX allows).

The model is written for the opset asked for (default 20, as PyTorch's), from 11 up
(NOTE [ ONNX opsets ] in ember/onnx/_builder.py). A lower ``opset_version`` is reached with
ONNX's version converter; if that fails the model keeps opset 11, with a warning, as
PyTorch's exporter does. The result is checked with ``onnx.checker`` and, when asked
(``verify=True``), run with onnxruntime against ember's own outputs.
"""

from __future__ import annotations

import inspect
import os
import warnings

import numpy as np

from .._core.tensor import Tensor
from ..utils._python_dispatch import TorchDispatchMode
from ..utils._pytree import tensor_leaves
from ._builder import GraphBuilder, Value, onnx_type
from ._control_flow import _Cond, _PythonBranches
from ._translations import TRANSLATIONS

DEFAULT_OPSET = 20
LOWEST_OPSET = 11  # written directly (NOTE [ ONNX opsets ] in ember/onnx/_builder.py)
_state = {"exporting": False}
_custom_symbolics = {}  # "domain::name" -> {opset: fn}


def _error(msg):
    from .errors import OnnxExporterError

    return OnnxExporterError(msg)




def _array(t: Tensor):
    return np.array(t.detach().cpu().numpy(), copy=True)


class _Ctx:
    """What a translation sees: the builder, the op being written, and names of values."""

    def __init__(self, builder, hints):
        self.g = builder
        self.hints = hints  # id(tensor) -> initializer name (parameters and buffers)
        self.op = ""
        self.hint = ""

    def name(self, v: Value) -> str:
        """The ONNX name of ``v``, writing it as an initializer first if it is a constant."""
        if v.name == "":
            raise _error(f"ONNX export of '{self.op}' needs a result that ember's exporter "
                         f"does not write (such as max pooling's indices)")
        if v.name is None:
            hint = self.hints.get(id(v))
            if hint is not None:
                v.name = self.g.reserve(hint)
                from onnx import numpy_helper

                self.g.initializers.append(numpy_helper.from_array(
                    np.require(v.array, requirements="C"), v.name))
            else:
                v.name = self.g.const(v.array, "val")
        return v.name

    def unused(self) -> str:
        """A name for a result the graph never uses (batch norm's saved statistics)."""
        return ""


class _Trace(TorchDispatchMode):
    """Writes each op call that depends on the model's inputs (NOTE [ ONNX export ])."""

    def __init__(self, ctx, values, keep, params):
        super().__init__()
        self.ctx = ctx
        self.values = values  # id(tensor) -> Value
        self.keep = keep
        self.params = params  # id(tensor) -> state_dict name

    def value_of(self, t: Tensor) -> Value:
        v = self.values.get(id(t))
        if v is None:
            v = Value(None, t.shape, t.dtype, _array(t))
            name = self.params.get(id(t))
            if name is not None:
                self.ctx.hints[id(v)] = name
            self.values[id(t)] = v
            self.keep.append(t)
        return v

    def _wrap(self, x):
        if isinstance(x, Tensor):
            return self.value_of(x)
        if isinstance(x, tuple):
            return tuple(self._wrap(a) for a in x)
        if isinstance(x, list):
            return [self._wrap(a) for a in x]
        return x

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        wargs = self._wrap(args)
        wkwargs = {k: self._wrap(v) for k, v in kwargs.items()}
        live = any(not v.is_constant for v in _values(wargs) + _values(wkwargs))
        out = func(*args, **kwargs)
        results = tensor_leaves(out)
        op = func.overloadpacket.__name__
        if not results and op.endswith("_") and args and isinstance(args[0], Tensor):
            results = [args[0]]  # an in-place op that returns nothing wrote its first input
        self.keep.extend(results)
        if not live:
            for t in results:
                if _dtype_or_none(t) is not None:
                    self.values[id(t)] = Value(None, t.shape, t.dtype, _array(t))
            return out
        outs = [Value(None, t.shape, _dtype_or_none(t)) for t in results]
        custom = _custom_for(op, self.ctx.g.opset)
        translate = custom or TRANSLATIONS.get(op)
        if translate is None:
            raise _error(f"ONNX export of the op '{op}' is not supported by ember's exporter "
                         f"(called with {_describe(args)})")
        self.ctx.op, self.ctx.hint = op, op.split(".")[0].strip("_")
        if custom is not None:
            names = _run_custom(custom, self.ctx, wargs, wkwargs, len(outs))
        else:
            names = translate(self.ctx, wargs, wkwargs, outs)
        for t, v, name in zip(results, outs, names):
            v.name = name
            self.values[id(t)] = v
        return out


def _dtype_or_none(t):
    try:
        return t.dtype
    except KeyError:  # an op's internal result (object arrays of saved state)
        return None


def _values(x):
    if isinstance(x, Value):
        return [x]
    if isinstance(x, (list, tuple)):
        return [v for a in x for v in _values(a)]
    if isinstance(x, dict):
        return [v for a in x.values() for v in _values(a)]
    return []


def _describe(args):
    parts = []
    for a in args:
        if isinstance(a, Tensor):
            parts.append(f"Tensor{tuple(a.shape)}")
        else:
            parts.append(repr(a)[:40])
    return ", ".join(parts)


# -- custom symbolics (register_custom_op_symbolic) ------------------------------------------

def _custom_for(op, opset):
    for key, by_opset in _custom_symbolics.items():
        if key.split("::", 1)[1] == op:
            usable = [v for v in by_opset if v <= opset]
            if usable:
                return by_opset[max(usable)]
    return None


class SymbolicContext:
    """The ``g`` a function registered with ``register_custom_op_symbolic`` receives: its
    ``op`` writes one ONNX node.

    Args:
        ctx: the exporter's translation context.

    Example::

        >>> def my_relu(g, x):
        ...     return g.op("Relu", x)
    """

    def __init__(self, ctx):
        self._ctx = ctx

    @property
    def opset(self) -> int:
        """The opset the graph is written for."""
        return self._ctx.g.opset

    def op(self, op_type: str, *inputs, outputs: int = 1, **attrs):
        """Write the node ``op_type`` (``"domain::Op"`` for another domain) on ``inputs``.

        Attribute names carry PyTorch's type suffixes (``alpha_f``, ``axes_i``, ``mode_s``);
        the suffix is dropped.

        Args:
            op_type: the operator.
            *inputs: values (what the function received) or Python numbers/arrays.
            outputs: how many results.
            **attrs: the attributes.

        Returns:
            Value or list[Value]: the results.
        """
        from onnx import helper

        ctx = self._ctx
        names = []
        for x in inputs:
            if x is None:
                names.append("")
            elif isinstance(x, Value):
                names.append(ctx.name(x))
            else:
                names.append(ctx.g.const(np.asarray(x), "const"))
        clean = {}
        for k, v in attrs.items():
            if len(k) > 2 and k[-2] == "_" and k[-1] in "ifst":
                k = k[:-2]
            clean[k] = v
        domain = ""
        if "::" in op_type:
            domain, op_type = op_type.split("::", 1)
            domain = "" if domain == "onnx" else domain
        out_names = [ctx.g.fresh(op_type.lower()) for _ in range(outputs)]
        ctx.g.nodes.append(helper.make_node(op_type, names, out_names, domain=domain or None,
                                            name=f"node_{out_names[0]}", **clean))
        if domain:
            ctx.g.domains.add(domain)
        values = [Value(n, (), None) for n in out_names]
        return values[0] if outputs == 1 else values


def _run_custom(fn, ctx, args, kwargs, n_out):
    result = fn(SymbolicContext(ctx), *args, **kwargs)
    results = result if isinstance(result, (list, tuple)) else [result]
    return [ctx.name(r) if isinstance(r, Value) else r for r in results][:n_out]


# -- the export ------------------------------------------------------------------------------

def _param_names(model):
    names = {}
    if hasattr(model, "named_parameters"):
        for name, p in model.named_parameters():
            names.setdefault(id(p), name)
        for name, b in model.named_buffers():
            names.setdefault(id(b), name)
    return names


def _input_names(model, args, kwargs, given):
    """The graph input names for the tensors in ``args``/``kwargs``, in order."""
    tensors = []
    default = []
    fn = model.forward if hasattr(model, "forward") else model
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    for i, a in enumerate(args):
        base = params[i] if i < len(params) else f"input_{i}"
        ts = tensor_leaves(a)
        tensors.extend(ts)
        default.extend([base] if len(ts) == 1 else [f"{base}_{j}" for j in range(len(ts))])
    for k, a in (kwargs or {}).items():
        ts = tensor_leaves(a)
        tensors.extend(ts)
        default.extend([k] if len(ts) == 1 else [f"{k}_{j}" for j in range(len(ts))])
    names = list(given or [])
    names += default[len(names):]
    return tensors, names[:len(tensors)]


def _dim_names(input_names, output_names, dynamic_axes, dynamic_shapes, args, kwargs, model):
    """{value name: {axis: symbol}} from ``dynamic_axes`` or ``dynamic_shapes``."""
    dims = {}
    for name, axes in (dynamic_axes or {}).items():
        if isinstance(axes, dict):
            dims[name] = {int(a): str(s) for a, s in axes.items()}
        else:
            dims[name] = {int(a): f"{name}_dynamic_axes_{i + 1}" for i, a in enumerate(axes)}
    if dynamic_shapes:
        if isinstance(dynamic_shapes, dict):
            items = list(dynamic_shapes.items())
        else:
            items = list(zip(input_names, dynamic_shapes))
        for name, spec in items:
            if spec is None:
                continue
            if isinstance(spec, (list, tuple)):
                spec = {i: s for i, s in enumerate(spec) if s is not None}
            dims[name] = {int(a): _symbol(s, name, a) for a, s in spec.items() if s is not None}
    unknown = set(dims) - set(input_names) - set(output_names)
    if unknown:
        warnings.warn(f"Provided key {', '.join(sorted(unknown))} for dynamic axes is not a "
                      f"valid input/output name", stacklevel=4)
    return dims


def _symbol(spec, name, axis):
    if isinstance(spec, str):
        return spec
    return getattr(spec, "__name__", None) or f"{name}_dim_{axis}"


def _value_info(name, value, axes):
    from onnx import helper

    shape = [axes.get(i, d) for i, d in enumerate(value.shape)] if value.shape is not None \
        else None
    return helper.make_tensor_value_info(name, onnx_type(value.dtype), shape)


def _rename(nodes, old, new):
    for node in nodes:
        for i, n in enumerate(node.output):
            if n == old:
                node.output[i] = new
        for i, n in enumerate(node.input):
            if n == old:
                node.input[i] = new


def trace_to_model(model, args, kwargs=None, *, input_names=None, output_names=None,
                   opset_version=None, dynamic_axes=None, dynamic_shapes=None,
                   export_params=True, keep_initializers_as_inputs=False,
                   python_branches="raise"):
    """Trace ``model`` on ``args`` and return the ONNX ``ModelProto`` and ember's outputs.

    Args:
        model: an ``nn.Module`` or a function of tensors.
        args: the example positional inputs (a tuple; a lone tensor is accepted).
        kwargs: the example keyword inputs.
        input_names: names of the graph inputs, in order (default: the forward's parameter
            names).
        output_names: names of the graph outputs (default: names made from the ops).
        opset_version: the ONNX opset (default 20).
        dynamic_axes: ``{name: {axis: symbol}}`` or ``{name: [axes]}``.
        dynamic_shapes: ``torch.export``-style: per input, ``{axis: Dim or name}``.
        export_params: write parameters as initializers (else they are graph inputs).
        keep_initializers_as_inputs: also list initializers as graph inputs.
        python_branches: ``"raise"`` (``dynamo=True``'s behaviour) or ``"warn"`` when the
            model branches in Python on a value computed from its inputs.

    Returns:
        tuple: ``(model_proto, outputs)`` with ``outputs`` the flat list of ember's result
        tensors.

    Example::

        >>> proto, outs = trace_to_model(ember.nn.Linear(2, 1), (ember.ones(3, 2),))
        >>> [n.op_type for n in proto.graph.node]
        ['Gemm']
    """
    try:
        import onnx
    except ModuleNotFoundError as e:  # the README's tour ends here without the onnx extra
        raise ModuleNotFoundError(
            "ember.onnx.export writes models with the onnx package, which is not installed: "
            "python -m pip install onnx onnxruntime (ember's onnx extra)", name="onnx") from e
    from onnx import helper

    from ..autograd.grad_mode import no_grad

    if isinstance(args, Tensor):
        args = (args,)
    elif not isinstance(args, tuple):
        args = tuple(args) if isinstance(args, list) else (args,)
    if args and isinstance(args[-1], dict) and kwargs is None:
        args, kwargs = args[:-1], args[-1]  # PyTorch's trailing-dict convention
    kwargs = dict(kwargs or {})
    target = int(opset_version or DEFAULT_OPSET)
    builder = GraphBuilder(max(target, LOWEST_OPSET))
    builder.domains = set()
    ctx = _Ctx(builder, {})
    values, keep = {}, []
    params = _param_names(model)

    in_tensors, in_names = _input_names(model, args, kwargs, input_names)
    inputs = []
    for t, name in zip(in_tensors, in_names):
        v = Value(builder.reserve(name), t.shape, t.dtype)
        values[id(t)] = v
        keep.append(t)
        inputs.append(v)
    tracer = _Trace(ctx, values, keep, params)
    _state["exporting"] = True
    try:
        with no_grad(), tracer, _Cond(tracer), _PythonBranches(values) as branches:
            out = model(*args, **kwargs)
    finally:
        _state["exporting"] = False
    branches.report(python_branches == "raise")
    results = tensor_leaves(out)
    if not results:
        raise _error("ONNX export needs the model to return at least one tensor")

    outputs = []
    used_out = set()
    given_out = list(output_names or [])
    for i, t in enumerate(results):
        v = values.get(id(t))
        if v is None:
            v = tracer.value_of(t)
        name = ctx.name(v)
        wanted = given_out[i] if i < len(given_out) else None
        is_graph_input = any(name == iv.name for iv in inputs)
        is_init = any(name == init.name for init in builder.initializers)
        if is_graph_input or is_init or name in used_out:
            name = builder.node("Identity", [name], name_hint=wanted or "output")
        if wanted and wanted != name:
            builder.reserve(wanted)
            _rename(builder.nodes, name, wanted)
            name = wanted
        used_out.add(name)
        outputs.append(Value(name, t.shape, t.dtype))

    axes = _dim_names(in_names, [o.name for o in outputs], dynamic_axes, dynamic_shapes,
                      args, kwargs, model)
    graph_inputs = [_value_info(v.name, v, axes.get(v.name, {})) for v in inputs]
    _drop_dead_nodes(builder, [v.name for v in outputs])
    initializers = list(builder.initializers)
    if not export_params:
        param_set = set(params.values())
        keep_inits = []
        for init in initializers:
            if init.name in param_set:
                graph_inputs.append(helper.make_tensor_value_info(
                    init.name, init.data_type, list(init.dims)))
            else:
                keep_inits.append(init)
        initializers = keep_inits
    elif keep_initializers_as_inputs:
        graph_inputs += [helper.make_tensor_value_info(i.name, i.data_type, list(i.dims))
                         for i in initializers]

    dynamic = any(axes.get(v.name) for v in inputs)
    graph_outputs = []
    for v in outputs:
        out_axes = axes.get(v.name, {})
        if dynamic and not out_axes:
            graph_outputs.append(helper.make_tensor_value_info(v.name, onnx_type(v.dtype),
                                                               [None] * len(v.shape)))
        else:
            graph_outputs.append(_value_info(v.name, v, out_axes))
    graph = helper.make_graph(builder.nodes, "main_graph", graph_inputs, graph_outputs,
                              initializer=initializers)
    opsets = [helper.make_opsetid("", builder.opset)]
    opsets += [helper.make_opsetid(d, 1) for d in sorted(builder.domains)]
    from . import producer_name, producer_version

    proto = helper.make_model(graph, opset_imports=opsets, producer_name=producer_name,
                              producer_version=producer_version, ir_version=10)
    if dynamic:
        proto = _fill_output_shapes(proto)
    if target < builder.opset:
        proto = _convert(proto, target)
    onnx.checker.check_model(proto)
    return proto, results


def _drop_dead_nodes(builder, outputs):
    """Remove nodes none of whose results reach an output (checks a model made on its
    inputs, such as an embedding's index bounds), and the initializers only they used."""
    needed = set(outputs)
    kept = []
    for node in reversed(builder.nodes):
        if any(o and o in needed for o in node.output):
            kept.append(node)
            needed.update(i for i in node.input if i)
            needed.update(_subgraph_reads(node))
    builder.nodes[:] = kept[::-1]
    builder.initializers[:] = [i for i in builder.initializers if i.name in needed]


def _subgraph_reads(node) -> set:
    """The names an ``If`` node's branches read (outer values and their own)."""
    from onnx import AttributeProto

    names = set()
    for attr in node.attribute:
        if attr.type == AttributeProto.GRAPH:
            for inner in attr.g.node:
                names.update(i for i in inner.input if i)
                names.update(_subgraph_reads(inner))
    return names


def _fill_output_shapes(proto):
    """Outputs of a model with dynamic inputs get the shapes ONNX's inference finds."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(proto)
    except Exception:  # noqa: BLE001 - inference is a nicety; the model is valid without it
        return proto
    by_name = {o.name: o for o in inferred.graph.output}
    for out in proto.graph.output:
        got = by_name.get(out.name)
        if got is not None and got.type.tensor_type.HasField("shape"):
            out.type.CopyFrom(got.type)
    return proto


def _convert(proto, target):
    from onnx import version_converter

    try:
        return version_converter.convert_version(proto, target)
    except Exception as err:  # noqa: BLE001 - the converter raises many types
        warnings.warn(f"Failed to convert the model to the target version {target} using "
                      f"the ONNX C API. The model was not modified: {err}", stacklevel=4)
        return proto


class ONNXProgram:
    """An exported ONNX model: what ``ember.onnx.export`` returns.

    Args:
        model_proto: the ``onnx.ModelProto``.

    Example::

        >>> prog = ember.onnx.export(ember.nn.Linear(2, 1), (ember.ones(3, 2),))
        >>> prog(ember.ones(3, 2))[0].shape
        ember.Size([3, 1])
    """

    def __init__(self, model_proto):
        self.model_proto = model_proto
        self.exported_program = None
        self._session = None

    @property
    def model(self):
        """The ONNX model (the ``ModelProto``)."""
        return self.model_proto

    def __repr__(self):
        import onnx

        return f"ONNXProgram(\n    model=\n{onnx.printer.to_text(self.model_proto)}\n)"

    def save(self, destination, *, include_initializers=True,
             keep_initializers_as_inputs=False, external_data=None):
        """Write the model to ``destination`` (a path or a binary file object).

        Args:
            destination: where to write.
            include_initializers: write the weights (else only the graph).
            keep_initializers_as_inputs: also list the weights as graph inputs.
            external_data: store weights in a separate file next to the model (default: only
                when the model is over 2 GB).

        Returns:
            None

        Example::

            >>> prog.save("model.onnx")  # doctest: +SKIP
        """
        import onnx
        from onnx import helper

        proto = onnx.ModelProto()
        proto.CopyFrom(self.model_proto)
        if keep_initializers_as_inputs:
            names = {i.name for i in proto.graph.input}
            for init in proto.graph.initializer:
                if init.name not in names:
                    proto.graph.input.append(helper.make_tensor_value_info(
                        init.name, init.data_type, list(init.dims)))
        if not include_initializers:
            del proto.graph.initializer[:]
        if isinstance(destination, (str, os.PathLike)):
            big = proto.ByteSize() > 2 ** 31 - 1 if external_data is None else external_data
            if big:
                onnx.save_model(proto, os.fspath(destination), save_as_external_data=True,
                                location=os.path.basename(os.fspath(destination)) + ".data")
            else:
                onnx.save_model(proto, os.fspath(destination))
        else:
            destination.write(proto.SerializeToString())

    def initialize_inference_session(self, initializer=None):
        """Make the onnxruntime session ``__call__`` runs (done on first call otherwise).

        Args:
            initializer: a function from the serialized model (bytes) to a session; default
                ``onnxruntime.InferenceSession`` on the CPU.

        Returns:
            None
        """
        data = self.model_proto.SerializeToString()
        if initializer is None:
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.log_severity_level = 3
            self._session = ort.InferenceSession(data, options,
                                                 providers=["CPUExecutionProvider"])
        else:
            self._session = initializer(data)

    def release(self):
        """Drop the onnxruntime session.

        Returns:
            None
        """
        self._session = None

    def optimize(self):
        """Optimise the graph in place. Ember's trace already folds constants and writes no
        dead nodes, so there is nothing more to do.

        Returns:
            None
        """

    def __call__(self, *args, **kwargs):
        """Run the model with onnxruntime on ember tensors; returns ember tensors.

        Args:
            *args: the inputs, in the graph's input order.
            **kwargs: inputs by name.

        Returns:
            list[Tensor]: the outputs.
        """
        from .. import from_numpy

        if self._session is None:
            self.initialize_inference_session()
        names = [i.name for i in self._session.get_inputs()]
        feed = {}
        flat = [t for a in args for t in tensor_leaves(a)]
        for name, t in zip(names, flat):
            feed[name] = t.detach().cpu().numpy()
        for k, v in kwargs.items():
            for j, t in enumerate(tensor_leaves(v)):
                feed[k if len(tensor_leaves(v)) == 1 else f"{k}_{j}"] = t.detach().cpu().numpy()
        return [from_numpy(np.asarray(o)) for o in self._session.run(None, feed)]


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None,
           output_names=None, opset_version=None, dynamo=True, external_data=True,
           dynamic_shapes=None, custom_translation_table=None, report=False, optimize=True,
           verify=False, profile=False, dump_exported_program=False, artifacts_dir=".",
           export_params=True, keep_initializers_as_inputs=False, dynamic_axes=None,
           training=None, operator_export_type=None, do_constant_folding=True,
           custom_opsets=None, export_modules_as_functions=False, autograd_inlining=True):
    """Export ``model`` to ONNX by running it once on ``args`` (NOTE [ ONNX export ]).

    Args:
        model: an ``nn.Module``, an ``ember.export.ExportedProgram`` (its module runs, on
            its example inputs unless ``args`` are given), or a function of tensors.
        args: example inputs (a tuple, or one tensor).
        f: a path or binary file object to write the model to (optional).
        kwargs: example keyword inputs.
        verbose: print the exported graph.
        input_names: names of the graph inputs.
        output_names: names of the graph outputs.
        opset_version: the ONNX opset (default 20).
        dynamo: return an ``ONNXProgram`` (True, the default) or None (False).
        external_data: store large weights beside the model file.
        dynamic_shapes: per input, ``{axis: Dim or name}`` for dimensions that may change.
        custom_translation_table: not used by ember's exporter (must be empty).
        report, profile, dump_exported_program, artifacts_dir: accepted; ember writes no
            reports.
        optimize: accepted (the trace already folds constants).
        verify: run the exported model with onnxruntime and check it against ember.
        export_params: write the weights into the model (else they become inputs).
        keep_initializers_as_inputs: also list the weights as graph inputs.
        dynamic_axes: ``{name: {axis: symbol}}`` or ``{name: [axes]}``.
        training: ``TrainingMode`` the model is exported in (default EVAL).
        operator_export_type: only ``OperatorExportTypes.ONNX``.
        do_constant_folding: accepted (constants are always folded).
        custom_opsets: extra domains' versions.
        export_modules_as_functions: must be False.
        autograd_inlining: accepted.

    Returns:
        ONNXProgram or None: the exported program when ``dynamo`` is True.

    Raises:
        OnnxExporterError: an op ember cannot write in ONNX, or a model with no tensor
            output.

    Example::

        >>> net = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU())
        >>> prog = ember.onnx.export(net, (ember.randn(2, 4),), input_names=["x"])
        >>> [n.op_type for n in prog.model_proto.graph.node]
        ['Gemm', 'Relu']
    """
    from . import OperatorExportTypes, TrainingMode, select_model_mode_for_export

    if custom_translation_table:
        raise _error("custom_translation_table takes onnxscript functions, which ember's "
                     "exporter does not run; register a translation with "
                     "ember.onnx.register_custom_op_symbolic instead")
    if export_modules_as_functions:
        raise _error("export_modules_as_functions is not supported by ember's exporter")
    if operator_export_type not in (None, OperatorExportTypes.ONNX):
        raise _error(f"operator_export_type {operator_export_type!r} is not supported by "
                     f"ember's exporter; only OperatorExportTypes.ONNX")
    if type(model).__name__ == "ExportedProgram" and hasattr(model, "module"):
        ex_args, ex_kwargs = model.example_inputs
        args = args or ex_args
        kwargs = kwargs if kwargs is not None else (ex_kwargs or None)
        model = model.module()
    mode = TrainingMode.EVAL if training is None else training
    if hasattr(model, "train"):
        with select_model_mode_for_export(model, mode):
            proto, results = trace_to_model(
                model, args, kwargs, input_names=input_names, output_names=output_names,
                opset_version=opset_version, dynamic_axes=dynamic_axes,
                dynamic_shapes=dynamic_shapes, export_params=export_params,
                keep_initializers_as_inputs=keep_initializers_as_inputs,
                python_branches="raise" if dynamo else "warn")
    else:
        proto, results = trace_to_model(
            model, args, kwargs, input_names=input_names, output_names=output_names,
            opset_version=opset_version, dynamic_axes=dynamic_axes,
            dynamic_shapes=dynamic_shapes, export_params=export_params,
            keep_initializers_as_inputs=keep_initializers_as_inputs,
            python_branches="raise" if dynamo else "warn")
    for domain, version in (custom_opsets or {}).items():
        for op in proto.opset_import:
            if op.domain == domain:
                op.version = int(version)
    program = ONNXProgram(proto)
    if verbose:
        import onnx

        print(onnx.printer.to_text(proto))
    if verify:
        _verify(program, args, kwargs, results)
    if f is not None:
        if isinstance(f, (str, os.PathLike)):
            program.save(f, external_data=None if external_data else False)
        else:
            f.write(proto.SerializeToString())
    return program if dynamo else None


def _verify(program, args, kwargs, results):
    if isinstance(args, Tensor):
        args = (args,)
    got = program(*args, **(kwargs or {}))
    for i, (a, b) in enumerate(zip(got, results)):
        expected = b.detach().cpu().numpy()
        if not np.allclose(a.numpy(), expected, rtol=1e-4, atol=1e-5, equal_nan=True):
            raise _error(f"ONNX export verification failed: output {i} of onnxruntime "
                         f"differs from ember's (max abs diff "
                         f"{np.max(np.abs(a.numpy() - expected)):.3g})")


def is_exporting() -> bool:
    """Whether an export's trace is running (``ember.onnx.is_in_onnx_export``)."""
    return _state["exporting"]

