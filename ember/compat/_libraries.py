"""What particular libraries need from the alias beyond ``import torch`` giving ember (NOTE
[ Libraries that read torch's module name ]).

NOTE [ Libraries that read torch's module name ]
Under the alias ``torch.__name__`` stays ``"ember"``: it is how a program (and ember's own
tests) tells which of the two it runs on, and ember's module ``__getattr__`` and the import
system build submodule names from it. One library reads it as a check instead: pyro's
``pyro.distributions.torch_patch`` replaces a few methods of torch's distribution classes with
``patch_dependency("torch.distributions.HalfCauchy.log_prob")`` and friends, and
``patch_dependency`` asserts that the first part of each dotted target equals
``root_module.__name__``, ``root_module`` being the module its ``import torch`` bound. It only
reads the name while the decorators run, that is while that one module's body executes; the
rest of the target is walked with ``getattr``, which finds ember's classes.

So for the modules listed in ``_READ_TORCH_NAME``, and only while their body runs, ember's top
module answers ``__name__ == "torch"``; the name is ``"ember"`` again as soon as the body
returns or raises. Renaming ember for the whole process instead would change what every
program prints and reads for ``torch.__name__``.
"""

from __future__ import annotations

import sys

from ._names import WrappingFinder, WrappingLoader

__all__ = ["finder"]

# third-party modules whose body checks ``torch.__name__ == "torch"``
_READ_TORCH_NAME = frozenset({"pyro.distributions.torch_patch"})


class _NamedTorchWhileLoading(WrappingLoader):
    """Runs a module's own loader with ember's top module named ``torch``."""

    def exec_module(self, module):
        root = vars(sys.modules["ember"])
        own = root["__name__"]
        root["__name__"] = "torch"
        try:
            self._loader.exec_module(module)
        finally:
            root["__name__"] = own


finder = WrappingFinder(_READ_TORCH_NAME.__contains__, _NamedTorchWhileLoading)
