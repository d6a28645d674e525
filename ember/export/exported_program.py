"""``ExportedProgram``: a captured graph with its parameters, buffers and constants.

Example::

    >>> ep = ember.export.export(ember.nn.Linear(3, 2), (ember.randn(4, 3),))
    >>> ep.graph_signature.parameters
    ('weight', 'bias')
"""

from __future__ import annotations

import copy

from .._core.tensor import Tensor
from ..utils._pytree import tensor_leaves
from ._trace import unflatten
from .graph_signature import InputKind

__all__ = ["ExportedProgram"]


def _annot(val) -> str:
    """PyTorch's short type annotation of a tensor: ``f32[4, 3]``."""
    if not isinstance(val, Tensor):
        return ""
    short = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
             "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
             "bool": "b8", "complex64": "c64", "complex128": "c128"}
    name = str(val.dtype).replace("ember.", "")
    return f"{short.get(name, name)}{list(val.shape)}"


class ExportedProgram:
    """A module's forward captured as a graph of ember ops (NOTE [ Export trace ] in
    ember/export/_trace.py), with the state it reads.

    Args:
        graph: the ``ember.fx.Graph`` (placeholders for state, constants and user inputs).
        graph_signature: the ``ExportGraphSignature``.
        state_dict: parameters and buffers by key.
        constants: lifted tensor constants by name.
        range_constraints: symbol -> (min, max) for dynamic dimensions.
        example_inputs: ``(args, kwargs)`` the graph was captured with.
        out_spec: the structure of the forward's outputs.
        dynamic: ``{user input index: {dim: Dim}}`` of the dimensions marked dynamic.
        source: the exported module, kept to re-capture for new dynamic sizes (None after
            ``load``).

    Example::

        >>> ep = ember.export.export(ember.nn.ReLU(), (ember.randn(2),))
        >>> [n.op for n in ep.graph.nodes]
        ['placeholder', 'call_function', 'output']
    """

    def __init__(self, graph, graph_signature, state_dict, constants, range_constraints,
                 example_inputs, out_spec, dynamic=None, source=None):
        self._graph = graph
        self._graph_signature = graph_signature
        self._state_dict = state_dict
        self._constants = constants
        self._range_constraints = range_constraints
        self._example_inputs = example_inputs
        self._out_spec = out_spec
        self._dynamic = dynamic or {}
        self._source = source
        self._graph_module = None

    def _subgraph_root(self, root):
        """``root`` holding the branch graphs ``cond`` nodes read (NOTE [ Export trace ])."""
        for name, sub in getattr(self._graph, "_subgraphs", {}).items():
            root.add_module(name, sub)
        return root

    # -- what PyTorch's ExportedProgram exposes ----------------------------------------------

    @property
    def graph(self):
        """The captured ``ember.fx.Graph``."""
        return self._graph

    @property
    def graph_module(self):
        """The graph as an ``ember.fx.GraphModule`` taking every input (state first)."""
        if self._graph_module is None:
            from .. import fx, nn

            self._graph_module = fx.GraphModule(self._subgraph_root(nn.Module()), self._graph)
        return self._graph_module

    @property
    def graph_signature(self):
        """The ``ExportGraphSignature``: what each input and output is."""
        return self._graph_signature

    @property
    def state_dict(self) -> dict:
        """Parameters and buffers by key."""
        return self._state_dict

    @property
    def constants(self) -> dict:
        """The lifted tensor constants by name."""
        return self._constants

    @property
    def tensor_constants(self) -> dict:
        """The lifted tensor constants by name (same as ``constants``)."""
        return self._constants

    @property
    def range_constraints(self) -> dict:
        """The ranges of the dynamic dimensions' symbols."""
        return self._range_constraints

    @property
    def example_inputs(self):
        """``(args, kwargs)`` the program was captured with."""
        return self._example_inputs

    @property
    def dialect(self) -> str:
        """The op set of the graph: ember's ATen-named ops."""
        return "ATEN"

    @property
    def call_spec(self):
        """The output structure (ember keeps it as plain data)."""
        return self._out_spec

    @property
    def module_call_graph(self) -> list:
        """The module hierarchy of the program: a ``ModuleCallEntry`` for the root (with
        its inputs' names) and one for each submodule of the source module (without a
        signature: ember does not preserve submodule calls).

        Returns:
            list of ModuleCallEntry.
        """
        from . import ModuleCallEntry, ModuleCallSignature

        root = ModuleCallEntry("", ModuleCallSignature(
            [], [], None, self._out_spec,
            list(self._graph_signature.user_inputs)))
        src = self._source
        subs = [n for n, _ in src.named_modules() if n] if src is not None else []
        return [root] + [ModuleCallEntry(n) for n in subs]

    @property
    def verifiers(self) -> list:
        """The graph verifiers (ember checks the graph with ``Graph.lint``)."""
        return []

    def named_parameters(self):
        """``(key, parameter)`` pairs, in the graph's order.

        Returns:
            iterator of (str, Tensor).
        """
        for key in self._graph_signature.parameters:
            yield key, self._state_dict[key]

    def parameters(self):
        """The parameters, in the graph's order.

        Returns:
            iterator of Tensor.
        """
        for _, p in self.named_parameters():
            yield p

    def named_buffers(self):
        """``(key, buffer)`` pairs, in the graph's order.

        Returns:
            iterator of (str, Tensor).
        """
        for key in self._graph_signature.buffers:
            yield key, self._state_dict[key]

    def buffers(self):
        """The buffers, in the graph's order.

        Returns:
            iterator of Tensor.
        """
        for _, b in self.named_buffers():
            yield b

    def validate(self) -> None:
        """Check the graph's structure (``Graph.lint``).

        Returns:
            None
        """
        self._graph.lint()

    def run_decompositions(self, decomp_table=None, decompose_custom_triton_ops=False):
        """The program with composite ops decomposed: ember's graph already holds the ops
        its kernels implement, so this is a copy of the program.

        Args:
            decomp_table: op -> decomposition (accepted; see above).
            decompose_custom_triton_ops: accepted.

        Returns:
            ExportedProgram: a copy.
        """
        return copy.copy(self)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Unable to call ExportedProgram directly. You should use "
                           "`exported_program.module()` instead.")

    def __str__(self):
        gm_text = self._readable()
        sig = "\n".join("    " + line for line in
                        str(self._graph_signature).lstrip("\n").splitlines())
        rc = "{" + ", ".join(f"{k}: VR[{lo}, {'int_oo' if hi is None else hi}]"
                             for k, (lo, hi) in self._range_constraints.items()) + "}"
        return (f"ExportedProgram:\n{gm_text}\nGraph signature: \n{sig}\n    \n"
                f"Range constraints: {rc}\n")

    __repr__ = __str__

    def _readable(self) -> str:
        """The graph as PyTorch prints an exported program's module."""
        return "\n".join(_readable_graph(self._graph, "GraphModule", "    ")) + "\n    "

    # -- running -----------------------------------------------------------------------------

    def module(self):
        """The program as a module taking the user's inputs: an ``ember.fx.GraphModule``
        holding the parameters and buffers under their original names, which checks its
        inputs' static dimensions (``AssertionError: Guard failed: ...``) and re-captures
        for new sizes of dynamic ones. Its ``code`` is the graph's own: where torch's
        starts by flattening the inputs (``fx_pytree.tree_flatten_spec``) and calling a
        ``_guards_fn`` submodule, ember flattens and checks in the module's ``__call__``, so
        the code shows only the computation.

        Returns:
            ember.fx.GraphModule: the module.

        Example::

            >>> ep = ember.export.export(ember.nn.Linear(3, 2), (ember.randn(4, 3),))
            >>> ep.module()(ember.randn(4, 3)).shape
            ember.Size([4, 2])
        """
        from .. import fx, nn

        graph = copy.deepcopy(self._graph)
        root = self._subgraph_root(nn.Module())
        specs = {s.arg.name: s for s in self._graph_signature.input_specs}
        for node in list(graph.nodes):
            if node.op != "placeholder":
                continue
            spec = specs.get(node.name)
            if spec is None or spec.kind == InputKind.USER_INPUT:
                continue
            if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
                target = spec.target
                value = self._state_dict[target]
            else:
                target = "_" + spec.target
                value = self._constants[spec.target]
            _set_nested(root, target, value, spec.kind)
            with graph.inserting_before(node):
                attr = graph.get_attr(target)
            attr.meta.update(node.meta)
            node.replace_all_uses_with(attr)
            graph.erase_node(node)
        # get_attr nodes go after the user placeholders, as PyTorch writes them
        gm = fx.GraphModule(root, graph)
        _guard(gm, self)
        return gm


