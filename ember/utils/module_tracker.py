"""``ember.utils.module_tracker``: which modules are running right now, in forward and
backward (``torch.utils.module_tracker``)."""

from __future__ import annotations

import logging
import weakref

from .._core.tensor import Tensor
from ..autograd.graph import register_multi_grad_hook
from ..nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from ._pytree import tree_flatten

__all__ = ["ModuleTracker"]

logger = logging.getLogger(__name__)


def _current_backward():
    """The backward pass running on this thread (None outside backward)."""
    from ..autograd import _engine

    return _engine.current_task()


class ModuleTracker:
    """Track the module hierarchy being executed, in forward and in backward.

    Inside the ``with`` block, :attr:`parents` holds the qualified names of the modules
    whose forward (or, during backward, whose gradient computation) is in progress, plus
    ``"Global"``. A module is named by its class name if first seen as a root, and
    ``<parent name>.<attribute>`` for submodules (``"Sequential.0"``). In backward, a module
    is entered when gradients of its outputs arrive and left when gradients of its inputs
    are computed. :attr:`is_bw` says whether a backward pass is running.

    Example:
        >>> import ember
        >>> from ember.utils.module_tracker import ModuleTracker
        >>> seen = []
        >>> class Spy(ember.nn.Module):
        ...     def forward(self, x):
        ...         seen.append(sorted(tracker.parents))
        ...         return x
        >>> model = ember.nn.Sequential(ember.nn.Linear(2, 2), Spy())
        >>> with ModuleTracker() as tracker:
        ...     _ = model(ember.ones(1, 2))
        >>> seen
        [['Global', 'Sequential', 'Sequential.1']]
    """

    def __init__(self) -> None:
        self._parents = {"Global"}
        self._known_modules: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._seen_modules: weakref.WeakSet = weakref.WeakSet()
        self._hooks = []
        # the backward pass that last entered a module: once it is over, the hierarchy it
        # left behind is reset (``parents`` back to {"Global"}), as at the end of backward
        self._bw_task = None

    @property
    def parents(self) -> set:
        """The set of names of the modules currently executing (always with ``"Global"``)."""
        if self._bw_task is not None and self._bw_task is not _current_backward():
            self._parents = {"Global"}
            self._bw_task = None
        return self._parents

    @parents.setter
    def parents(self, value):
        self._parents = value

    @property
    def is_bw(self) -> bool:
        """Whether a backward pass is running on this thread."""
        return _current_backward() is not None

    def _name(self, mod) -> str:
        if mod not in self._known_modules:
            self._known_modules[mod] = type(mod).__name__
        name = self._known_modules[mod]
        if mod not in self._seen_modules:
            for child_name, child in mod.named_children():
                self._known_modules[child] = f"{name}.{child_name}"
                self._name(child)
            self._seen_modules.add(mod)
        return name

    def _enter(self, name, in_backward):
        def fn(*args):
            if in_backward:
                self._bw_task = _current_backward()
            parents = self.parents
            if name in parents:
                logger.info("The module hierarchy tracking seems to be broken as this Module "
                            "was already entered. %s during %s", name,
                            "backward" if in_backward else "forward")
            parents.add(name)

        return fn

    def _leave(self, name, in_backward):
        def fn(*args):
            parents = self.parents
            if name in parents:
                parents.remove(name)
            else:
                logger.info("The Module hierarchy tracking is confused as we're exiting a "
                            "Module that was never entered. %s during %s", name,
                            "backward" if in_backward else "forward")

        return fn

    @staticmethod
    def _grad_tensors(obj):
        leaves, _ = tree_flatten(obj)
        return [t for t in leaves if isinstance(t, Tensor) and t.requires_grad]

    def _fw_pre_hook(self, mod, args):
        name = self._name(mod)
        self._enter(name, False)()
        tensors = self._grad_tensors(args)
        if tensors:
            self._hooks.append(register_multi_grad_hook(tensors, self._leave(name, True)))

    def _fw_post_hook(self, mod, args, output):
        name = self._name(mod)
        self._leave(name, False)()
        tensors = self._grad_tensors(output)
        if tensors:
            self._hooks.append(register_multi_grad_hook(tensors, self._enter(name, True)))

    def __enter__(self):
        self._pre_handle = register_module_forward_pre_hook(self._fw_pre_hook)
        self._post_handle = register_module_forward_hook(self._fw_post_hook)
        return self

    def __exit__(self, *exc):
        self._pre_handle.remove()
        self._post_handle.remove()
        for h in self._hooks:
            h.remove()
        self._hooks.clear()
        _ = self.parents  # settles a finished backward's leftovers before forgetting it
        self._bw_task = None
