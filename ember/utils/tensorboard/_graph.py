"""``SummaryWriter.add_graph``: a module's op graph, traced through the dispatcher.

NOTE [ Graph trace through the dispatcher ]
PyTorch builds the graph with ``torch.jit.trace``. Ember has no JIT; it has one door
that every op call goes through (NOTE [ Dispatch ] in ember/_dispatch.py). So the model
runs once, under ``no_grad``, with a ``TorchDispatchMode`` that records each op call: its
name (``aten::addmm``), which earlier node or model input or parameter produced each
tensor argument (looked up by the tensor's identity; every tensor seen is kept alive for
the trace so that identities are not reused), and its output shapes. Global forward hooks
on ``nn.Module`` keep a stack of scopes, named as PyTorch names them (``Net/Linear[fc1]``),
so TensorBoard folds each submodule into a box. The result is a TensorFlow ``GraphDef``
with PyTorch's conventions: model inputs and outputs are ``IO Node`` s under ``input/`` and
``output/``, parameters and buffers are ``prim::GetAttr`` nodes in their module's scope,
and tensors made outside any recorded op are ``prim::Constant``. A mode runs its op with
itself popped, so composite ops show as one node (as ``aten::linear`` does in PyTorch).
"""

from __future__ import annotations

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

from ..._core.tensor import Tensor
from .._python_dispatch import TorchDispatchMode
from .._pytree import tensor_leaves




def _shapes_attr(tensors) -> AttrValue:
    shapes = [TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(d)) for d in t.shape])
              for t in tensors]
    return AttrValue(list=AttrValue.ListValue(shape=shapes))


def _describe(args, kwargs) -> str:
    """The op's non-tensor arguments, as PyTorch's graph shows attributes: ``{ k : v }``."""
    items = [f"{i} : {a}" for i, a in enumerate(args)
             if not tensor_leaves(a) and a is not None]
    items += [f"{k} : {v}" for k, v in kwargs.items() if not tensor_leaves(v) and v is not None]
    return "{ " + ", ".join(items) + " }" if items else "{}"


class _GraphTracer(TorchDispatchMode):
    """Records each op call as a ``NodeDef`` (NOTE [ Graph trace through the dispatcher ])."""

    def __init__(self, model):
        super().__init__()
        self.nodes: list[NodeDef] = []
        self.producer: dict[int, str] = {}  # id(tensor) -> node name ("name" or "name:k")
        self.keep: list[Tensor] = []         # tensors whose ids are in ``producer``
        self.scopes = [type(model).__name__]
        self.module_scope = {}
        self.params = {}                     # id(tensor) -> (scope, attribute name)
        self.count = 0
        for path, m in model.named_modules():
            scope = type(model).__name__
            owner = model
            for part in path.split(".") if path else []:
                owner = getattr(owner, part) if not part.isdigit() else owner._modules[part]
                scope += f"/{type(owner).__name__}[{part}]"
            self.module_scope[id(m)] = scope
            for name, t in list(m._parameters.items()) + list(m._buffers.items()):
                if t is not None and id(t) not in self.params:
                    self.params[id(t)] = (scope, name)

    # -- naming tensors --------------------------------------------------------------------

    def _name_of(self, t: Tensor) -> str:
        name = self.producer.get(id(t))
        if name is not None:
            return name
        if id(t) in self.params:
            scope, attr = self.params[id(t)]
            name = f"{scope}/{attr}"
            self.nodes.append(NodeDef(name=name, op="prim::GetAttr", attr={
                "attr": AttrValue(s=f"{{ name :  {attr} }}".encode()),
                "_output_shapes": _shapes_attr([t])}))
        else:
            self.count += 1
            name = f"{self.scopes[-1]}/constant.{self.count}"
            self.nodes.append(NodeDef(name=name, op="prim::Constant", attr={
                "attr": AttrValue(s=b"{}"), "_output_shapes": _shapes_attr([t])}))
        self._bind(t, name)
        return name

    def _bind(self, t: Tensor, name: str) -> None:
        self.producer[id(t)] = name
        self.keep.append(t)

    def add_inputs(self, args) -> None:
        for i, t in enumerate(tensor_leaves(args)):
            name = f"input/input.{i}"
            self.nodes.append(NodeDef(name=name, op="IO Node", attr={
                "attr": AttrValue(s=b""), "_output_shapes": _shapes_attr([t])}))
            self._bind(t, name)

    def add_outputs(self, out) -> None:
        for i, t in enumerate(tensor_leaves(out)):
            self.nodes.append(NodeDef(name=f"output/output.{i}", op="IO Node",
                                      input=[self._name_of(t)], attr={
                                          "attr": AttrValue(s=b""),
                                          "_output_shapes": _shapes_attr([t])}))

    # -- the mode ---------------------------------------------------------------------------

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        packet = getattr(func, "overloadpacket", None)
        op = getattr(packet, "_qualified_op_name", None) or str(func)
        inputs = [self._name_of(t) for t in tensor_leaves(args) + tensor_leaves(kwargs)]
        self.count += 1
        name = f"{self.scopes[-1]}/{op.split('::')[-1]}.{self.count}"
        outs = tensor_leaves(out)
        self.nodes.append(NodeDef(name=name, op=op, input=inputs, attr={
            "attr": AttrValue(s=_describe(args, kwargs).encode()),
            "_output_shapes": _shapes_attr(outs)}))
        for k, t in enumerate(outs):
            self._bind(t, name if k == 0 else f"{name}:{k}")
        return out

    def pre_hook(self, module, args):
        self.scopes.append(self.module_scope.get(id(module), self.scopes[-1]))

    def post_hook(self, module, args, output):
        if len(self.scopes) > 1:
            self.scopes.pop()


def graph(model, args, verbose=False, use_strict_trace=True):
    """Trace ``model(*args)`` through the dispatcher into a ``GraphDef`` and its ``RunMetadata``.

    Args:
        model: an ``nn.Module``.
        args: a tensor, a tuple/list of tensors, or None (no inputs).
        verbose: print the recorded nodes.
        use_strict_trace: accepted for PyTorch's signature (ember's trace records whatever
            the model returns).

    Returns:
        (GraphDef, RunMetadata), as ``FileWriter.add_graph`` takes them.

    Example::

        >>> g, _ = graph(ember.nn.Linear(3, 2), ember.ones(1, 3))
        >>> [n.op for n in g.node if n.op.startswith("aten")]
        ['aten::linear']
    """
    from ... import no_grad
    from ...nn.modules import module as _module

    if args is None:
        args = ()
    elif isinstance(args, Tensor):
        args = (args,)
    else:
        args = tuple(args)
    tracer = _GraphTracer(model)
    tracer.add_inputs(args)
    pre = _module.register_module_forward_pre_hook(tracer.pre_hook)
    post = _module.register_module_forward_hook(tracer.post_hook)
    try:
        with no_grad(), tracer:
            out = model(*args)
    finally:
        pre.remove()
        post.remove()
    tracer.add_outputs(out)
    if verbose:
        for n in tracer.nodes:
            print(f"{n.name} = {n.op}({', '.join(n.input)})")
    stats = RunMetadata(step_stats=StepStats(dev_stats=[DeviceStepStats(device="/device:CPU:0")]))
    return GraphDef(node=tracer.nodes, versions=VersionDef(producer=22)), stats
