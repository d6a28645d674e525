"""``pipeline``: cut a model into stages by tracing it with ``ember.fx``.

NOTE [ Cutting a traced model ]
The root's ``forward`` is traced symbolically; its submodules are kept whole (one
``call_module`` node each) except those on the way to a split point, which are traced
through so that the named module shows as a node. Split points come from ``split_spec``
(before or after a named module) and from ``pipe_split()`` calls in the traced code. Each
stage becomes a ``GraphModule`` holding the submodules and attributes it uses under their
original names (so state-dict keys stay the model's). A stage's inputs are every value made
before it and used by it or later, so values a later stage needs pass through the stages in
between; only tensors may cross. Parameters used by two stages are copied into both (each
stage then has its own gradient: NOTE [ Parameters of several stages ]).

NOTE [ Parameters of several stages ]
A parameter (or buffer) that more than one stage uses -- an embedding tied to the LM head,
a module called in two stages -- is replicated as PyTorch's ``pipeline`` replicates it: each
stage after the first that holds it gets its own copy, under the name it has in that stage,
with the same values. The copies are independent leaves: each stage's backward fills its own
``.grad``, nothing sums them (as in PyTorch, averaging the tied copies' gradients across the
stages' ranks before the optimizer step is the training script's business), and an optimizer
over several stages of one process sees no parameter twice. Without the copies, stages held
by one process (interleaved and V schedules put the first and the last stage on rank 0)
would share one tensor where PyTorch's have two.
"""

from __future__ import annotations

import contextvars
import copy
import enum
import operator
from typing import Any

import ember
from ember import fx, nn

from .stage import _as_tuple, _metas, _PipelineStage

__all__ = ["Pipe", "pipe_split", "SplitPoint", "pipeline", "PipeInfo"]

_ACTIVE_TRACER: contextvars.ContextVar = contextvars.ContextVar("pipeline_tracer",
                                                                default=None)


class SplitPoint(enum.Enum):
    """Where a split named in ``split_spec`` cuts: before or after the named module.

    Example::

        >>> from ember.distributed.pipelining import SplitPoint
        >>> SplitPoint.BEGINNING.name
        'BEGINNING'
    """

    BEGINNING = 1
    END = 2


def pipe_split() -> None:
    """Mark a stage boundary inside a model's ``forward`` for ``pipeline``; does nothing when
    the model runs normally.

    Example::

        >>> from ember.distributed.pipelining import pipe_split
        >>> pipe_split()  # outside tracing: no effect
    """
    tracer = _ACTIVE_TRACER.get()
    if tracer is not None:
        tracer.graph.call_function(pipe_split, ())


class _PipeTracer(fx.Tracer):
    """Keeps every submodule whole but those containing a split point."""

    def __init__(self, split_names):
        super().__init__()
        self._open = {".".join(name.split(".")[:i]) for name in split_names
                      for i in range(1, name.count(".") + 1)}

    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        return module_qualified_name not in self._open


class PipeInfo:
    """What a stage needs to know of its pipeline: the number of stages and each stage's
    input and output shapes from the trace's example microbatch."""

    def __init__(self, graph, num_stages: int, has_loss_and_backward: bool, stage_metas):
        self.graph = graph
        self.num_stages = num_stages
        self.has_loss_and_backward = has_loss_and_backward
        self.stage_metas = stage_metas


