"""``python -m ember.distributed.launch``: the older launcher (``torch.distributed.launch``).

It is ``python -m ember.distributed.run`` (the same options) except that, unless
``--use-env`` is given, each worker also receives its local rank as the argument
``--local-rank=N`` before the script's own arguments, as scripts written for the old
launcher parse it. It warns that it is deprecated, as PyTorch's does.

Example::

    $ python -m ember.distributed.launch --nproc-per-node 2 train.py --lr 0.1
    # each worker: train.py --local-rank=<0 or 1> --lr 0.1
"""

from __future__ import annotations

import sys
import warnings

from .run import get_args_parser, run

__all__ = ["main", "parse_args", "launch"]


def parse_args(args=None):
    """Parse the launcher's command line: ``ember.distributed.run``'s options and
    ``--use-env``.

    Args:
        args (list of str, optional): the command line after the program name (None:
            ``sys.argv[1:]``).

    Returns:
        argparse.Namespace.

    Example::

        >>> from ember.distributed.launch import parse_args
        >>> parse_args(["--use-env", "t.py"]).use_env
        True
    """
    parser = get_args_parser()
    parser.add_argument("--use-env", "--use_env", dest="use_env", action="store_true",
                        help="pass the local rank in the LOCAL_RANK environment variable only, "
                             "not as --local-rank")
    return parser.parse_args(args)


def launch(args) -> int:
    """Start the workers ``args`` describes and wait for them.

    Args:
        args (argparse.Namespace): as :func:`parse_args` returns.

    Returns:
        int: 0 when every worker succeeded, else 1.

    Example::

        >>> from ember.distributed.launch import launch, parse_args
        >>> launch(parse_args(["--use-env", "--no-python", "true"]))
        0
    """
    return run(args)


def main(args=None) -> None:
    """The command-line entry point (warns that the module is deprecated).

    Args:
        args (list of str, optional): the command line after the program name.

    Returns:
        Does not return: exits with the workers' status.

    Example::

        >>> from ember.distributed.launch import main
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     main(["--use-env", "--no-python", "true"])
        Traceback (most recent call last):
        ...
        SystemExit: 0
    """
    warnings.warn(
        "The module torch.distributed.launch is deprecated\nand will be removed in future. "
        "Use torchrun.\nNote that --use-env is set by default in torchrun.\nIf your script "
        "expects `--local-rank` argument to be set, please\nchange it to read from "
        "`os.environ['LOCAL_RANK']` instead.", FutureWarning, stacklevel=2)
    sys.exit(launch(parse_args(args)))


if __name__ == "__main__":
    main()
