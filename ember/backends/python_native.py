"""``ember.backends.python_native``: switches for kernels written in Python GPU languages.

PyTorch 2.13 can replace some of its operators with kernels written in a Python DSL (Triton,
CuTe DSL) and lets a program turn them off -- a whole DSL, single operations, or all of them
at a dispatch key -- for a block or for good. ember registers no such kernels (its CUDA
kernels are its own, ember/cuda), so every DSL is known but unavailable and none lists an
operation; the switches keep their state and read back exactly as PyTorch's do, so programs
that set them (to compare against the stock kernels, or to rule them out while debugging)
run unchanged.

The DSLs are attributes (``python_native.triton``), each a ``DSLController`` with
``available``, ``version``, ``enabled`` (assignable), ``enable()``, ``disable()`` and the
context manager ``disabled()``.

Example::

    >>> import ember.backends.python_native as pn
    >>> pn.all_dsls, pn.available_dsls
    (['cutedsl', 'triton'], [])
    >>> with pn.triton.disabled():
    ...     pn.is_dsl_disabled("triton")
    True
    >>> pn.triton.enabled
    True
"""

from __future__ import annotations

import contextlib
import sys
import types

__all__ = [
    "DSLController", "disable_dispatch_keys", "disable_operations", "enable_dispatch_keys",
    "enable_operations", "get_dsl_operations", "is_dsl_disabled", "is_operation_disabled",
    "operations_disabled",
]

_DSLS = ("cutedsl", "triton")  # the DSLs PyTorch knows of, in its order
# what is switched off: DSL names, operation names, dispatch keys
_disabled: dict[str, set] = {"dsls": set(), "ops": set(), "keys": set()}


def _check_names(owner: str, names) -> None:
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"{owner}: expected names as str, but got {type(n).__name__}")


class DSLController:
    """The switch of one DSL (``python_native.triton``).

    Args:
        dsl_name (str): the DSL's name.

    Returns:
        DSLController; its ``repr`` says whether the DSL is available and enabled.

    Example::

        >>> ember.backends.python_native.triton
        DSLController(triton, unavailable, enabled)
    """

    def __init__(self, dsl_name: str):
        self._dsl_name = dsl_name

    @property
    def name(self) -> str:
        """The DSL's name."""
        return self._dsl_name

    @property
    def available(self) -> bool:
        """Whether the DSL's runtime can be used: False (ember registers no DSL kernels)."""
        return False

    @property
    def version(self):
        """The DSL runtime's version: None, as it is not available."""
        return None

    @property
    def enabled(self) -> bool:
        """Whether the DSL's operations may run; assign a bool to switch it."""
        return self._dsl_name not in _disabled["dsls"]

    @enabled.setter
    def enabled(self, value: bool):
        if value:
            self.enable()
        else:
            self.disable()

    def disable(self) -> None:
        """Switch off every operation of this DSL.

        Returns:
            None
        """
        _disabled["dsls"].add(self._dsl_name)

    def enable(self) -> None:
        """Switch this DSL's operations back on.

        Returns:
            None
        """
        _disabled["dsls"].discard(self._dsl_name)

    @contextlib.contextmanager
    def disabled(self):
        """A block with this DSL switched off; it is on again afterwards if it was before.

        Returns:
            A context manager.
        """
        was_enabled = self.enabled
        self.disable()
        try:
            yield
        finally:
            if was_enabled:
                self.enable()

    def __repr__(self):
        state = "available" if self.available else "unavailable"
        on = "enabled" if self.enabled else "disabled"
        return f"DSLController({self._dsl_name}, {state}, {on})"


_CONTROLLERS = {name: DSLController(name) for name in _DSLS}


def get_dsl_operations(dsl_name: str) -> list[str]:
    """The operations a DSL registers, sorted: none in ember.

    Args:
        dsl_name (str): the DSL (``"triton"``, ``"cutedsl"``).

    Returns:
        list[str]: empty.

    Example::

        >>> ember.backends.python_native.get_dsl_operations("triton")
        []
    """
    return []


