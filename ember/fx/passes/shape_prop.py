"""``ShapeProp``: run a ``GraphModule`` on example inputs and record, on every node that
produces tensors, their shape, dtype, strides and layout in ``node.meta['tensor_meta']``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import ember

from ..interpreter import Interpreter
from ..node import Node, map_aggregate

__all__ = ["TensorMetadata", "ShapeProp"]


class TensorMetadata(NamedTuple):
    """What ``ShapeProp`` records about one tensor.

    Args:
        shape: its size.
        dtype: its dtype.
        requires_grad: whether it requires grad.
        stride: its strides.
        memory_format: the memory format it is contiguous in, or None.
        is_quantized: always False in ember (no quantized tensors).
        qparams: quantization parameters (empty).
    """

    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(result: ember.Tensor, include_contiguity: bool = True):
    memory_format = None
    if include_contiguity:
        for mf in (ember.contiguous_format, ember.channels_last, ember.channels_last_3d):
            try:
                if result.is_contiguous(memory_format=mf):
                    memory_format = mf
                    break
            except (RuntimeError, ValueError):
                continue
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, result.stride(),
                          memory_format, False, {})


class ShapeProp(Interpreter):
    """Run the module on example inputs and store each node's ``TensorMetadata`` (a
    structure of them for nodes returning several tensors) in ``node.meta['tensor_meta']``
    and the Python type of its value in ``node.meta['type']``.

    Args:
        gm: the module.
        fake_mode: accepted for torch's signature; ember runs on the real inputs.

    Example::

        >>> import ember, ember.fx as fx
        >>> from ember.fx.passes.shape_prop import ShapeProp
        >>> gm = fx.symbolic_trace(ember.nn.Sequential(ember.nn.Linear(4, 2)))
        >>> _ = ShapeProp(gm).propagate(ember.randn(3, 4))
        >>> [tuple(n.meta["tensor_meta"].shape) for n in gm.graph.nodes]
        [(3, 4), (3, 2), (3, 2)]
    """

    def __init__(self, gm, fake_mode=None):
        super().__init__(gm)
        self.fake_mode = fake_mode
        self.fake_module = None
        self.real_module = self.module

    def run_node(self, n: Node) -> Any:
        result = super().run_node(n)
        found = [False]

        def extract(obj):
            if isinstance(obj, ember.Tensor):
                found[0] = True
                return _extract_tensor_metadata(obj)
            return obj

        meta = map_aggregate(result, extract)
        if found[0]:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args) -> Any:
        """Run the module on ``args``, filling in the metadata.

        Args:
            args: example inputs.

        Returns:
            The module's output.
        """
        return self.run(*args)
