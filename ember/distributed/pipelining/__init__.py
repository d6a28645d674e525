"""Pipeline parallelism: a model cut into stages on several ranks, microbatches flowing
through them (``torch.distributed.pipelining``)."""

from ._IR import Pipe, pipe_split, pipeline, SplitPoint
from .microbatch import TensorChunkSpec
from .schedules import (Schedule1F1B, ScheduleDualPipeV, ScheduleGPipe,
                        ScheduleInterleaved1F1B, ScheduleInterleavedZeroBubble,
                        ScheduleLoopedBFS, ScheduleZBVZeroBubble)
from .stage import build_stage, PipelineStage

__all__ = ["Pipe", "pipe_split", "SplitPoint", "pipeline", "PipelineStage", "build_stage",
           "Schedule1F1B", "ScheduleDualPipeV", "ScheduleGPipe", "ScheduleInterleaved1F1B",
           "ScheduleInterleavedZeroBubble", "ScheduleLoopedBFS", "ScheduleZBVZeroBubble",
           "TensorChunkSpec"]
