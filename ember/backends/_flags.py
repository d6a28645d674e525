"""Settings modules: ``ember.backends.cudnn.benchmark = True`` assigns through a property.

NOTE [ Backend settings ]
PyTorch's backend namespaces are modules whose settings read and write process-wide state:
``torch.backends.cudnn.benchmark = True`` is a call, not a plain module attribute, and a bad
value (``benchmark = 1``) raises RuntimeError. ember keeps that contract by giving each such
module a class of its own (``settings_module``): the module's ``__class__`` becomes a
``types.ModuleType`` subclass whose properties hold the settings, so assignment, reading back
and ``flags(...)`` all go through one validated store. The module keeps its globals and its
functions; only the listed names become properties.

ember runs on NumPy, so most of these settings choose between kernels ember does not have
(cuDNN, oneDNN, cuBLAS TF32); they are recorded and read back exactly as PyTorch's are, and
each module's docstring says which of its settings change what ember computes.

NOTE [ Frozen backend flags ]
``torch.backends.disable_global_flags()`` forbids plain assignment to the cuDNN, oneDNN and
MIOpen switches for the rest of the process (a program that wants every change scoped asks
for it): assignment then raises RuntimeError, while each module's ``flags()`` block and
``set_flags`` still change them, and ``torch.backends.__allow_nonbracketed_mutation()``
opens a block where assignment works again (MONAI's ``set_determinism`` sets
``cudnn.deterministic`` inside one). ``bool_setting(..., freezable=True)`` and
``value_setting(..., freezable_owner=...)`` make such switches; ``mutation_allowed()`` is
that block.
"""

from __future__ import annotations

import contextlib
import sys
import types

# False after ``disable_global_flags()``, outside ``mutation_allowed()`` blocks
_mutable = [True]


def _refuse_if_frozen(owner: str) -> None:
    if not _mutable[0]:
        raise RuntimeError(
            f"not allowed to set {owner} flags after disable_global_flags; please use flags() "
            "context manager instead")


@contextlib.contextmanager
def mutation_allowed():
    """A block in which frozen switches may be assigned (NOTE [ Frozen backend flags ]).

    Returns:
        A context manager; the previous state comes back on exit.

    Example::

        >>> with mutation_allowed():
        ...     ember.backends.cudnn.benchmark = False
    """
    old = _mutable[0]
    _mutable[0] = True
    try:
        yield
    finally:
        _mutable[0] = old


def bool_setting(owner: str, name: str, state: dict, freezable: bool = False) -> property:
    """A property reading and writing ``state[name]``, accepting only a ``bool``.

    Args:
        owner: the module's public name, for error messages (``"torch.backends.cudnn"``).
        name: the setting's name, the key in ``state``.
        state: the dict that holds the module's settings.
        freezable: whether ``disable_global_flags()`` forbids assigning it (NOTE [ Frozen
            backend flags ]).

    Returns:
        A property for the module's class.

    Example::

        >>> p = bool_setting("demo", "enabled", {"enabled": True})
        >>> isinstance(p, property)
        True
    """

    def get(_module):
        return state[name]

    def set_(_module, value):
        if freezable:
            _refuse_if_frozen(owner)
        if type(value) is not bool:
            raise RuntimeError(
                f"{owner}.{name} expects a bool, but got {type(value).__name__}")
        state[name] = value

    return property(get, set_, doc=f"``{owner}.{name}``: a bool setting.")


def value_setting(name: str, state: dict, check=None, freezable_owner: str | None = None
                  ) -> property:
    """A property reading and writing ``state[name]``; ``check(value)`` validates (raises).

    Args:
        name: the setting's name, the key in ``state``.
        state: the dict that holds the module's settings.
        check: optional function called with the new value before it is stored.
        freezable_owner: the module's public name, for a setting that
            ``disable_global_flags()`` freezes (NOTE [ Frozen backend flags ]); None for
            one it leaves alone.

    Returns:
        A property for the module's class.

    Example::

        >>> p = value_setting("strategy", {"strategy": "auto"})
        >>> isinstance(p, property)
        True
    """

    def get(_module):
        return state[name]

    def set_(_module, value):
        if freezable_owner is not None:
            _refuse_if_frozen(freezable_owner)
        if check is not None:
            check(value)
        state[name] = value

    return property(get, set_)


def settings_module(module_name: str, properties: dict) -> None:
    """Give the module ``module_name`` a class whose ``properties`` are its settings.

    See NOTE [ Backend settings ].

    Args:
        module_name: ``__name__`` of the module to convert (it must be imported).
        properties: setting name -> property (from ``bool_setting``/``value_setting``).

    Returns:
        None; ``sys.modules[module_name].__class__`` is replaced.

    Example::

        >>> import types, sys
        >>> m = types.ModuleType("demo_settings"); sys.modules["demo_settings"] = m
        >>> settings_module("demo_settings", {"on": bool_setting("demo", "on", {"on": False})})
        >>> m.on = True; m.on
        True
    """
    module = sys.modules[module_name]
    short = module_name.rsplit(".", 1)[-1]
    cls = type(f"{short.capitalize()}Module", (types.ModuleType,), dict(properties))
    module.__class__ = cls


@contextlib.contextmanager
def set_temporarily(module, **settings):
    """Assign ``settings`` on ``module`` for the block; the old values come back on exit.

    Args:
        module: a settings module (or any object).
        **settings: name=value pairs; a value of None leaves that setting unchanged.

    Returns:
        A context manager.

    Example::

        >>> import types
        >>> ns = types.SimpleNamespace(a=1)
        >>> with set_temporarily(ns, a=2):
        ...     ns.a
        2
        >>> ns.a
        1
    """
    settings = {k: v for k, v in settings.items() if v is not None}
    old = {k: getattr(module, k) for k in settings}
    for k, v in settings.items():
        setattr(module, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(module, k, v)
