"""Launcher options that also read ``PET_<OPTION>`` environment variables
(``torch.distributed.argparse_util``): a job scheduler that sets ``PET_NNODES``,
``PET_NPROC_PER_NODE``, ``PET_MASTER_ADDR`` ... configures ``torchrun`` without a command
line, and a value given on the command line still wins.

Example::

    >>> import argparse, os
    >>> from ember.distributed.argparse_util import env
    >>> os.environ["PET_FOO"] = "from_env"
    >>> p = argparse.ArgumentParser(); _ = p.add_argument("--foo", action=env, default="x")
    >>> p.parse_args([]).foo, p.parse_args(["--foo", "y"]).foo
    ('from_env', 'y')
    >>> del os.environ["PET_FOO"]
"""

from __future__ import annotations

import os
from argparse import Action

__all__ = ["check_env", "env"]


class env(Action):  # noqa: N801 -- PyTorch's name
    """An option whose default is ``PET_<DEST>`` when that variable is set (``dest`` in
    upper case: ``--nproc-per-node`` reads ``PET_NPROC_PER_NODE``); a required option so
    set is no longer required.

    Args:
        dest (str): the option's destination.
        default: the default when the variable is not set.
        required (bool): whether the option must be given.

    Example::

        >>> import argparse
        >>> p = argparse.ArgumentParser(); _ = p.add_argument("--bar", action=env, default=3)
        >>> p.parse_args([]).bar
        3
    """

    def __init__(self, dest, default=None, required=False, **kwargs) -> None:
        default = os.environ.get(f"PET_{dest.upper()}", default)
        if default:
            required = False
        super().__init__(dest=dest, default=default, required=required, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)


class check_env(Action):  # noqa: N801 -- PyTorch's name
    """A flag (like ``store_true``) that is also on when ``PET_<DEST>`` is a non-zero
    integer (``PET_STANDALONE=1`` means ``--standalone``).

    Args:
        dest (str): the flag's destination.
        default (bool): the value when neither the flag nor the variable is given.

    Example::

        >>> import argparse
        >>> p = argparse.ArgumentParser(); _ = p.add_argument("--quiet", action=check_env)
        >>> p.parse_args([]).quiet, p.parse_args(["--quiet"]).quiet
        (False, True)
    """

    def __init__(self, dest, default=False, **kwargs) -> None:
        default = bool(int(os.environ.get(f"PET_{dest.upper()}", "1" if default else "0")))
        super().__init__(dest=dest, const=True, default=default, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, self.const)