def _readable_graph(graph, name: str, indent: str) -> list:
    """The lines of ``graph`` printed as a class ``name`` with its branch graphs (``cond``)
    nested in it, as PyTorch prints an exported program."""
    lines = [f"{indent}class {name}(torch.nn.Module):"]
    params = []
    body = []
    for node in graph.nodes:
        val = node.meta.get("val")
        if node.op == "placeholder":
            params.append(f'{node.name}: "{_annot(val)}"')
        elif node.op == "output":
            outs = node.args[0]
            items = ", ".join(str(a) for a in outs) + ("," if len(outs) == 1 else "")
            body.append(f"return ({items})")
        else:
            ann = f': "{_annot(val)}"' if isinstance(val, Tensor) else ""
            body.append(f"{node.name}{ann} = {_call_text(node)}")
    lines.append(f"{indent}    def forward(self, {', '.join(params)}):")
    lines += [f"{indent}        " + b for b in body]
    for sub_name, sub in getattr(graph, "_subgraphs", {}).items():
        lines += [f"{indent}    ", *_readable_graph(sub.graph, sub_name, indent + "    ")]
    return lines


def _call_text(node) -> str:
    """A node's call as PyTorch prints it in an exported program."""
    import operator

    import ember

    target = node.target
    if node.op == "get_attr":
        return f"self.{target}"
    if target is ember.cond:
        target = "torch.ops.higher_order.cond"
    if target is operator.getitem:
        return f"{node.args[0]}[{node.args[1]}]"
    name = getattr(target, "__name__", str(target))
    if hasattr(target, "overloadpacket"):
        name = f"torch.ops.{target}"
    args = ", ".join([_arg_text(a) for a in node.args] +
                     [f"{k} = {_arg_text(v)}" for k, v in node.kwargs.items()])
    return f"{name}({args})"


