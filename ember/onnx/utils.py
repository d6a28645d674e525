"""``ember.onnx.utils``: the export functions under their older module path, and helpers
scripts written for PyTorch's TorchScript-based exporter call.

Example::

    >>> ember.onnx.utils.export is ember.onnx.export
    True
"""

from __future__ import annotations

import contextlib
import inspect

from . import (export, register_custom_op_symbolic, select_model_mode_for_export,
               unregister_custom_op_symbolic)
from .errors import OnnxExporterError

__all__ = ["export", "exporter_context", "model_signature", "register_custom_op_symbolic",
           "select_model_mode_for_export", "unconvertible_ops", "unregister_custom_op_symbolic"]


def model_signature(model):
    """The signature of ``model``'s ``forward`` (or of ``model`` itself for a function).

    Args:
        model: an ``nn.Module`` or a function.

    Returns:
        inspect.Signature: the signature the exporter names graph inputs from.

    Example::

        >>> str(ember.onnx.utils.model_signature(ember.nn.Linear(1, 1)))
        '(input)'
    """
    return inspect.signature(model.forward if hasattr(model, "forward") else model)


@contextlib.contextmanager
def exporter_context(model, mode, verbose=False):
    """A block in which ``model`` is in the mode ``mode`` asks for (the model's mode comes
    back on exit).

    Args:
        model: the module.
        mode: a ``TrainingMode``.
        verbose: accepted for PyTorch's signature.

    Returns:
        A context manager yielding ``model``.

    Example::

        >>> net = ember.nn.Dropout()
        >>> with ember.onnx.utils.exporter_context(net, ember.onnx.TrainingMode.EVAL):
        ...     net.training
        False
    """
    with select_model_mode_for_export(model, mode):
        yield model


def unconvertible_ops(model, args, training=None, opset_version=None):
    """Trace ``model`` on ``args`` and list the ops ember's exporter has no ONNX translation
    for.

    Args:
        model: the module.
        args: example inputs.
        training: the ``TrainingMode`` to trace in (default EVAL).
        opset_version: the opset (default 20).

    Returns:
        tuple: ``(None, names)``: ember has no TorchScript graph to return, and the names of
        the ops that cannot be written, in the order first met.

    Example::

        >>> ember.onnx.utils.unconvertible_ops(ember.nn.Linear(2, 2), (ember.ones(1, 2),))
        (None, [])
    """
    from . import TrainingMode
    from ._exporter import trace_to_model
    from ._translations import TRANSLATIONS

    missing = []

    def record(g, *a, **k):
        raise OnnxExporterError("unconvertible")

    seen = TRANSLATIONS.copy()
    try:
        with select_model_mode_for_export(model, training or TrainingMode.EVAL):
            while True:
                try:
                    trace_to_model(model, args, opset_version=opset_version,
                                   python_branches="warn")
                    break
                except OnnxExporterError as err:
                    name = str(err).split("'")[1] if "the op '" in str(err) else None
                    if name is None or name in missing:
                        break
                    missing.append(name)
                    TRANSLATIONS[name] = _passthrough
    finally:
        TRANSLATIONS.clear()
        TRANSLATIONS.update(seen)
    return None, missing


def _passthrough(ctx, args, kwargs, outs):
    """Stands in for a missing translation while ``unconvertible_ops`` looks further."""
    from onnx import helper

    from ._builder import onnx_type

    names = []
    for v in outs:
        name = ctx.g.fresh("unconvertible")
        ctx.g.nodes.append(helper.make_node(
            "ConstantOfShape", [ctx.g.ints(v.shape, "shape")], [name],
            value=helper.make_tensor("v", onnx_type(v.dtype), [1], [0])))
        names.append(name)
    return names
