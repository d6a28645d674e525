"""What an exported graph's inputs and outputs are: parameters, buffers, constants, user
inputs and outputs (``torch.export.graph_signature``).

Example::

    >>> from ember.export.graph_signature import InputKind
    >>> InputKind.PARAMETER.name
    'PARAMETER'
"""

from __future__ import annotations

import dataclasses
import enum

__all__ = ["ConstantArgument", "CustomObjArgument", "ExportBackwardSignature",
           "ExportGraphSignature", "InputKind", "InputSpec", "OutputKind", "OutputSpec",
           "SymIntArgument", "TensorArgument", "TokenArgument"]


@dataclasses.dataclass
class TensorArgument:
    """A tensor input or output of the graph, by its placeholder or node name.

    Args:
        name (str): the placeholder's or node's name.

    Returns:
        The argument (a dataclass).

    Example::

        >>> TensorArgument(name="x").name
        'x'
    """

    name: str


@dataclasses.dataclass
class SymIntArgument:
    """A symbolic integer input or output, by name.

    Args:
        name (str): the symbol's name.

    Returns:
        The argument (a dataclass).

    Example::

        >>> SymIntArgument(name="s0").name
        's0'
    """

    name: str


@dataclasses.dataclass
class TokenArgument:
    """An effect token, by name.

    Args:
        name (str): the token's name.

    Returns:
        The argument (a dataclass).

    Example::

        >>> TokenArgument(name="token").name
        'token'
    """

    name: str


@dataclasses.dataclass
class CustomObjArgument:
    """A custom (script) object, by name and class.

    Args:
        name (str): the object's name in the graph.
        class_fqn (str): the fully qualified name of its class.

    Returns:
        The argument (a dataclass).

    Example::

        >>> CustomObjArgument(name="obj", class_fqn="m.C").class_fqn
        'm.C'
    """

    name: str
    class_fqn: str


@dataclasses.dataclass
class ConstantArgument:
    """A non-tensor constant input or output.

    Args:
        name (str): its name in the graph.
        value: the constant.

    Returns:
        The argument (a dataclass).

    Example::

        >>> ConstantArgument(name="n", value=3).value
        3
    """

    name: str
    value: object


class InputKind(enum.Enum):
    """What a graph input is.

    Example::

        >>> InputKind.USER_INPUT.value
        1
    """

    USER_INPUT = 1
    PARAMETER = 2
    BUFFER = 3
    CONSTANT_TENSOR = 4
    CUSTOM_OBJ = 5
    TOKEN = 6


class OutputKind(enum.Enum):
    """What a graph output is.

    Example::

        >>> OutputKind.USER_OUTPUT.value
        1
    """

    USER_OUTPUT = 1
    LOSS_OUTPUT = 2
    BUFFER_MUTATION = 3
    PARAMETER_MUTATION = 4
    GRADIENT_TO_PARAMETER = 5
    GRADIENT_TO_USER_INPUT = 6
    USER_INPUT_MUTATION = 7
    TOKEN = 8


@dataclasses.dataclass
class InputSpec:
    """One graph input: its kind, its argument, and the state-dict key it stands for.

    Args:
        kind (InputKind): user input, parameter, buffer, constant tensor, ...
        arg: the graph's argument (``TensorArgument``, ``ConstantArgument``, ...).
        target (str or None): the state-dict key a parameter or buffer stands for; None
            for a user input.
        persistent (bool, optional): for a buffer, whether it is in the state dict.
            Default: None.

    Returns:
        The spec (a dataclass).

    Example::

        >>> InputSpec(InputKind.USER_INPUT, TensorArgument("x"), None).kind.name
        'USER_INPUT'
    """

    kind: InputKind
    arg: object
    target: str | None
    persistent: bool | None = None


@dataclasses.dataclass
class OutputSpec:
    """One graph output: its kind, its argument, and the state it writes (if any).

    Args:
        kind (OutputKind): user output, buffer mutation, loss, gradient, ...
        arg: the graph's argument (``TensorArgument``, ``ConstantArgument``, ...).
        target (str or None): the state it writes (a mutated buffer's name), else None.

    Returns:
        The spec (a dataclass).

    Example::

        >>> OutputSpec(OutputKind.USER_OUTPUT, TensorArgument("y"), None).target is None
        True
    """

    kind: OutputKind
    arg: object
    target: str | None


