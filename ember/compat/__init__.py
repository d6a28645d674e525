"""Run PyTorch programs on ember: ``import torch`` (and every ``torch.*`` module) resolves to
the matching ember module.

``ember.compat.install()`` adds an import hook; ``python -m ember.compat.run script.py
args...`` installs it and runs the script as ``__main__``. A torch module ember does not
have raises ModuleNotFoundError naming it, and a missing attribute raises AttributeError
naming the torch API that ember lacks.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys

from .._core import dtype as _dtype
from . import _libraries, _names

__all__ = ["install", "uninstall", "is_installed"]

# torch module names whose ember counterpart is not at the same dotted path
_ALIASES = {
    "torch.nn.modules.module": "ember.nn.modules.module",
    "torch.utils.data.dataloader": "ember.utils.data.dataloader",
    "torch.utils.data.dataset": "ember.utils.data.dataset",
    "torch.utils.data.sampler": "ember.utils.data.sampler",
    "torch.utils.data._utils.collate": "ember.utils.data._collate",
    "torch.nn.utils.rnn": "ember.nn.utils.rnn",
    "torch.testing": "ember.testing",
    "torch._tensor_str": "ember._core._print",  # an attribute of ember, not a module
    "torch._C._functorch": "ember._C_functorch",  # ember._C is a module, not a package
}


def _ember_name(fullname):
    if fullname in _ALIASES:
        return _ALIASES[fullname]
    return "ember" + fullname[len("torch"):]


class _Loader(importlib.abc.Loader):
    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self.own_spec = getattr(module, "__spec__", None)
        return module

    def exec_module(self, module):
        # the import system has just set the torch-named spec on ember's module; give it
        # back its own, or relative imports run inside its functions later see
        # ``__package__`` (ember.x) differ from ``__spec__.parent`` (torch.x) and warn
        if getattr(self, "own_spec", None) is not None:
            module.__spec__ = self.own_spec


class _TorchFinder(importlib.abc.MetaPathFinder):
    """Resolves ``torch`` and ``torch.*`` to ember's modules."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "functorch" or fullname.startswith("functorch."):
            target_name = "ember." + fullname  # the package PyTorch ships beside torch
        elif fullname != "torch" and not fullname.startswith("torch."):
            return None
        else:
            target_name = _ember_name(fullname)
        try:
            module = importlib.import_module(target_name)
        except ModuleNotFoundError as e:
            if e.name and (e.name == target_name or target_name.startswith(e.name + ".")):
                raise ModuleNotFoundError(
                    f"{fullname} is not available in ember (no module {target_name}); "
                    "this PyTorch API is not implemented yet", name=fullname) from None
            raise
        # Loading the ember module just now entered it under ``fullname`` too (the class
        # renaming does, NOTE [ Class names under the alias ]). Left there, the import system
        # would take that entry's own spec and run the ember module's code a second time, into
        # a new module object without its submodules as attributes (``torch.distributions``
        # imported first by ``from torch.distributions import constraints`` then lacked
        # ``.multivariate_normal``); our loader enters the very same module object instead.
        if sys.modules.get(fullname) is module:
            del sys.modules[fullname]
        return importlib.machinery.ModuleSpec(fullname, _Loader(target_name),
                                              is_package=True)

    def find_distributions(self, context=None):
        """``torch``'s package metadata describes ember (NOTE [ torch's metadata under the
        alias ] in _metadata.py)."""
        from ._metadata import find_distributions

        return find_distributions(context)


_finder = _TorchFinder()

# NOTE [ The alias in child processes ]
# A ``spawn`` or ``forkserver`` child is a fresh interpreter: it imports the parent's main
# module again (as ``__mp_main__``), and without the hook its ``import torch`` would load the
# real torch, whose tensors and pickles the parent (on ember) can't read. So while the hook
# is installed:
# - ``spawn``: multiprocessing's preparation data (unpickled by the child before it imports
#   the main module) carries a ``_ChildHook``, whose unpickling installs the hook there;
# - ``forkserver``: the server preloads ``ember.compat._mp_child`` (which installs the hook)
#   instead of the main module, so the children it forks import the main module themselves,
#   through the spawn path above.
# ``fork`` children inherit the hook with the parent's memory.


class _ChildHook:
    """Installs the hook in the process that unpickles it (NOTE [ The alias in child
    processes ])."""

    def __reduce__(self):
        return (_install_in_child, ())


def _install_in_child():
    install()
    return None


def _preparation_data(name):
    data = _original_preparation_data(name)
    if is_installed():
        data["ember_compat_hook"] = _ChildHook()
    return data


_original_preparation_data = None


def _patch_multiprocessing():
    """Carry the hook into spawn and forkserver children (idempotent)."""
    global _original_preparation_data
    import multiprocessing.forkserver as forkserver
    import multiprocessing.spawn as spawn

    if _original_preparation_data is None:
        _original_preparation_data = spawn.get_preparation_data
        spawn.get_preparation_data = _preparation_data
    server = forkserver._forkserver
    preload = list(server._preload_modules)
    if "ember.compat._mp_child" not in preload:
        server._preload_modules = ["ember.compat._mp_child"] + [
            m for m in preload if m != "__main__"]


def install():
    """Make ``import torch`` give ember (idempotent). Call before importing torch.

    Processes started by :mod:`multiprocessing` (``spawn`` and ``forkserver`` too) get the
    hook as well (NOTE [ The alias in child processes ]).

    Example:
        >>> import ember.compat
        >>> ember.compat.install()
        >>> import torch  # ember
        >>> torch.ones(1).dtype
        torch.float32
        >>> ember.compat.uninstall()  # ember's own names again
    """
    if _finder not in sys.meta_path:
        for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
            if not getattr(sys.modules[name], "__name__", "").startswith("ember"):
                raise RuntimeError(
                    "ember.compat.install(): the real torch is already imported; install the "
                    "hook before the first `import torch`")
        sys.meta_path.insert(0, _finder)
    if _names.watcher not in sys.meta_path:
        sys.meta_path.insert(1, _names.watcher)
    if _libraries.finder not in sys.meta_path:  # NOTE [ Libraries that read torch's module name ]
        sys.meta_path.insert(2, _libraries.finder)
    _patch_multiprocessing()
    _dtype.printed_module[0] = "torch"  # NOTE [ Printed module name ]
    _names.present()  # type(x) prints <class 'torch.Tensor'> (NOTE [ Class names under the alias ])


def uninstall():
    """Remove the hook and forget the torch names it created.

    Args:
        (none)

    Returns:
        None.

    Example::

        >>> from ember import compat
        >>> was_installed = compat.is_installed()
        >>> compat.uninstall(); compat.is_installed()
        False
        >>> if was_installed:
        ...     compat.install()
    """
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    if _names.watcher in sys.meta_path:
        sys.meta_path.remove(_names.watcher)
    if _libraries.finder in sys.meta_path:
        sys.meta_path.remove(_libraries.finder)
    _dtype.printed_module[0] = "ember"
    _names.restore()
    for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
        if getattr(sys.modules[name], "__name__", "").startswith("ember"):
            del sys.modules[name]


def is_installed():
    """Whether ``import torch`` currently gives ember (the hook ``install`` puts in place).

    Args:
        (none)

    Returns:
        bool: True while the hook is installed.

    Example::

        >>> from ember import compat
        >>> isinstance(compat.is_installed(), bool)
        True
    """
    return _finder in sys.meta_path
