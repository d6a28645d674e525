"""The ONNX graph being written: values, nodes and initializers, with names made unique.

``GraphBuilder`` is what the op translations (ember/onnx/_translations.py) write into. A value
the trace has seen is a ``Value``: its ONNX name, its shape and ember dtype as traced, and --
for values that do not depend on the model's inputs -- the array itself, so that
translations can read constant arguments (a reshape's target, a gather's indices) and the
exporter can fold whole constant subgraphs into initializers.

NOTE [ ONNX opsets ]
Translations are written in the spelling of opset 18 and later (axes and split sizes as
inputs, ``LayerNormalization``, ``Gelu``). ``GraphBuilder.node`` rewrites what an older
opset spells differently as the node is added: axes and split sizes become attributes
(opset < 13, or < 18 for the reductions but ``ReduceSum``), and ops an opset lacks become
their definitions (``Gelu`` < 20, ``LayerNormalization`` < 17, ``HardSwish`` < 14, ``Mish`` <
18, ``LessOrEqual``/``GreaterOrEqual`` < 12). The few rewrites that need a tensor's rank
(``Softmax`` on an inner axis < 13, ``Trilu`` < 14) are in the translations. So the exporter
writes opsets 11 and later directly; an older target goes through ONNX's version
converter.
"""

from __future__ import annotations

import numpy as np

from .._core import dtype as _dt


class Value:
    """A tensor in the exported graph.

    Args:
        name: its ONNX name, or None for a constant not yet written as an initializer.
        shape: the shape it had in the trace.
        dtype: its ember dtype.
        array: its NumPy value when it does not depend on the model's inputs, else None.

    Example::

        >>> Value("x", (2, 3), ember.float32).is_constant
        False
    """

    __slots__ = ("name", "shape", "dtype", "array")

    def __init__(self, name, shape, dtype, array=None):
        self.name = name
        self.shape = tuple(shape)
        self.dtype = dtype
        self.array = array

    @property
    def is_constant(self) -> bool:
        """Whether the value is known without the model's inputs."""
        return self.array is not None

    @property
    def ndim(self) -> int:
        """The number of dimensions it had in the trace."""
        return len(self.shape)

    def __repr__(self):
        return f"Value({self.name!r}, {self.shape}, {self.dtype})"


def onnx_type(dtype) -> int:
    """The ``onnx.TensorProto`` element type of an ember dtype.

    Args:
        dtype: an ember dtype.

    Returns:
        int: the TensorProto enum value.

    Raises:
        OnnxExporterError: for a dtype ONNX has no type for.

    Example::

        >>> onnx_type(ember.float32) == onnx.TensorProto.FLOAT
        True
    """
    from onnx import helper

    from .errors import OnnxExporterError

    np_dtype = np.dtype(_dt.to_np[dtype])
    try:
        return helper.np_dtype_to_tensor_dtype(np_dtype)
    except (KeyError, TypeError, ValueError) as err:
        raise OnnxExporterError(f"ONNX has no element type for {dtype}") from err


