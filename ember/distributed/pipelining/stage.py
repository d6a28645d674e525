"""One stage of a pipeline: a module run on this rank, fed by the previous stage's rank.

NOTE [ Pipeline messages ]
Activations go from stage ``s`` to ``s + 1`` and gradients from ``s`` to ``s - 1`` as
point-to-point messages on the stage's group, one per tensor. Each (kind, stage,
microbatch) has its own tag, so a rank holding several stages can post its receives in any
order without taking another stage's message; tensors of one output share the tag and
arrive in order. The schedule's runtime says when to send and when to post a receive
(SEND_F/RECV_F/SEND_B/RECV_B actions, NOTE [ Pipeline actions ] in _schedule_ir.py); a
compute action waits for the receive posted for it, or receives itself when none was.
Sends are only waited for at the end of the step, so a rank blocks only on what it
receives. Neighbouring stages on one rank hand their tensors over directly.

NOTE [ Split backward ]
A zero-bubble schedule runs a stage's backward in two actions: I computes the gradients of
the stage's inputs (what the previous stage waits for), W later the parameters'. I walks
the graph from the stage's outputs down to the inputs only, its ops skipping their
parameters' products, and keeps the gradients flowing into the ops that lead to
parameters; W runs just those ops' parameter side (NOTE [ Split backward walks ] in
ember/autograd/_split.py). No node runs twice; what I keeps is dropped by W. The
gradients equal those of one full backward (to rounding).

NOTE [ Pipeline stages with data parallelism ]
A stage module may be replicated over a data-parallel dimension, as PyTorch's runtime
allows: wrapped with ``fully_shard`` (FSDP2) or ``DistributedDataParallel``. Gradients
accumulate unreduced over the step's microbatches and are reduced once:
- FSDP: the table's UNSHARD gathers the stage's parameters before its first use and
  RESHARD puts the shards back after its last (the runtime checks the order, as
  PyTorch's); every backward runs with ``set_requires_gradient_sync(False)`` (and
  ``set_reshard_after_backward``/``set_is_last_backward`` False), so each parameter's
  full local gradient accumulates; REDUCE_GRAD turns sync back on and reduce-scatters
  the sums into the shards' ``.grad`` (averaged over dp), then divides by the number of
  microbatches.
- DDP: forwards and all backwards but the step's last run under ``no_sync``; the last
  (the last B or W of the stage) re-arms the reducer, whose hooks all-reduce the
  accumulated ``.grad`` as the parameters' gradients complete.
Shape inference runs the module under no_grad, which gathers an FSDP module's parameters
without a graph: they are put back at once, so the step gathers its own.
"""

from __future__ import annotations

import ember
from ember import nn

from ... import distributed as dist

__all__ = ["PipelineStage", "build_stage"]

_TAG_SPAN = 30000  # MPI guarantees tags up to 32767


def _tag(kind: int, stage: int, mb: int, num_stages: int) -> int:
    return 1 + ((mb * num_stages + stage) * 2 + kind) % _TAG_SPAN


def _as_tuple(out) -> tuple:
    if isinstance(out, ember.Tensor):
        return (out,)
    if isinstance(out, (tuple, list)):
        return tuple(out)
    raise TypeError(f"PipelineStage: a stage must return a tensor or a tuple of tensors, "
                    f"got {type(out).__name__}")


def _meta(t) -> tuple:
    return (tuple(t.shape), t.dtype)


def _metas(values) -> list:
    return [_meta(t) for t in values if isinstance(t, ember.Tensor)]


def _wants_grad(dtype) -> bool:
    return dtype.is_floating_point or dtype.is_complex


def _fsdp_modules(module) -> list:
    """The ``fully_shard`` units in ``module`` (itself included)."""
    from ..fsdp import FSDPModule

    return [m for m in module.modules() if isinstance(m, FSDPModule)]


def _is_fsdp(module) -> bool:
    from ..fsdp import FSDPModule

    return isinstance(module, FSDPModule)


def _is_ddp(module) -> bool:
    from ...nn.parallel import DistributedDataParallel

    return isinstance(module, DistributedDataParallel)


