"""The exceptions and warnings of ember's ONNX exporter.

Example::

    >>> issubclass(ember.onnx.errors.UnsupportedOperatorError, ember.onnx.OnnxExporterError)
    True
"""

from __future__ import annotations

__all__ = ["OnnxExporterError", "OnnxExporterWarning", "SymbolicValueError",
           "UnsupportedOperatorError"]


class OnnxExporterWarning(UserWarning):
    """A warning of the ONNX exporter (a conversion it could not make, a name it ignored).

    Example::

        >>> issubclass(ember.onnx.errors.OnnxExporterWarning, UserWarning)
        True
    """


class OnnxExporterError(RuntimeError):
    """An error of the ONNX exporter.

    Example::

        >>> issubclass(ember.onnx.OnnxExporterError, RuntimeError)
        True
    """


class UnsupportedOperatorError(OnnxExporterError):
    """An op the exporter has no ONNX translation for.

    Args:
        name: the op.
        version: the opset asked for.
        supported_version: the lowest opset that has it, or None.

    Example::

        >>> str(ember.onnx.errors.UnsupportedOperatorError("aten::foo", 18, None))[:40]
        "Exporting the operator 'aten::foo' to ON"
    """

    def __init__(self, name: str, version: int, supported_version: int | None):
        if supported_version is not None:
            msg = (f"Exporting the operator '{name}' to ONNX opset version {version} is not "
                   f"supported. Support for this operator was added in version "
                   f"{supported_version}, try exporting with this version.")
        else:
            msg = (f"Exporting the operator '{name}' to ONNX opset version {version} is not "
                   f"supported.")
        super().__init__(msg)


class SymbolicValueError(OnnxExporterError):
    """An error about one value in the graph being written.

    Args:
        msg: what is wrong.
        value: the value.

    Example::

        >>> issubclass(ember.onnx.errors.SymbolicValueError, ember.onnx.OnnxExporterError)
        True
    """

    def __init__(self, msg: str, value=None):
        super().__init__(f"{msg}  [Caused by the value '{value}']" if value is not None
                         else msg)