def disable_operations(*op_symbols: str) -> None:
    """Switch off the named operations in every DSL.

    Args:
        *op_symbols (str): operation names (``"scaled_mm"``).

    Returns:
        None

    Example::

        >>> pn = ember.backends.python_native
        >>> pn.disable_operations("scaled_mm"); pn.is_operation_disabled("scaled_mm")
        True
        >>> pn.enable_operations("scaled_mm")
    """
    _check_names("disable_operations", op_symbols)
    _disabled["ops"].update(op_symbols)


def enable_operations(*op_symbols: str) -> None:
    """Switch the named operations back on.

    Args:
        *op_symbols (str): operation names.

    Returns:
        None

    Example::

        >>> ember.backends.python_native.enable_operations("scaled_mm")
    """
    _check_names("enable_operations", op_symbols)
    _disabled["ops"].difference_update(op_symbols)


def disable_dispatch_keys(*dispatch_keys: str) -> None:
    """Switch off the DSL operations registered at the named dispatch keys.

    Args:
        *dispatch_keys (str): keys such as ``"CUDA"``, ``"CPU"``.

    Returns:
        None

    Example::

        >>> pn = ember.backends.python_native
        >>> pn.disable_dispatch_keys("CUDA"); pn.enable_dispatch_keys("CUDA")
    """
    _check_names("disable_dispatch_keys", dispatch_keys)
    _disabled["keys"].update(dispatch_keys)


def enable_dispatch_keys(*dispatch_keys: str) -> None:
    """Switch the DSL operations at the named dispatch keys back on.

    Args:
        *dispatch_keys (str): keys such as ``"CUDA"``.

    Returns:
        None

    Example::

        >>> ember.backends.python_native.enable_dispatch_keys("CUDA")
    """
    _check_names("enable_dispatch_keys", dispatch_keys)
    _disabled["keys"].difference_update(dispatch_keys)


@contextlib.contextmanager
def operations_disabled(*op_symbols: str):
    """A block with the named operations switched off; those that were on before are on
    again afterwards.

    Args:
        *op_symbols (str): operation names.

    Returns:
        A context manager.

    Example::

        >>> pn = ember.backends.python_native
        >>> with pn.operations_disabled("scaled_mm"):
        ...     pn.is_operation_disabled("scaled_mm")
        True
        >>> pn.is_operation_disabled("scaled_mm")
        False
    """
    _check_names("operations_disabled", op_symbols)
    already = {op for op in op_symbols if op in _disabled["ops"]}
    disable_operations(*op_symbols)
    try:
        yield
    finally:
        enable_operations(*[op for op in op_symbols if op not in already])


def is_operation_disabled(op_symbol: str) -> bool:
    """Whether an operation is switched off.

    Args:
        op_symbol (str): the operation's name.

    Returns:
        bool

    Example::

        >>> ember.backends.python_native.is_operation_disabled("scaled_mm")
        False
    """
    return op_symbol in _disabled["ops"]


def is_dsl_disabled(dsl_name: str) -> bool:
    """Whether a DSL is switched off.

    Args:
        dsl_name (str): the DSL's name.

    Returns:
        bool

    Example::

        >>> ember.backends.python_native.is_dsl_disabled("triton")
        False
    """
    return dsl_name in _disabled["dsls"]


class _PythonNativeModule(types.ModuleType):
    """The module's class: ``all_dsls``/``available_dsls`` are read-only properties and the
    DSLs are attributes (as in PyTorch, where they are computed from its registry)."""

    @property
    def all_dsls(self) -> list[str]:
        """Every DSL PyTorch knows of."""
        return list(_DSLS)

    @property
    def available_dsls(self) -> list[str]:
        """The DSLs whose runtime can be used: none in ember."""
        return [name for name in _DSLS if _CONTROLLERS[name].available]

    def __getattr__(self, name: str):
        if name in _CONTROLLERS:
            return _CONTROLLERS[name]
        raise AttributeError(f"module '{self.__name__}' has no attribute '{name}'")

    def __dir__(self):
        return sorted(set(super().__dir__()) | {"all_dsls", "available_dsls", *_DSLS})


sys.modules[__name__].__class__ = _PythonNativeModule
