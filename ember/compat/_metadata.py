"""Package metadata of ``torch`` while the alias is installed.

NOTE [ torch's metadata under the alias ]
Libraries decide whether torch is there, and which version, from its package metadata as
often as from ``import torch`` (``importlib.metadata.version("torch")``: transformers,
accelerate, timm's helpers). With the alias installed, ``import torch`` gives ember, so the
metadata answers for ember too: a distribution named ``torch`` whose version is
``ember.__version__`` (the PyTorch release whose API ember follows, with ember's own as the
local label). Without it, a library imported beside the alias would see no torch at all in
an environment without PyTorch, or the version of a PyTorch it is not running on.
``_TorchFinder.find_distributions`` hands it out, ahead of any installed PyTorch's.

Example::

    >>> from ember.compat._metadata import torch_distribution
    >>> torch_distribution().metadata["Name"]
    'torch'
"""

from __future__ import annotations

import importlib.metadata
import os
import pathlib

__all__ = ["find_distributions", "torch_distribution"]


class _TorchDistribution(importlib.metadata.Distribution):
    """The ``torch`` distribution that ember stands for (NOTE [ torch's metadata under the
    alias ])."""

    def read_text(self, filename):
        import ember

        if filename == "METADATA":
            return ("Metadata-Version: 2.1\nName: torch\n"
                    f"Version: {ember.__version__}\n"
                    "Summary: ember, imported as torch through ember.compat\n")
        if filename == "top_level.txt":
            return "torch\n"
        return None

    def locate_file(self, path):
        import ember

        return pathlib.Path(os.path.dirname(ember.__file__)) / path


def torch_distribution():
    """The ``torch`` distribution ember answers with while the alias is installed.

    Args:
        (none)

    Returns:
        importlib.metadata.Distribution: named ``torch``, version ``ember.__version__``.

    Example::

        >>> import ember
        >>> torch_distribution().version == str(ember.__version__)
        True
    """
    return _TorchDistribution()


def find_distributions(context=None):
    """The ``torch`` distribution when ``context`` asks for it (or for every distribution).

    Args:
        context (importlib.metadata.DistributionFinder.Context, optional): the query; its
            ``name`` is the distribution asked for (None: all of them).

    Returns:
        list: ``[torch_distribution()]`` or ``[]``.

    Example::

        >>> from importlib.metadata import DistributionFinder
        >>> found = find_distributions(DistributionFinder.Context(name="torch"))
        >>> [d.metadata["Name"] for d in found]
        ['torch']
    """
    name = getattr(context, "name", None)
    if name is not None and name.lower().replace("-", "_").replace(".", "_") != "torch":
        return []
    return [torch_distribution()]