class Pipe(nn.Module):
    """A model cut into stages by ``pipeline``: ``split_gm`` runs them one after another;
    ``get_stage_module(i)`` is stage ``i``'s module and ``build_stage`` makes its stage.

    Args:
        split_gm: the traced model whose submodules ``submod_0``... are the stages.
        num_stages (int): how many stages.
        has_loss_and_backward (bool): accepted for torch's signature (ember's schedules
            take the loss function).
        loss_spec: accepted for torch's signature.
        stage_metas: the example shapes of each stage's inputs and outputs.

    Returns:
        A module running every stage in order.

    Example::

        >>> pipe = pipeline(model, mb_args=(x[:2],), split_spec=spec)  # doctest: +SKIP
        >>> stage = pipe.build_stage(rank, ember.device("cpu"))  # doctest: +SKIP
    """

    def __init__(self, split_gm, num_stages: int, has_loss_and_backward: bool = False,
                 loss_spec=None, stage_metas=None):
        super().__init__()
        self.split_gm = split_gm
        self.num_stages = num_stages
        self.has_loss_and_backward = has_loss_and_backward
        self.loss_spec = loss_spec
        self._stage_metas = stage_metas

    def forward(self, *args, **kwargs):
        """Run every stage in order on one process (for checking the cut)."""
        return self.split_gm(*args, **kwargs)

    def print_readable(self) -> None:
        """Print the code of the top-level module and of each stage."""
        self.split_gm.print_readable()

    def get_stage_module(self, stage_idx: int) -> nn.Module:
        """Stage ``stage_idx``'s module.

        Args:
            stage_idx (int): the stage.

        Returns:
            nn.Module (a ``GraphModule`` keeping the model's parameter names).
        """
        if not 0 <= stage_idx < self.num_stages:
            raise ValueError(f"Pipe.get_stage_module: stage {stage_idx} out of range for "
                             f"{self.num_stages} stages")
        return getattr(self.split_gm, f"submod_pp_{stage_idx}")

    def info(self) -> PipeInfo:
        """The stage count and shapes ``build_stage`` needs.

        Returns:
            PipeInfo
        """
        return PipeInfo(self.split_gm.graph, self.num_stages, self.has_loss_and_backward,
                        self._stage_metas)

    def build_stage(self, stage_index: int, device, group=None):
        """The pipeline stage ``stage_index`` for this rank.

        Args:
            stage_index (int): the stage.
            device: where its tensors live.
            group (ProcessGroup, optional): the pipeline's group.

        Returns:
            _PipelineStage
        """
        ins, outs = self._stage_metas[stage_index]
        return _PipelineStage(self.get_stage_module(stage_index), stage_index, self.num_stages,
                              device, ins, outs, group)


def _assign_partitions(graph, begin: set, end: set) -> dict:
    """Node -> stage number (placeholders -1, get_attr nodes their first user's stage)."""
    part, current, bump, used = {}, 0, False, False
    for node in graph.nodes:
        if node.op == "placeholder":
            part[node] = -1
            continue
        if node.op == "call_function" and node.target is pipe_split:
            current, bump, used = current + 1, False, False
            continue
        if bump:
            current, bump, used = current + 1, False, False
        if node.op == "call_module" and node.target in begin and used:
            current, used = current + 1, False
        if node.op == "get_attr":
            continue
        part[node] = current
        used = used or node.op != "output"
        if node.op == "call_module" and node.target in end:
            bump = True
    last = part[next(n for n in graph.nodes if n.op == "output")]
    for node in graph.nodes:
        if node.op == "get_attr":
            users = [part[u] for u in node.users if u in part]
            part[node] = min(users) if users else last
    return part


def _stage_graphs(graph, part: dict, n: int) -> list:
    nodes = [nd for nd in graph.nodes if nd.target is not pipe_split]
    order = {nd: i for i, nd in enumerate(nodes)}
    # last stage that uses each value (the output node counts as the last stage)
    last_use = {}
    for nd in nodes:
        for u in nd.users:
            if u in part:
                last_use[nd] = max(last_use.get(nd, -1), part[u])

    def crossing(k):  # values made before stage k, used at k or later (get_attr re-emitted)
        return [nd for nd in nodes if nd.op != "get_attr" and part[nd] < k
                and last_use.get(nd, -1) >= k]

    graphs = []
    for k in range(n):
        g = fx.Graph()
        env: dict = {}
        if k == 0:
            for nd in nodes:
                if nd.op == "placeholder":
                    env[nd] = g.node_copy(nd)
        else:
            for nd in crossing(k):
                env[nd] = g.placeholder(nd.name)
        def lookup(a, g=g, env=env):
            return env[a] if a in env else _attr(g, env, a)

        for nd in sorted((nd for nd in nodes if part[nd] == k and nd.op != "placeholder"),
                         key=order.get):
            copied = g.node_copy(nd, lookup)
            if nd.op != "output":
                env[nd] = copied
        if k < n - 1:
            outs = [env[nd] if nd in env else _attr(g, env, nd) for nd in crossing(k + 1)]
            g.output(outs[0] if len(outs) == 1 else tuple(outs))
        graphs.append(g)
    return graphs


def _attr(g, env, node):
    if node.op != "get_attr":
        raise RuntimeError(f"pipeline: value {node.name} is used by a stage it does not reach")
    env[node] = g.get_attr(node.target)
    return env[node]


