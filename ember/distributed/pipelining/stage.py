"""One stage of a pipeline: a module run on this rank, fed by the previous stage's rank.

NOTE [ Pipeline messages ]
Activations go from stage ``s`` to ``s + 1`` and gradients from ``s`` to ``s - 1`` as
point-to-point sends on the stage's group, one message per tensor. Each (kind, stage,
microbatch) has its own tag, so a rank holding several stages (looped schedules) can post
its receives in any order without taking another stage's message; tensors of one output
share the tag and arrive in order. Sends are started and only waited for at the end of the
schedule's step, so a schedule blocks only on what it receives.
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
        self.fwd_cache: dict = {}
        self.output_chunks: list = []
        self._sends: list = []
        self._backward_done = 0

    # -- shapes -------------------------------------------------------------------------------

    def _prepare_forward_infra(self, num_microbatches: int, args: tuple, kwargs: dict) -> None:
        self.chunks = num_microbatches
        if self.inputs_meta is None:
            self._shape_inference(args, kwargs)

    def _shape_inference(self, args: tuple, kwargs: dict) -> None:
        """Learn the shapes this stage receives and sends: stage 0 from the first
        microbatch, every other stage from its predecessor's message, passed on in order."""
        if self.is_first:
            inputs = tuple(args)
        else:
            box = [None]
            dist.recv_object_list(box, src=None, group=self.group,
                                  group_src=self._peer(self.stage_index - 1))
            inputs = tuple(ember.zeros(shape, dtype=dtype, device=self.device)
                           for shape, dtype in box[0])
        self.inputs_meta = _metas(inputs)
        with ember.no_grad():
            outputs = _as_tuple(self.submod(*inputs, **(kwargs if self.is_first else {})))
        self.outputs_meta = _metas(outputs)
        if not self.is_last:
            dist.send_object_list([self.outputs_meta], group=self.group,
                                  group_dst=self._peer(self.stage_index + 1))

    # -- messages (NOTE [ Pipeline messages ]) ------------------------------------------------

    def _send(self, tensors, kind: int, to_stage: int, mb: int) -> None:
        tag = _tag(kind, self.stage_index, mb, self.num_stages)
        for t in tensors:
            t = t.detach().contiguous()
            self._sends.append(dist.isend(t, group=self.group, tag=tag,
                                          group_dst=self._peer(to_stage)))

    def _recv(self, metas, kind: int, from_stage: int, mb: int) -> list:
        tag = _tag(kind, from_stage, mb, self.num_stages)
        bufs = [ember.empty(shape, dtype=dtype, device=self.device) for shape, dtype in metas]
        works = [dist.irecv(b, group=self.group, tag=tag, group_src=self._peer(from_stage))
                 for b in bufs]
        for w in works:
            w.wait()
        return bufs

    def _wait_sends(self) -> None:
        for w in self._sends:
            w.wait()
        self._sends = []

    # -- one microbatch -----------------------------------------------------------------------

    def forward_one_chunk(self, fwd_chunk_id: int, args: tuple = (), kwargs: dict | None = None):
        """Run this stage's module on microbatch ``fwd_chunk_id`` and send its outputs on.

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
            inputs = tuple(self._recv(self.inputs_meta, 0, self.stage_index - 1, fwd_chunk_id))
            if self.has_backward:
                for t in inputs:
                    if _wants_grad(t.dtype):
                        t.requires_grad_(True)
        output = self.submod(*inputs, **((kwargs or {}) if self.is_first else {}))
        outputs = _as_tuple(output)
        self.fwd_cache[fwd_chunk_id] = (outputs, inputs)
        if self.is_last:
            self.output_chunks.append(output)
        else:
            self._send(outputs, 0, self.stage_index + 1, fwd_chunk_id)
        return output

    def backward_one_chunk(self, bwd_chunk_id: int, loss=None, full_backward: bool = True,
                           last_backward: bool = False) -> None:
        """Back-propagate microbatch ``bwd_chunk_id`` through this stage and send the input
        gradients to the previous stage.

        Args:
            bwd_chunk_id (int): the microbatch.
            loss (Tensor, optional): its loss (last stage only).
            full_backward (bool): accepted for torch's signature (weights and inputs are
                always differentiated together).
            last_backward (bool): whether it is the step's last microbatch.
        """
        outputs, inputs = self.fwd_cache.pop(bwd_chunk_id)
        if self.is_last:
            if loss is None:
                raise RuntimeError("PipelineStage: the last stage needs the microbatch's loss "
                                   "for its backward (give the schedule a loss_fn)")
            roots, grads = [loss], None
        else:
            wanted = [m for m in self.outputs_meta if _wants_grad(m[1])]
            received = iter(self._recv(wanted, 1, self.stage_index + 1, bwd_chunk_id))
            roots, grads = [], []
            for out in outputs:
                if not _wants_grad(out.dtype):
                    continue
                g = next(received)
                if out.requires_grad:
                    roots.append(out)
                    grads.append(g)
        if roots:
            ember.autograd.backward(roots, grad_tensors=grads)
        if not self.is_first:
            self._send([t.grad if t.grad is not None else ember.zeros_like(t)
                        for t in inputs if _wants_grad(t.dtype)],
                       1, self.stage_index - 1, bwd_chunk_id)
        self._backward_done += 1

    def scale_grads(self, grad_scale_factor: int) -> None:
        """Divide this stage's parameter gradients by ``grad_scale_factor`` (the number of
        microbatches, so that a step's gradient is the batch mean).

        Args:
            grad_scale_factor (int): the divisor.
        """
        if grad_scale_factor != 1:
            with ember.no_grad():
                for p in self.submod.parameters():
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
