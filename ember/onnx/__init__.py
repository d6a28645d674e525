"""``ember.onnx``: exporting models to ONNX.

``ember.onnx.export(model, args, "model.onnx")`` runs the model once on the example inputs and
writes the ops it calls as an ONNX graph (NOTE [ ONNX export ] in ember/onnx/_exporter.py),
checked with ``onnx.checker``; the ``ONNXProgram`` it returns runs the graph with onnxruntime.
The ``onnx`` package is needed to export and ``onnxruntime`` to run (the ``onnx`` extra).

Example::

    >>> ember.onnx.is_in_onnx_export()
    False
"""

from __future__ import annotations

import contextlib
import enum

from . import _exporter, errors
from ._exporter import ONNXProgram, export

__all__ = ["JitScalarType", "ONNXProgram", "OnnxExporterError", "OperatorExportTypes",
           "TensorProtoDataType", "TrainingMode", "errors", "export", "is_in_onnx_export",
           "register_custom_op_symbolic", "select_model_mode_for_export",
           "unregister_custom_op_symbolic"]

producer_name = "ember"
producer_version = "0.1.0"

from .errors import OnnxExporterError  # noqa: E402


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
    """Whether an ONNX export is tracing the model right now.

    Returns:
        bool: True inside ``ember.onnx.export``'s run of the model.

    Example::

        >>> ember.onnx.is_in_onnx_export()
        False
    """
    return _exporter.is_exporting()


def register_custom_op_symbolic(symbolic_name: str, symbolic_fn, opset_version: int):
    """Register how an op is written in ONNX, for opsets from ``opset_version`` on.

    ``symbolic_fn(g, *args, **kwargs)`` receives the op's arguments as the dispatcher passes
    them (tensors as graph values) and returns the value(s) it writes with
    ``g.op("OpType", *inputs, attr_f=..., ...)``. It takes precedence over ember's own
    translation of the op.

    Args:
        symbolic_name: ``"domain::op"``, e.g. ``"aten::relu"``; ``op`` is ember's op name.
        symbolic_fn: the translation function.
        opset_version: the lowest opset it applies to.

    Returns:
        None

    Raises:
        ValueError: a name without ``::``.

    Example::

        >>> def relu_as_clip(g, x):
        ...     return g.op("Clip", x, 0.0)
        >>> ember.onnx.register_custom_op_symbolic("aten::relu", relu_as_clip, 18)
        >>> ember.onnx.unregister_custom_op_symbolic("aten::relu", 18)
    """
    if "::" not in symbolic_name:
        raise ValueError(f"Failed to register operator {symbolic_name}. The symbolic name "
                         f"must match the format domain::name, and should start with a letter "
                         f"and contain only alphanumerical characters")
    _exporter._custom_symbolics.setdefault(symbolic_name, {})[int(opset_version)] = symbolic_fn


def unregister_custom_op_symbolic(symbolic_name: str, opset_version: int):
    """Remove a translation registered with ``register_custom_op_symbolic``.

    Args:
        symbolic_name: ``"domain::op"``.
        opset_version: the opset it was registered for.

    Returns:
        None

    Example::

        >>> ember.onnx.unregister_custom_op_symbolic("aten::relu", 18)
    """
    if "::" not in symbolic_name:
        raise ValueError(f"Failed to unregister operator {symbolic_name}. The symbolic name "
                         f"must match the format domain::name")
    by_opset = _exporter._custom_symbolics.get(symbolic_name, {})
    by_opset.pop(int(opset_version), None)
    if not by_opset:
        _exporter._custom_symbolics.pop(symbolic_name, None)


class TensorProtoDataType(enum.IntEnum):
    """ONNX's tensor element types, numbered as ``onnx.TensorProto`` numbers them.

    Example::

        >>> int(ember.onnx.TensorProtoDataType.FLOAT)
        1
    """

    UNDEFINED = 0
    FLOAT = 1
    UINT8 = 2
    INT8 = 3
    UINT16 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    STRING = 8
    BOOL = 9
    FLOAT16 = 10
    DOUBLE = 11
    UINT32 = 12
    UINT64 = 13
    COMPLEX64 = 14
    COMPLEX128 = 15
    BFLOAT16 = 16
    FLOAT8E4M3FN = 17
    FLOAT8E4M3FNUZ = 18
    FLOAT8E5M2 = 19
    FLOAT8E5M2FNUZ = 20


