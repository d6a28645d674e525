"""Shared by the examples: ``--tensorboard DIR`` logs the losses for TensorBoard.

``add_tensorboard_arg(parser)`` adds the option; ``open_writer(args.tensorboard)`` returns an
``ember.utils.tensorboard.SummaryWriter`` for that directory, or, without the option, a
stand-in whose methods do nothing, so the training loop calls ``writer.add_scalar`` either
way. View the logs with ``tensorboard --logdir DIR``.
"""

from __future__ import annotations


def add_tensorboard_arg(parser):
    """Add ``--tensorboard DIR`` to ``parser``."""
    parser.add_argument("--tensorboard", metavar="DIR", default=None,
                        help="write TensorBoard event files (losses) to DIR; view them with "
                             "`tensorboard --logdir DIR` (needs the tensorboard package)")


class _NoWriter:
    """Stands in for a SummaryWriter when logging is off: every method does nothing."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def open_writer(log_dir):
    """A ``SummaryWriter`` writing to ``log_dir``, or a do-nothing stand-in when it is None.

    Exits with the install hint when ``log_dir`` is given but tensorboard is missing.
    """
    if not log_dir:
        return _NoWriter()
    try:
        from ember.utils.tensorboard import SummaryWriter
    except ImportError as e:
        raise SystemExit(f"--tensorboard: {e}") from e
    print(f"logging to TensorBoard: tensorboard --logdir {log_dir}")
    return SummaryWriter(log_dir)