class GraphBuilder:
    """Collects the nodes and initializers of one ONNX graph.

    Args:
        opset: the ONNX opset version the nodes are written for.

    Example::

        >>> g = GraphBuilder(18)
        >>> g.node("Relu", ["x"])
        'relu'
    """

    def __init__(self, opset: int):
        self.opset = opset
        self.nodes = []
        self.initializers = []
        self._names = set()
        self._counts = {}
        self._consts = {}  # initializer name -> array, for attributes older opsets need

    def fresh(self, hint: str) -> str:
        """A name not used yet in the graph, from ``hint`` (``relu``, ``relu_1``, ...).

        Args:
            hint: the preferred name.

        Returns:
            str: the unique name.
        """
        hint = hint or "val"
        n = self._counts.get(hint, 0)
        name = hint if n == 0 else f"{hint}_{n}"
        while name in self._names:
            n += 1
            name = f"{hint}_{n}"
        self._counts[hint] = n + 1
        self._names.add(name)
        return name

    def reserve(self, name: str) -> str:
        """Claim ``name`` exactly (inputs, outputs, parameters keep the names users gave).

        Args:
            name: the name.

        Returns:
            str: ``name``.
        """
        self._names.add(name)
        return name

    def node(self, op_type: str, inputs, outputs=1, name_hint=None, **attrs):
        """Add a node; returns its output name (or a list of names when ``outputs`` > 1 or a
        list of names is given).

        Args:
            op_type: the ONNX operator.
            inputs: the input value names ('' for an omitted optional input).
            outputs: how many outputs, or their names.
            name_hint: the base of the output names (default: the operator in snake case).
            **attrs: the node's attributes (None values are left out).

        Returns:
            str or list[str]: the output names.
        """
        from onnx import helper

        hint = name_hint or _snake(op_type)
        attrs = {k: v for k, v in attrs.items() if v is not None}
        lowered = self._lower(op_type, list(inputs), outputs, hint, attrs)
        if lowered is not None:
            return lowered
        if isinstance(outputs, int):
            names = [self.fresh(hint) for _ in range(outputs)]
            single = outputs == 1
        else:
            names = list(outputs)
            single = False
        self.nodes.append(helper.make_node(op_type, list(inputs), names,
                                           name=f"node_{names[0]}", **attrs))
        return names[0] if single else names

    def const(self, array, hint="val") -> str:
        """Write ``array`` as an initializer; returns its name.

        Args:
            array: a NumPy array (or a Python scalar / list).
            hint: the base of its name.

        Returns:
            str: the initializer's name.
        """
        from onnx import numpy_helper

        arr = np.asarray(array)
        name = self.fresh(hint)
        self._consts[name] = arr
        self.initializers.append(numpy_helper.from_array(np.require(arr, requirements="C"), name))
        return name

    def ints(self, values, hint="val") -> str:
        """An int64 1-D initializer (shapes, axes, pads); returns its name.

        Args:
            values: the integers.
            hint: the base of its name.

        Returns:
            str: the initializer's name.
        """
        return self.const(np.asarray(list(values), dtype=np.int64), hint)


    # -- older opsets (NOTE [ ONNX opsets ]) ------------------------------------------------

    def _lower(self, op_type, inputs, outputs, hint, attrs):
        """Write ``op_type`` the way ``self.opset`` spells it, or return None when the
        opset-18 form is right as it is."""
        v = self.opset
        if op_type.startswith("Reduce") and len(inputs) > 1 and \
                (v < 13 or (v < 18 and op_type != "ReduceSum")):
            axes = self._consts[inputs[1]]
            return self.node(op_type, inputs[:1], outputs, hint,
                             axes=[int(a) for a in axes], **attrs)
        if op_type in ("Squeeze", "Unsqueeze") and v < 13 and len(inputs) > 1:
            axes = self._consts[inputs[1]]
            return self.node(op_type, inputs[:1], outputs, hint,
                             axes=[int(a) for a in axes], **attrs)
        if op_type == "Split" and v < 13 and len(inputs) > 1:
            sizes = self._consts[inputs[1]]
            return self.node(op_type, inputs[:1], outputs, hint,
                             split=[int(a) for a in sizes], **attrs)
        if op_type == "Gelu" and v < 20:
            return self._gelu(inputs[0], attrs.get("approximate", "none"), hint)
        if op_type == "LayerNormalization" and v < 17:
            return self._layer_norm(inputs, attrs, hint)
        if op_type == "Mish" and v < 18:
            soft = self.node("Softplus", inputs[:1])
            return self.node("Mul", [inputs[0], self.node("Tanh", [soft])], name_hint=hint)
        if op_type == "HardSwish" and v < 14:
            hs = self.node("HardSigmoid", inputs[:1], alpha=1.0 / 6, beta=0.5)
            return self.node("Mul", [inputs[0], hs], name_hint=hint)
        if op_type in ("LessOrEqual", "GreaterOrEqual") and v < 12:
            strict = self.node("Greater" if op_type == "LessOrEqual" else "Less", inputs)
            return self.node("Not", [strict], name_hint=hint)
        return None

    def _scalar_like(self, value, hint="val"):
        return self.const(np.asarray(value, np.float32), hint)

    def _gelu(self, x, approximate, hint):
        half = self._scalar_like(0.5)
        one = self._scalar_like(1.0)
        if approximate == "tanh":
            c = self._scalar_like(float(np.sqrt(2.0 / np.pi)))
            k = self._scalar_like(0.044715)
            cube = self.node("Mul", [x, self.node("Mul", [x, x])])
            inner = self.node("Mul", [c, self.node("Add", [x, self.node("Mul", [k, cube])])])
            t = self.node("Tanh", [inner])
        else:
            t = self.node("Erf", [self.node("Div", [x, self._scalar_like(float(np.sqrt(2.0)))])])
        return self.node("Mul", [self.node("Mul", [x, half]), self.node("Add", [t, one])],
                         name_hint=hint)

    def _layer_norm(self, inputs, attrs, hint):
        x, scale = inputs[0], inputs[1]
        axis = attrs.get("axis", -1)
        axes = self.ints(list(range(axis, 0)), "axes")
        eps = self._scalar_like(attrs.get("epsilon", 1e-5))
        mean = self.node("ReduceMean", [x, axes], keepdims=1)
        d = self.node("Sub", [x, mean])
        var = self.node("ReduceMean", [self.node("Mul", [d, d]), axes], keepdims=1)
        y = self.node("Div", [d, self.node("Sqrt", [self.node("Add", [var, eps])])])
        y = self.node("Mul", [y, scale], name_hint=hint if len(inputs) < 3 else None)
        if len(inputs) > 2:
            y = self.node("Add", [y, inputs[2]], name_hint=hint)
        return y


def _snake(op_type: str) -> str:
    out = []
    for i, ch in enumerate(op_type):
        if ch.isupper() and i and not op_type[i - 1].isupper():
            out.append("_")
        out.append(ch.lower())
    return "".join(out)
