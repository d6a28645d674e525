"""Config modules: ``ember._dynamo.config.suppress_errors = True``, checked by name.

NOTE [ Compiler config ]
PyTorch's compiler settings live in modules whose attributes are a fixed set of named
settings: assigning an unknown name raises AttributeError ("... does not exist"), so a typo
is caught, and ``config.patch(name=value)`` sets some for a block or a decorated function.
ember has no graph compiler yet (``ember.compile`` runs eagerly, see NOTE [ Eager compile ]),
so these settings change nothing ember computes; they exist so that programs that tune them
run, and so that a later compiler reads them from one place.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import sys
import types


class _Node:
    """A group of settings under a dotted prefix (``config.triton.cudagraphs``)."""

    def __init__(self, store: dict, prefix: str, public: str):
        object.__setattr__(self, "_store", store)
        object.__setattr__(self, "_prefix", prefix)
        object.__setattr__(self, "_public", public)

    def __getattr__(self, name):
        return _lookup(self._store, self._prefix + name, self._public)

    def __setattr__(self, name, value):
        _assign(self._store, self._prefix + name, value, self._public)

    def __dir__(self):
        n = len(self._prefix)
        return sorted({k[n:].split(".")[0] for k in self._store if k.startswith(self._prefix)})


def _lookup(store: dict, key: str, public: str):
    if key in store:
        return store[key]
    if any(k.startswith(key + ".") for k in store):
        return _Node(store, key + ".", public)
    raise AttributeError(f"{public}.{key} does not exist")


def _assign(store: dict, key: str, value, public: str):
    if key not in store:
        raise AttributeError(f"{public}.{key} does not exist")
    store[key] = value


class ConfigModule(types.ModuleType):
    """A module whose attributes are a fixed set of settings (see NOTE [ Compiler config ])."""

    def __getattr__(self, name):
        store = self.__dict__.get("_config")
        if store is None or name.startswith("__"):
            raise AttributeError(name)
        return _lookup(store, name, self.__dict__["_public_name"])

    def __setattr__(self, name, value):
        store = self.__dict__.get("_config")
        if store is None or name.startswith("_") or name in self.__dict__:
            super().__setattr__(name, value)
            return
        _assign(store, name, value, self.__dict__["_public_name"])

    def __dir__(self):
        return sorted(set(super().__dir__()) | {k.split(".")[0] for k in self._config})

    def get_config_copy(self) -> dict:
        """A copy of every setting, dotted name -> value.

        Returns:
            dict

        Example::

            >>> "suppress_errors" in ember._dynamo.config.get_config_copy()
            True
        """
        return copy.deepcopy(self._config)

    def patch(self, arg1=None, arg2=None, **changes):
        """Set some settings for a block, or for each call of a decorated function.

        Args:
            arg1: a setting's name (with ``arg2`` its value), or a dict of settings.
            arg2: the value, when ``arg1`` is a name.
            **changes: settings by keyword.

        Returns:
            An object usable as a context manager and as a decorator.

        Example::

            >>> with ember._dynamo.config.patch(suppress_errors=True):
            ...     ember._dynamo.config.suppress_errors
            True
        """
        if isinstance(arg1, str):
            changes[arg1] = arg2
        elif isinstance(arg1, dict):
            changes.update(arg1)
        for key in changes:
            _lookup(self._config, key, self._public_name)  # unknown names fail now
        return _Patch(self._config, changes)


class _Patch(contextlib.ContextDecorator):
    def __init__(self, store, changes):
        self._store, self._changes, self._saved = store, changes, []

    def __enter__(self):
        self._saved.append({k: self._store[k] for k in self._changes})
        self._store.update(self._changes)
        return self

    def __exit__(self, *exc):
        self._store.update(self._saved.pop())
        return False


def install(module_name: str, public_name: str, defaults: dict) -> None:
    """Make ``module_name`` a config module holding ``defaults`` (dotted names allowed).

    Args:
        module_name: the module's ``__name__`` (it must be imported).
        public_name: the name shown in errors, e.g. ``"torch._dynamo.config"``.
        defaults: setting name -> default value.

    Returns:
        None

    Example::

        >>> import types, sys
        >>> m = types.ModuleType("demo_cfg"); sys.modules["demo_cfg"] = m
        >>> install("demo_cfg", "demo.config", {"verbose": False})
        >>> m.verbose = True; m.verbose
        True
    """
    module = sys.modules[module_name]
    module.__dict__["_config"] = dict(defaults)
    module.__dict__["_public_name"] = public_name
    module.__class__ = ConfigModule
    # bound helpers, so ``config.patch(...)`` works as a module attribute
    module.__dict__["patch"] = functools.partial(ConfigModule.patch, module)
    module.__dict__["get_config_copy"] = functools.partial(ConfigModule.get_config_copy, module)
