"""``ember.export.unflatten``: an exported program back as a module with the original's
submodule hierarchy.

NOTE [ Unflatten ]
``unflatten(ep)`` gives an ``UnflattenedModule`` whose submodules sit at the original's paths
(``a``, ``a.0``, ``b``...), each an ``InterpreterModule`` holding that submodule's parameters
and buffers, so ``state_dict()`` keys and ``named_modules()`` match the original. The root
runs the program's whole graph (``graph``, ``code``) over that state; unlike torch, the
submodules do not carry graphs of their own and are not called one by one, so swapping a
submodule (``swap`` in torch) does not change what the root computes.
"""

from __future__ import annotations

import abc
from typing import Any

from ..nn import Module

__all__ = ["FlatArgsAdapter", "InterpreterModule", "UnflattenedModule", "unflatten"]


class FlatArgsAdapter(abc.ABC):
    """Adapts the flat inputs a caller gives to the flat inputs an unflattened module's graph
    expects, when they differ (subclass it and pass it to ``unflatten``).

    Example::

        >>> from ember.export.unflatten import FlatArgsAdapter
        >>> class DropLast(FlatArgsAdapter):
        ...     def adapt(self, target_spec, input_spec, input_args, metadata=None, obj=None):
        ...         return input_args[:-1]
        >>> DropLast().adapt(None, None, [1, 2, 3])
        [1, 2]
    """

    @abc.abstractmethod
    def adapt(self, target_spec, input_spec, input_args: list, metadata: dict | None = None,
              obj: Any | None = None) -> list:
        """The flat inputs the graph expects, from the flat inputs given.

        Args:
            target_spec: the structure the graph expects.
            input_spec: the structure given.
            input_args: the flat inputs given.
            metadata: extra information.
            obj: the module being called.

        Returns:
            list: the flat inputs for the graph.
        """

    def get_flat_arg_paths(self) -> list[str]:
        """The names of the flat inputs this adapter produces (none by default).

        Returns:
            list of str.
        """
        return []


class InterpreterModule(Module):
    """A submodule of an ``UnflattenedModule``: holds the parameters and buffers of the
    original submodule at the same path (NOTE [ Unflatten ]); the root's graph computes
    with them.

    Example::

        >>> ep = ember.export.export(ember.nn.Sequential(ember.nn.Linear(3, 2)),
        ...                          (ember.randn(1, 3),))
        >>> type(ember.export.unflatten(ep).get_submodule("0")).__name__
        'InterpreterModule'
    """

    graph = None

    def forward(self, *args, **kwargs):
        raise RuntimeError("ember: the submodules of an unflattened program hold its state; "
                           "the whole graph runs from the root module (call the "
                           "UnflattenedModule itself)")


class UnflattenedModule(Module):
    """An exported program as a module with the original's submodule hierarchy (NOTE [
    Unflatten ]): calling it runs the program, with the same input checks as
    ``ExportedProgram.module()``.

    Args:
        export_module: the ``ExportedProgram``.
        flat_args_adapter: adapts the given inputs when they differ from the graph's.

    Example::

        >>> m = ember.nn.Sequential(ember.nn.Linear(3, 3), ember.nn.ReLU())
        >>> u = ember.export.unflatten(ember.export.export(m, (ember.randn(2, 3),)))
        >>> [n for n, _ in u.named_modules()]
        ['', '0', '1']
    """

    def __init__(self, export_module, flat_args_adapter: FlatArgsAdapter | None = None):
        super().__init__()
        gm = export_module.module()
        self.graph_signature = export_module.graph_signature
        self.module_call_graph = export_module.module_call_graph
        self.flat_args_adapter = flat_args_adapter
        self.adapted = False
        # the hierarchy: the source module's, where known, else the state's own paths
        paths: list[str] = []
        src = getattr(export_module, "_source", None)
        if src is not None:
            paths = [n for n, _ in src.named_modules() if n]
        for name, _ in list(gm.named_parameters()) + list(gm.named_buffers()):
            parts = name.split(".")[:-1]
            paths += [".".join(parts[:i + 1]) for i in range(len(parts))]
        for path in dict.fromkeys(paths):
            owner = self
            for part in path.split("."):
                child = owner._modules.get(part)
                if child is None:
                    child = InterpreterModule()
                    owner.add_module(part, child)
                owner = child
        # the graph module's state moves into that hierarchy, and it keeps pointing at it
        for name, child in list(gm._modules.items()):
            self._adopt(self._modules[name], child)
            gm._modules[name] = self._modules[name]
        for name, p in list(gm._parameters.items()):
            self.register_parameter(name, p)
        for name, b in list(gm._buffers.items()):
            self.register_buffer(name, b)
        object.__setattr__(self, "_program_module", gm)
        self.graph = gm.graph

    @staticmethod
    def _adopt(mine, theirs):
        for name, p in theirs._parameters.items():
            mine.register_parameter(name, p)
        for name, b in theirs._buffers.items():
            mine.register_buffer(name, b)
        for name, child in list(theirs._modules.items()):
            UnflattenedModule._adopt(mine._modules[name], child)
            theirs._modules[name] = mine._modules[name]

    @property
    def code(self) -> str:
        """The Python source of the graph the module runs."""
        return self._program_module.code

    def forward(self, *args, **kwargs):
        if self.flat_args_adapter is not None:
            flat = list(args) + list(kwargs.values())
            args, kwargs = tuple(self.flat_args_adapter.adapt(None, None, flat,
                                                              obj=self)), {}
            self.adapted = True
        return self._program_module(*args, **kwargs)

    def print_readable(self, print_output: bool = True) -> str:
        """The graph's code with annotations (as ``GraphModule.print_readable``).

        Args:
            print_output: print it as well.

        Returns:
            str.
        """
        return self._program_module.print_readable(print_output)


def unflatten(module, flat_args_adapter: FlatArgsAdapter | None = None) -> UnflattenedModule:
    """An exported program as a module with the original's submodule hierarchy (NOTE [
    Unflatten ]).

    Args:
        module: the ``ExportedProgram``.
        flat_args_adapter: adapts given inputs to the graph's, when they differ.

    Returns:
        UnflattenedModule.

    Raises:
        TypeError: ``module`` is not an ``ExportedProgram``.

    Example::

        >>> class M(ember.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.a = ember.nn.Linear(3, 3)
        ...     def forward(self, x):
        ...         return self.a(x).relu()
        >>> u = ember.export.unflatten(ember.export.export(M(), (ember.randn(2, 3),)))
        >>> sorted(u.state_dict())
        ['a.bias', 'a.weight']
    """
    from .exported_program import ExportedProgram

    if not isinstance(module, ExportedProgram):
        raise TypeError(f"unflatten expects an ExportedProgram, got {type(module).__name__}")
    return UnflattenedModule(module, flat_args_adapter)