class _PipelineStageBase:
    """What every stage has: its module, its place in the pipeline, its messages and the
    per-microbatch state a schedule drives (``forward_one_chunk``, ``backward_one_chunk``)."""

    def __init__(self, submodule: nn.Module, stage_index: int, num_stages: int, device,
                 group=None):
        if not 0 <= stage_index < num_stages:
            raise ValueError(f"PipelineStage: stage_index {stage_index} is out of range for "
                             f"{num_stages} stages")
        self.submod = submodule
        self.stage_index = stage_index
        self.num_stages = num_stages
        self.device = ember.device(device) if device is not None else ember.device("cpu")
        self.group = group
        self.group_rank = dist.get_rank(group)
        self.group_size = dist.get_world_size(group)
        if self.group_size > num_stages:
            raise RuntimeError(f"PipelineStage: the group has {self.group_size} ranks but the "
                               f"pipeline only {num_stages} stages")
        # a schedule with several stages per rank loops them over the ranks (stage % size)
        self.stage_index_to_group_rank = {i: i % self.group_size for i in range(num_stages)}
        self.has_backward = False
        self.chunks: int | None = None
        self.inputs_meta: list | None = None
        self.outputs_meta: list | None = None
        self.clear_runtime_states()

    # -- place in the pipeline ----------------------------------------------------------------

    @property
    def is_first(self) -> bool:
        """Whether this is stage 0 (it takes the user's inputs)."""
        return self.stage_index == 0

    @property
    def is_last(self) -> bool:
        """Whether this is the last stage (it gives the outputs and the loss)."""
        return self.stage_index == self.num_stages - 1

    def _peer(self, stage_index: int) -> int:
        return self.stage_index_to_group_rank[stage_index]

    def clear_runtime_states(self) -> None:
        """Forget the previous step's microbatches (a schedule calls it at each step)."""
        self.fwd_cache: dict = {}  # mb -> (outputs, inputs)
        self.bwd_cache: dict = {}  # mb -> gradients of the inputs, until sent or handed over
        self.output_chunks: list = []
        self._sends: list = []
        self._posted: dict = {}  # (kind, mb) -> (buffers, works) of a posted receive
        self._handed: dict = {}  # (kind, mb) -> tensors handed over by a stage on this rank
        self._weight_todo: dict = {}  # mb -> (roots, grads) for the W action
        self._backward_done = 0

    # -- shapes -------------------------------------------------------------------------------

    def _prepare_forward_infra(self, num_microbatches: int, args: tuple, kwargs: dict,
                               prev_stage=None, next_is_local: bool = False) -> None:
        self.chunks = num_microbatches
        if self.inputs_meta is None:
            self._shape_inference(args, kwargs, prev_stage, next_is_local)

    def _shape_inference(self, args: tuple, kwargs: dict, prev_stage=None,
                         next_is_local: bool = False) -> None:
        """Learn the shapes this stage receives and sends: stage 0 from the first
        microbatch, every other stage from its predecessor (its message, or the stage
        itself when it is on this rank), passed on in order."""
        if self.is_first:
            inputs = tuple(args)
        else:
            if prev_stage is not None:
                metas = prev_stage.outputs_meta
            else:
                box = [None]
                dist.recv_object_list(box, src=None, group=self.group,
                                      group_src=self._peer(self.stage_index - 1))
                metas = box[0]
            inputs = tuple(ember.zeros(shape, dtype=dtype, device=self.device)
                           for shape, dtype in metas)
        self.inputs_meta = _metas(inputs)
        with ember.no_grad():
            outputs = _as_tuple(self.submod(*inputs, **(kwargs if self.is_first else {})))
        for m in _fsdp_modules(self.submod):  # NOTE [ Pipeline stages with data parallelism ]
            m.reshard()
        self.outputs_meta = _metas(outputs)
        if not self.is_last and not next_is_local:
            dist.send_object_list([self.outputs_meta], group=self.group,
                                  group_dst=self._peer(self.stage_index + 1))

    # -- messages (NOTE [ Pipeline messages ]) ------------------------------------------------

    def _send(self, tensors, kind: int, to_stage: int, mb: int) -> None:
        tag = _tag(kind, self.stage_index, mb, self.num_stages)
        for t in tensors:
            t = t.detach().contiguous()
            self._sends.append(dist.isend(t, group=self.group, tag=tag,
                                          group_dst=self._peer(to_stage)))

    def _grad_metas(self) -> list:
        return [m for m in self.outputs_meta if _wants_grad(m[1])]

    def _post_recv(self, kind: int, mb: int) -> None:
        """Start receiving microbatch ``mb``'s activations (kind 0, from the previous stage)
        or output gradients (kind 1, from the next stage)."""
        metas, peer = ((self.inputs_meta, self.stage_index - 1) if kind == 0
                       else (self._grad_metas(), self.stage_index + 1))
        tag = _tag(kind, peer, mb, self.num_stages)
        bufs = [ember.empty(shape, dtype=dtype, device=self.device) for shape, dtype in metas]
        works = [dist.irecv(b, group=self.group, tag=tag, group_src=self._peer(peer))
                 for b in bufs]
        self._posted[kind, mb] = (bufs, works)

    def _received(self, kind: int, mb: int) -> list:
        """What a compute action consumes: the tensors a stage on this rank handed over, or
        the posted receive's buffers once it completes (posted now when it was not)."""
        if (kind, mb) in self._handed:
            return self._handed.pop((kind, mb))
        if (kind, mb) not in self._posted:
            self._post_recv(kind, mb)
        bufs, works = self._posted.pop((kind, mb))
        for w in works:
            w.wait()
        return bufs

    def set_local_fwd_input(self, prev_stage_outputs, mb_index: int) -> None:
        """Take microbatch ``mb_index``'s inputs from the previous stage on this rank instead
        of a message (NOTE [ Pipeline messages ]).

        Args:
            prev_stage_outputs: the previous stage's output (a tensor or a tuple).
            mb_index (int): the microbatch.

        Example::

            >>> stage.set_local_fwd_input(prev.fwd_cache[0][0], 0)  # doctest: +SKIP
        """
        self._handed[0, mb_index] = [t.detach() for t in _as_tuple(prev_stage_outputs)
                                     if isinstance(t, ember.Tensor)]

    def get_local_bwd_output(self, mb_index: int) -> list:
        """Microbatch ``mb_index``'s input gradients, for the previous stage on this rank
        (what would otherwise be sent to it).

        Args:
            mb_index (int): the microbatch.

        Returns:
            list of Tensor

        Example::

            >>> prev.set_local_bwd_input(stage.get_local_bwd_output(0), 0)  # doctest: +SKIP
        """
        return self.bwd_cache.pop(mb_index)

    def set_local_bwd_input(self, next_stage_bwd_outputs, mb_index: int) -> None:
        """Take microbatch ``mb_index``'s output gradients from the next stage on this rank
        instead of a message.

        Args:
            next_stage_bwd_outputs (list or tuple): the next stage's input gradients.
            mb_index (int): the microbatch.

        Example::

            >>> prev.set_local_bwd_input(stage.get_local_bwd_output(0), 0)  # doctest: +SKIP
        """
        self._handed[1, mb_index] = list(next_stage_bwd_outputs)

    def _send_activations(self, mb: int) -> None:
        """Send microbatch ``mb``'s outputs to the next stage (the SEND_F action)."""
        self._send(self.fwd_cache[mb][0], 0, self.stage_index + 1, mb)

    def _send_input_grads(self, mb: int) -> None:
        """Send microbatch ``mb``'s input gradients to the previous stage (SEND_B)."""
        self._send(self.bwd_cache.pop(mb), 1, self.stage_index - 1, mb)

    def _wait_sends(self) -> None:
        for w in self._sends:
            w.wait()
        self._sends = []

    # -- one microbatch -----------------------------------------------------------------------

    def forward_one_chunk(self, fwd_chunk_id: int, args: tuple = (), kwargs: dict | None = None):
        """Run this stage's module on microbatch ``fwd_chunk_id``; its outputs stay here
        until the schedule sends them (NOTE [ Pipeline messages ]).

        Args:
            fwd_chunk_id (int): the microbatch.
            args (tuple): the microbatch's inputs (first stage only; others receive theirs).
            kwargs (dict, optional): keyword inputs (first stage only).

        Returns:
            The module's output.
        """
        if self.is_first:
            inputs = tuple(args)
        else:
            inputs = tuple(self._received(0, fwd_chunk_id))
            if self.has_backward:
                for t in inputs:
                    if _wants_grad(t.dtype):
                        t.requires_grad_(True)
        kwargs = (kwargs or {}) if self.is_first else {}
        if _is_ddp(self.submod):  # NOTE [ Pipeline stages with data parallelism ]
            with self.submod.no_sync():
                output = self.submod(*inputs, **kwargs)
        else:
            output = self.submod(*inputs, **kwargs)
        outputs = _as_tuple(output)
        self.fwd_cache[fwd_chunk_id] = (outputs, inputs)
        if self.is_last:
            self.output_chunks.append(output)
        return output

    def _backward_roots(self, mb: int, outputs, loss) -> tuple:
        """The tensors to back-propagate from and their gradients: the loss on the last
        stage, else the outputs and the gradients the next stage gives for them."""
        if self.is_last:
            if loss is None:
                raise RuntimeError("PipelineStage: the last stage needs the microbatch's loss "
                                   "for its backward (give the schedule a loss_fn)")
            return [loss], None
        received = iter(self._received(1, mb))
        roots, grads = [], []
        for out in outputs:
            if not _wants_grad(out.dtype):
                continue
            g = next(received)
            if out.requires_grad:
                roots.append(out)
                grads.append(g)
        return roots, grads

    def _with_data_parallel(self, run, roots, last_backward: bool) -> None:
        """Run one backward piece the way the stage module's data parallelism wants it
        (NOTE [ Pipeline stages with data parallelism ])."""
        mod = self.submod
        if _is_ddp(mod):
            if last_backward:
                mod._prepare_for_backward(roots)
                run()
            else:
                with mod.no_sync():
                    run()
        elif _is_fsdp(mod):
            mod.set_is_last_backward(False)
            mod.set_reshard_after_backward(False)
            mod.set_requires_gradient_sync(False)
            run()
        else:
            run()

    def _trained_params(self) -> list:
        """The module's parameters as the optimizer holds them: a ``fully_shard`` unit's
        shards even while its full parameters are gathered (between UNSHARD and RESHARD
        the module holds the gathered ones)."""
        shards = {}
        for m in _fsdp_modules(self.submod):
            state = m._fsdp_state
            if state.gathered:
                for info in state.infos:
                    shards[id(info.owner._parameters[info.name])] = info.shard
        return [shards.get(id(p), p) for p in self.submod.parameters()]

    def _params(self) -> list:
        """The leaves the W step fills (a DTensor parameter's local piece)."""
        return [getattr(p, "_local_tensor", p) for p in self._trained_params()
                if p.requires_grad]

    def backward_one_chunk(self, bwd_chunk_id: int, loss=None, full_backward: bool = True,
                           last_backward: bool = False) -> None:
        """Back-propagate microbatch ``bwd_chunk_id`` through this stage; its input gradients
        stay here until the schedule sends them.

        Args:
            bwd_chunk_id (int): the microbatch.
            loss (Tensor, optional): its loss (last stage only).
            full_backward (bool): gradients of inputs and parameters at once (True), or of
                the inputs only, the parameters left to ``backward_weight_one_chunk``
                (NOTE [ Split backward ]).
            last_backward (bool): whether it is the stage's last backward of the step (a
                DDP stage module reduces its gradients in it).
        """
        outputs, inputs = self.fwd_cache.pop(bwd_chunk_id)
        roots, grads = self._backward_roots(bwd_chunk_id, outputs, loss)
        wanted = [t for t in inputs if _wants_grad(t.dtype)]
        if full_backward:
            def run():
                if roots:
                    ember.autograd.backward(roots, grad_tensors=grads)

            self._with_data_parallel(run, roots, last_backward)
            input_grads = [t.grad for t in wanted]
        else:
            from ...autograd._split import split_input_backward

            needing = [t for t in wanted if t.requires_grad]
            found, plan = split_input_backward(roots, grads, needing, self._params()) \
                if roots else ([None] * len(needing), None)
            found = iter(found)
            input_grads = [next(found) if t.requires_grad else None for t in wanted]
            self._weight_todo[bwd_chunk_id] = (plan, roots)
        if not self.is_first:
            self.bwd_cache[bwd_chunk_id] = [g if g is not None else ember.zeros_like(t)
                                            for g, t in zip(input_grads, wanted)]
        self._backward_done += 1

    def backward_weight_one_chunk(self, bwd_chunk_id: int, last_backward: bool = False) -> None:
        """The parameter gradients of microbatch ``bwd_chunk_id``, after its
        ``backward_one_chunk(..., full_backward=False)`` (NOTE [ Split backward ]).

        Args:
            bwd_chunk_id (int): the microbatch.
            last_backward (bool): whether it is the stage's last backward of the step.
        """
        if bwd_chunk_id not in self._weight_todo:
            raise RuntimeError(f"PipelineStage: stage {self.stage_index} runs the weight "
                               f"backward of microbatch {bwd_chunk_id} before its input "
                               "backward (backward_one_chunk(..., full_backward=False))")
        plan, roots = self._weight_todo.pop(bwd_chunk_id)
        if plan is not None:
            from ...autograd._split import split_weight_backward

            self._with_data_parallel(lambda: split_weight_backward(plan), roots,
                                     last_backward)

    def perform_reduce_grad(self, grad_scale_factor: int) -> None:
        """Finish this stage's gradients once its last backward has run (the REDUCE_GRAD
        action): a ``fully_shard`` module reduce-scatters the gradients its backwards
        accumulated (NOTE [ Pipeline stages with data parallelism ]); then they are divided
        by ``grad_scale_factor``.

        Args:
            grad_scale_factor (int): the divisor (1 leaves them as they are).

        Example::

            >>> stage.perform_reduce_grad(4)  # doctest: +SKIP
        """
        if _is_fsdp(self.submod):
            mod = self.submod
            mod.set_is_last_backward(True)
            mod.set_reshard_after_backward(True)
            mod.set_requires_gradient_sync(True)
            for m in _fsdp_modules(mod):
                m._fsdp_state.post_backward()
        self.scale_grads(grad_scale_factor)

    def scale_grads(self, grad_scale_factor: int) -> None:
        """Divide this stage's parameter gradients by ``grad_scale_factor`` (the number of
        microbatches, so that a step's gradient is the batch mean).

        Args:
            grad_scale_factor (int): the divisor.
        """
        if grad_scale_factor != 1:
            with ember.no_grad():
                for p in self._trained_params():
                    if p.grad is not None:
                        p.grad.div_(grad_scale_factor)