@dataclasses.dataclass
class ExportBackwardSignature:
    """Where a joint graph's gradients go (kept for PyTorch's name).

    Args:
        gradients_to_parameters (dict): output name of each gradient -> the parameter it is for.
        gradients_to_user_inputs (dict): output name of each gradient -> the user input it
            is for.
        loss_output (str): the name of the output that holds the loss.

    Example::

        >>> ExportBackwardSignature({}, {}, "loss").loss_output
        'loss'
    """

    gradients_to_parameters: dict
    gradients_to_user_inputs: dict
    loss_output: str


@dataclasses.dataclass
class ExportGraphSignature:
    """The inputs and outputs of an exported graph, in order.

    Args:
        input_specs: one ``InputSpec`` per placeholder.
        output_specs: one ``OutputSpec`` per output.

    Example::

        >>> sig = ExportGraphSignature([InputSpec(InputKind.USER_INPUT, TensorArgument("x"),
        ...                                       None)], [])
        >>> sig.user_inputs
        ('x',)
    """

    input_specs: list
    output_specs: list

    def _inputs(self, kind):
        return tuple(s.target for s in self.input_specs if s.kind == kind)

    @property
    def parameters(self) -> tuple:
        """The state-dict keys of the parameter inputs."""
        return self._inputs(InputKind.PARAMETER)

    @property
    def buffers(self) -> tuple:
        """The state-dict keys of the buffer inputs."""
        return self._inputs(InputKind.BUFFER)

    @property
    def non_persistent_buffers(self) -> tuple:
        """The buffers that are not in the state dict."""
        return tuple(s.target for s in self.input_specs
                     if s.kind == InputKind.BUFFER and s.persistent is False)

    @property
    def lifted_tensor_constants(self) -> tuple:
        """The names of tensors the forward used that are neither inputs nor state."""
        return self._inputs(InputKind.CONSTANT_TENSOR)

    @property
    def lifted_custom_objs(self) -> tuple:
        """The names of custom-object inputs."""
        return self._inputs(InputKind.CUSTOM_OBJ)

    @property
    def user_inputs(self) -> tuple:
        """The names of the user's inputs, in order."""
        return tuple(s.arg.name for s in self.input_specs if s.kind == InputKind.USER_INPUT)

    @property
    def user_outputs(self) -> tuple:
        """The names of the user's outputs, in order."""
        return tuple(getattr(s.arg, "name", s.arg) for s in self.output_specs
                     if s.kind == OutputKind.USER_OUTPUT)

    @property
    def inputs_to_parameters(self) -> dict:
        """Placeholder name -> parameter key."""
        return {s.arg.name: s.target for s in self.input_specs
                if s.kind == InputKind.PARAMETER}

    @property
    def inputs_to_buffers(self) -> dict:
        """Placeholder name -> buffer key."""
        return {s.arg.name: s.target for s in self.input_specs if s.kind == InputKind.BUFFER}

    @property
    def inputs_to_lifted_tensor_constants(self) -> dict:
        """Placeholder name -> constant name."""
        return {s.arg.name: s.target for s in self.input_specs
                if s.kind == InputKind.CONSTANT_TENSOR}

    @property
    def buffers_to_mutate(self) -> dict:
        """Output name -> buffer key, for buffers the graph writes."""
        return {s.arg.name: s.target for s in self.output_specs
                if s.kind == OutputKind.BUFFER_MUTATION}

    @property
    def user_inputs_to_mutate(self) -> dict:
        """Output name -> user input name, for inputs the graph writes."""
        return {s.arg.name: s.target for s in self.output_specs
                if s.kind == OutputKind.USER_INPUT_MUTATION}

    @property
    def backward_signature(self):
        """None: exported graphs here are forward graphs."""
        return None

    @property
    def assertion_dep_token(self):
        """None: no runtime-assertion tokens."""
        return None

    def __str__(self):
        lines = ["", "# inputs"]
        for s in self.input_specs:
            extra = f" target='{s.target}'" if s.target is not None else ""
            if s.kind == InputKind.BUFFER:
                extra += f" persistent={s.persistent}"
            lines.append(f"{s.arg.name}: {s.kind.name}{extra}")
        lines += ["", "# outputs"]
        for s in self.output_specs:
            extra = f" target='{s.target}'" if s.target is not None else ""
            lines.append(f"{getattr(s.arg, 'name', s.arg)}: {s.kind.name}{extra}")
        return "\n".join(lines) + "\n"