def _replicate_shared(stage_mods) -> None:
    """Give each stage its own copy of every parameter or buffer an earlier stage also holds
    (NOTE [ Parameters of several stages ])."""
    seen: set = set()
    for stage in stage_mods:
        tensors = list(stage.parameters()) + list(stage.buffers())
        shared = {id(t) for t in tensors if id(t) in seen}
        seen.update(id(t) for t in tensors)
        if not shared:
            continue
        # one memo per stage: what is not shared stays the model's own tensor, and a tensor
        # tied within the stage (two modules, one weight) stays tied in the copy
        memo = {id(t): t for t in tensors if id(t) not in shared}
        for name, child in list(stage.named_children()):
            if any(id(t) in shared for t in list(child.parameters()) + list(child.buffers())):
                setattr(stage, name, copy.deepcopy(child, memo))
        for table in (stage._parameters, stage._buffers):
            for name, t in list(table.items()):
                if t is not None and id(t) in shared:
                    table[name] = copy.deepcopy(t, memo)


def pipeline(module: nn.Module, mb_args: tuple, mb_kwargs: dict | None = None,
             split_spec: dict | None = None, split_policy=None) -> Pipe:
    """Cut ``module`` into pipeline stages (NOTE [ Cutting a traced model ]).

    Args:
        module (nn.Module): the whole model.
        mb_args (tuple): one microbatch's positional inputs (to trace and to learn shapes).
        mb_kwargs (dict, optional): one microbatch's keyword inputs.
        split_spec (dict, optional): module name -> ``SplitPoint`` (cut before or after it).
        split_policy (callable, optional): ``GraphModule -> GraphModule`` run on the traced
            graph before cutting (it may insert ``pipe_split`` calls).

    Returns:
        Pipe

    Example::

        >>> import ember
        >>> from ember.distributed.pipelining import pipeline, SplitPoint
        >>> model = ember.nn.Sequential(ember.nn.Linear(4, 4), ember.nn.Linear(4, 2))
        >>> pipe = pipeline(model, (ember.ones(2, 4),), split_spec={"1": SplitPoint.BEGINNING})
        >>> pipe.num_stages
        2
        >>> list(pipe.get_stage_module(1).state_dict())
        ['1.weight', '1.bias']
    """
    split_spec = dict(split_spec or {})
    mb_kwargs = dict(mb_kwargs or {})
    tracer = _PipeTracer(split_spec)
    token = _ACTIVE_TRACER.set(tracer)
    try:
        graph = tracer.trace(module)
    finally:
        _ACTIVE_TRACER.reset(token)
    if split_policy is not None:
        graph = split_policy(fx.GraphModule(module, graph)).graph
    begin = {k for k, v in split_spec.items() if v == SplitPoint.BEGINNING}
    end = {k for k, v in split_spec.items() if v == SplitPoint.END}
    modules = {nd.target for nd in graph.nodes if nd.op == "call_module"}
    missing = (begin | end) - modules
    if missing:
        raise ValueError(f"pipeline: split_spec names modules the traced forward does not call: "
                         f"{sorted(missing)}")
    part = _assign_partitions(graph, begin, end)
    n = max(v for v in part.values()) + 1
    stage_mods = [fx.GraphModule(module, g) for g in _stage_graphs(graph, part, n)]
    _replicate_shared(stage_mods)

    # the top-level module: the stages called one after another
    top = fx.Graph()
    ph = [top.node_copy(nd) for nd in graph.nodes if nd.op == "placeholder"]
    values = ph
    for k in range(n):
        out = top.call_module(f"submod_pp_{k}", tuple(values))
        width = len(stage_mods[k + 1].graph.find_nodes(op="placeholder")) if k + 1 < n else 1
        values = [top.call_function(operator.getitem, (out, i)) for i in range(width)] \
            if width > 1 else [out]
    top.output(values[0])
    holder = nn.Module()
    for k, m in enumerate(stage_mods):
        holder.add_module(f"submod_pp_{k}", m)
    split_gm = fx.GraphModule(holder, top)

    # shapes of each stage's inputs and outputs from the example microbatch
    metas = []
    with ember.no_grad():
        inputs: Any = tuple(mb_args)
        kwargs = mb_kwargs
        for k, m in enumerate(stage_mods):
            out = m(*inputs, **kwargs)
            outs = _as_tuple(out)
            for v in outs:
                if not isinstance(v, ember.Tensor) and k + 1 < n:
                    raise TypeError(f"pipeline: stage {k} passes a {type(v).__name__} to stage "
                                    f"{k + 1}; only tensors can cross a stage boundary")
            metas.append((_metas(inputs), _metas(outs)))
            inputs, kwargs = outs, {}
    return Pipe(split_gm, n, stage_metas=metas)