def _arg_text(a) -> str:
    import numpy as np

    if isinstance(a, tuple):
        return "(" + ", ".join(_arg_text(x) for x in a) + ("," if len(a) == 1 else "") + ")"
    if isinstance(a, list):
        return "[" + ", ".join(_arg_text(x) for x in a) + "]"
    if isinstance(a, np.dtype):
        from .._core import dtype as _dt

        d = _dt.from_np.get(a)
        return f"torch.{d.name}" if d is not None else repr(a)
    if hasattr(a, "op") and hasattr(a, "name") and not isinstance(a, (str, bytes)):
        return a.name
    return repr(a)


def _set_nested(root, target, value, kind):
    from .. import nn

    *path, leaf = target.split(".")
    owner = root
    for part in path:
        child = owner._modules.get(part)
        if child is None:
            child = nn.Module()
            owner.add_module(part, child)
        owner = child
    if kind == InputKind.PARAMETER:
        owner.register_parameter(leaf, value if isinstance(value, nn.Parameter)
                                 else nn.Parameter(value))
    else:
        owner.register_buffer(leaf, value)


def _guard(gm, program):
    """Make ``gm`` check its inputs against the captured shapes first: a static dimension
    that differs fails as PyTorch's guards do; a dynamic one re-captures the source module
    at that size (cached per shape)."""
    names = program._graph_signature.user_inputs
    (ex_args, ex_kwargs) = program._example_inputs
    shapes = [tuple(t.shape) for t in tensor_leaves(ex_args) + tensor_leaves(ex_kwargs)]
    dynamic = program._dynamic
    cache = {}
    base = type(gm)

    def __call__(self, *args, **kwargs):
        given = tensor_leaves(args) + tensor_leaves(kwargs)
        if len(given) != len(shapes):
            raise TypeError(f"expected {len(shapes)} tensor inputs, got {len(given)}")
        changed = False
        for i, (t, shape, name) in enumerate(zip(given, shapes, names)):
            dims = dynamic.get(i, {})
            if t.ndim != len(shape):
                raise AssertionError(f"Guard failed: {name}.dim() == {len(shape)}")
            for d, (got, want) in enumerate(zip(t.shape, shape)):
                if got == want:
                    continue
                if d not in dims:
                    raise AssertionError(f"Guard failed: {name}.size()[{d}] == {want}")
                lo, hi = dims[d]
                # (as PyTorch's guards: a bound of 2 or less is not checked -- sizes 0 and 1
                # are specialised, not guarded)
                if hi is not None and got > hi:
                    raise AssertionError(f"Guard failed: {name}.size()[{d}] <= {hi}")
                if lo is not None and lo > 2 and got < lo:
                    raise AssertionError(f"Guard failed: {name}.size()[{d}] >= {lo}")
                changed = True
        if not changed:
            return unflatten(program._out_spec, list(base.__call__(self, *args, **kwargs)))
        key = tuple(tuple(t.shape) for t in given)
        other = cache.get(key)
        if other is None:
            if program._source is None:
                raise RuntimeError(
                    "this exported program was loaded from a file: ember captures graphs at "
                    "fixed sizes and re-captures the source module for new sizes of dynamic "
                    "dimensions, which a loaded program does not have; export again at "
                    f"this size ({key})")
            from . import export as _export

            other = cache[key] = _export(program._source, args, kwargs).module()
        return other(*args, **kwargs)

    gm.__class__ = type(base.__name__, (base,), {"__call__": __call__})


