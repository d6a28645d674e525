"""``ember.classes``: the namespace of custom classes (``torch.classes.<ns>.<Class>``) that
shared libraries register when loaded with ``ember.classes.load_library``.

ember has no C++ class registry, so no namespace holds classes: looking one up raises
PyTorch's RuntimeError for a class that was never registered. Loading libraries works as
``ember.ops.load_library``.
"""

from __future__ import annotations

import types

__all__ = ["classes"]


class _ClassNamespace(types.ModuleType):
    """``ember.classes.<ns>``: a namespace of custom classes."""

    def __init__(self, name: str) -> None:
        super().__init__("ember.classes." + name)
        self.name = name

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise RuntimeError(f"Tried to instantiate class '{self.name}.{attr}', but it does not "
                           "exist! Ensure that it is registered via torch::class_")


class _Classes(types.ModuleType):
    """The custom-class namespace: ``ember.classes.<ns>.<Class>``, ``load_library``,
    ``loaded_libraries``.

    Example::

        >>> ember.classes.loaded_libraries == ember.ops.loaded_libraries
        True
    """

    __file__ = "_classes.py"

    def __init__(self) -> None:
        super().__init__("ember.classes", _Classes.__doc__)

    def __getattr__(self, name: str) -> _ClassNamespace:
        if name.startswith("__"):
            raise AttributeError(name)
        namespace = _ClassNamespace(name)
        setattr(self, name, namespace)
        return namespace

    @property
    def loaded_libraries(self) -> set:
        """The paths of the libraries loaded so far (shared with ``ember.ops``)."""
        from . import ops

        return ops.loaded_libraries

    def load_library(self, path) -> None:
        """Load a shared library that registers custom classes.

        Args:
            path (str): the library's file.

        Returns:
            None. OSError when it cannot be loaded.

        Example::

            >>> try:
            ...     ember.classes.load_library("/no/such/libcls.so")
            ... except OSError:
            ...     print("not loaded")
            not loaded
        """
        from . import ops

        ops.load_library(path)


#: the custom-class namespace (``ember.classes``)
classes = _Classes()