class PipelineStage(_PipelineStageBase):
    """One stage of a pipeline, made by hand: this rank's piece of the model.

    Shapes come from ``input_args``/``output_args`` (one microbatch's) or, when not given,
    are learned at the first step: stage 0 runs the first microbatch, each later stage
    receives its input shapes from its predecessor.

    Args:
        submodule (nn.Module): this stage's part of the model.
        stage_index (int): its place in the pipeline.
        num_stages (int): the number of stages.
        device: where its tensors live.
        input_args (Tensor or tuple, optional): example inputs of one microbatch.
        output_args (Tensor or tuple, optional): example outputs of one microbatch.
        output_grads, input_grads: accepted for torch's signature.
        group (ProcessGroup, optional): the pipeline's group (default: the world).
        dw_builder, get_mesh: accepted for torch's signature.

    Example::

        >>> stage = PipelineStage(part, rank, 2, ember.device("cpu"))  # doctest: +SKIP
        >>> ScheduleGPipe(stage, n_microbatches=4, loss_fn=loss_fn).step(x)  # doctest: +SKIP
    """

    def __init__(self, submodule: nn.Module, stage_index: int, num_stages: int, device,
                 input_args=None, output_args=None, output_grads=None, input_grads=None,
                 group=None, dw_builder=None, get_mesh=None):
        super().__init__(submodule, stage_index, num_stages, device, group)
        if input_args is not None:
            inputs = _as_tuple(input_args)
            self.inputs_meta = _metas(inputs)
            if output_args is None:
                with ember.no_grad():
                    output_args = self.submod(*inputs)
            self.outputs_meta = _metas(_as_tuple(output_args))


class _PipelineStage(_PipelineStageBase):
    """A stage built from a traced ``Pipe``: its shapes are known from the trace."""

    def __init__(self, submodule, stage_index: int, num_stages: int, device, inputs_meta,
                 outputs_meta, group=None):
        super().__init__(submodule, stage_index, num_stages, device, group)
        self.inputs_meta = list(inputs_meta)
        self.outputs_meta = list(outputs_meta)


def build_stage(stage_module: nn.Module, stage_index: int, pipe_info, device, group=None):
    """A stage for ``stage_module`` of a traced pipeline, shapes from the trace.

    Args:
        stage_module (nn.Module): ``pipe.get_stage_module(stage_index)``.
        stage_index (int): the stage.
        pipe_info: ``pipe.info()``.
        device: where its tensors live.
        group (ProcessGroup, optional): the pipeline's group.

    Returns:
        _PipelineStage

    Example::

        >>> stage = build_stage(pipe.get_stage_module(r), r, pipe.info(), dev)  # doctest: +SKIP
    """
    ins, outs = pipe_info.stage_metas[stage_index]
    return _PipelineStage(stage_module, stage_index, pipe_info.num_stages, device, ins, outs,
                          group)