class JitScalarType(enum.IntEnum):
    """Tensor element types, with conversions to ember dtypes and ONNX types.

    Example::

        >>> ember.onnx.JitScalarType.from_dtype(ember.float32).onnx_type()
        <TensorProtoDataType.FLOAT: 1>
    """

    UINT8 = 0
    INT8 = 1
    INT16 = 2
    INT = 3
    INT64 = 4
    HALF = 5
    FLOAT = 6
    DOUBLE = 7
    COMPLEX32 = 8
    COMPLEX64 = 9
    COMPLEX128 = 10
    BOOL = 11
    QINT8 = 12
    QUINT8 = 13
    QINT32 = 14
    BFLOAT16 = 15
    FLOAT8E5M2 = 16
    FLOAT8E4M3FN = 17
    FLOAT8E5M2FNUZ = 18
    FLOAT8E4M3FNUZ = 19
    UNDEFINED = 20

    @classmethod
    def from_dtype(cls, dtype) -> JitScalarType:
        """The member for an ember dtype.

        Args:
            dtype: an ember dtype.

        Returns:
            JitScalarType: its member.

        Raises:
            OnnxExporterError: for a dtype with no member (or None).
        """
        table = _jit_by_dtype()
        if dtype not in table:
            raise OnnxExporterError(f"Unknown dtype: {dtype}")
        return table[dtype]

    @classmethod
    def from_value(cls, value, default=None) -> JitScalarType:
        """The member for a tensor's dtype (``default`` for anything else).

        Args:
            value: a tensor.
            default: the member returned when ``value`` has no dtype.

        Returns:
            JitScalarType: its member.
        """
        dtype = getattr(value, "dtype", None)
        if dtype is None:
            if default is None:
                raise OnnxExporterError(f"Cannot determine scalar type for instance "
                                        f"'{value}'")
            return default
        return cls.from_dtype(dtype)

    def dtype(self):
        """The ember dtype of this member.

        Returns:
            ember.dtype: the dtype.
        """
        for d, member in _jit_by_dtype().items():
            if member is self:
                return d
        raise OnnxExporterError(f"No ember dtype for {self.name}")

    def onnx_type(self) -> TensorProtoDataType:
        """The ONNX element type of this member.

        Returns:
            TensorProtoDataType: the type.
        """
        if self.name not in _ONNX_NAME:
            raise OnnxExporterError(f"Scalar type {self.name} cannot be converted to ONNX")
        return TensorProtoDataType[_ONNX_NAME[self.name]]

    def scalar_name(self) -> str:
        """PyTorch's scalar type name (``Float``, ``Long``, ...).

        Returns:
            str: the name.
        """
        return _SCALAR_NAME[self.name]


_ONNX_NAME = {"UINT8": "UINT8", "INT8": "INT8", "INT16": "INT16", "INT": "INT32",
              "INT64": "INT64", "HALF": "FLOAT16", "FLOAT": "FLOAT", "DOUBLE": "DOUBLE",
              "COMPLEX64": "COMPLEX64", "COMPLEX128": "COMPLEX128", "BOOL": "BOOL",
              "BFLOAT16": "BFLOAT16", "FLOAT8E5M2": "FLOAT8E5M2",
              "FLOAT8E4M3FN": "FLOAT8E4M3FN", "FLOAT8E5M2FNUZ": "FLOAT8E5M2FNUZ",
              "FLOAT8E4M3FNUZ": "FLOAT8E4M3FNUZ", "UNDEFINED": "UNDEFINED"}
_SCALAR_NAME = {"UINT8": "Byte", "INT8": "Char", "INT16": "Short", "INT": "Int",
                "INT64": "Long", "HALF": "Half", "FLOAT": "Float", "DOUBLE": "Double",
                "COMPLEX32": "ComplexHalf", "COMPLEX64": "ComplexFloat",
                "COMPLEX128": "ComplexDouble", "BOOL": "Bool", "QINT8": "QInt8",
                "QUINT8": "QUInt8", "QINT32": "QInt32", "BFLOAT16": "BFloat16",
                "FLOAT8E5M2": "Float8_e5m2", "FLOAT8E4M3FN": "Float8_e4m3fn",
                "FLOAT8E5M2FNUZ": "Float8_e5m2fnuz", "FLOAT8E4M3FNUZ": "Float8_e4m3fnuz",
                "UNDEFINED": "Undefined"}


def _jit_by_dtype():
    import ember

    names = {"uint8": "UINT8", "int8": "INT8", "int16": "INT16", "int32": "INT",
             "int64": "INT64", "float16": "HALF", "float32": "FLOAT", "float64": "DOUBLE",
             "complex64": "COMPLEX64", "complex128": "COMPLEX128", "bool": "BOOL",
             "bfloat16": "BFLOAT16", "float8_e5m2": "FLOAT8E5M2",
             "float8_e4m3fn": "FLOAT8E4M3FN", "float8_e5m2fnuz": "FLOAT8E5M2FNUZ",
             "float8_e4m3fnuz": "FLOAT8E4M3FNUZ", "complex32": "COMPLEX32"}
    return {getattr(ember, d): JitScalarType[m] for d, m in names.items()
            if hasattr(ember, d)}


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


def __getattr__(name):
    # ``ember.onnx.utils`` imports from this package, so it loads on first use
    if name == "utils":
        import importlib

        return importlib.import_module(".utils", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
