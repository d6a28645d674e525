"""``ember.onnx``: exporting models to ONNX -- not available in ember yet.

ONNX export needs a captured graph of the model, which ember cannot make yet (graph capture
comes with the compiler work). The namespace imports, ``is_in_onnx_export()`` is False, and
``export`` raises NotImplementedError naming ONNX export, so scripts that only import it, or
export at the very end, run up to that point.

Example::

    >>> ember.onnx.is_in_onnx_export()
    False
"""

from __future__ import annotations

import contextlib
import enum

__all__ = ["OnnxExporterError", "OperatorExportTypes", "TrainingMode", "export",
           "is_in_onnx_export", "register_custom_op_symbolic", "select_model_mode_for_export",
           "unregister_custom_op_symbolic"]

producer_name = "ember"
producer_version = "0.1.0"

_NO_EXPORT = ("ONNX export is not implemented in ember: it needs graph capture, which ember "
              "does not have yet; save the weights with ember.save(model.state_dict(), path)")


class OnnxExporterError(RuntimeError):
    """An error of the ONNX exporter.

    Example::

        >>> issubclass(ember.onnx.OnnxExporterError, RuntimeError)
        True
    """


class TrainingMode(enum.IntEnum):
    """The mode a model is exported in: EVAL, PRESERVE or TRAINING.

    Example::

        >>> ember.onnx.TrainingMode.EVAL.name
        'EVAL'
    """

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    """How operators are exported: ONNX, ONNX_ATEN, ONNX_ATEN_FALLBACK or ONNX_FALLTHROUGH.

    Example::

        >>> ember.onnx.OperatorExportTypes.ONNX.value
        0
    """

    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


def is_in_onnx_export() -> bool:
    """Whether an ONNX export is running: always False in ember.

    Returns:
        False

    Example::

        >>> ember.onnx.is_in_onnx_export()
        False
    """
    return False


def export(model, args=(), f=None, *, kwargs=None, **options):
    """Export ``model`` to an ONNX file: not implemented in ember yet.

    Args:
        model: the module.
        args: example inputs.
        f: the file to write.
        kwargs: example keyword inputs.
        **options: PyTorch's export options (``input_names``, ``opset_version``, ...).

    Returns:
        Never returns in ember.

    Raises:
        NotImplementedError: always, naming ONNX export.

    Example::

        >>> ember.onnx.export(ember.nn.Linear(1, 1), (ember.ones(1),), "m.onnx")
        Traceback (most recent call last):
        ...
        NotImplementedError: ONNX export is not implemented in ember: ...
    """
    raise NotImplementedError(_NO_EXPORT)


def register_custom_op_symbolic(symbolic_name: str, symbolic_fn, opset_version: int):
    """Register how an operator is written in ONNX: needs ONNX export (not implemented).

    Args:
        symbolic_name: "domain::op".
        symbolic_fn: the translation function.
        opset_version: the opset it is for.

    Returns:
        Never returns in ember.

    Example::

        >>> ember.onnx.register_custom_op_symbolic("a::b", abs, 17)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        NotImplementedError: ONNX export is not implemented in ember: ...
    """
    raise NotImplementedError(_NO_EXPORT)


def unregister_custom_op_symbolic(symbolic_name: str, opset_version: int):
    """Remove a registration made by ``register_custom_op_symbolic`` (not implemented).

    Args:
        symbolic_name: "domain::op".
        opset_version: the opset.

    Returns:
        Never returns in ember.

    Example::

        >>> ember.onnx.unregister_custom_op_symbolic("a::b", 17)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        NotImplementedError: ONNX export is not implemented in ember: ...
    """
    raise NotImplementedError(_NO_EXPORT)


@contextlib.contextmanager
def select_model_mode_for_export(model, mode):
    """A block in which ``model`` is in the training mode ``mode`` asks for.

    Args:
        model: the module.
        mode: a ``TrainingMode``.

    Returns:
        A context manager; the model's mode comes back on exit.

    Example::

        >>> net = ember.nn.Dropout()
        >>> with ember.onnx.select_model_mode_for_export(net, ember.onnx.TrainingMode.EVAL):
        ...     net.training
        False
    """
    if not isinstance(mode, TrainingMode):
        raise TypeError(f"'mode' should be a torch.onnx.TrainingMode enum, but got "
                        f"'{type(mode)}'.")
    was_training = model.training
    if mode != TrainingMode.PRESERVE:
        model.train(mode == TrainingMode.TRAINING)
    try:
        yield
    finally:
        model.train(was_training)
