"""``CheckpointException``: what a failed distributed save or load raises on every rank."""

from __future__ import annotations

__all__ = ["CheckpointException"]


class CheckpointException(BaseException):
    """A save or load failed; ``failures`` maps each failing rank to its exception.

    Like PyTorch's, it derives from ``BaseException`` (not ``Exception``), so a broad
    ``except Exception`` in a training loop does not swallow a failed checkpoint.

    Args:
        msg (str): what failed.
        failures (dict): rank -> the exception that rank raised.

    Example::

        >>> from ember.distributed.checkpoint import CheckpointException
        >>> e = CheckpointException("load", {0: RuntimeError("missing key")})
        >>> sorted(e.failures)
        [0]
    """

    def __init__(self, msg: str, failures: dict):
        super().__init__(msg, failures)
        self._failures = failures

    @property
    def failures(self) -> dict:
        """Rank -> the exception it raised."""
        return self._failures

    def __str__(self):
        lines = [f"CheckpointException ranks:{self._failures.keys()}"]
        for rank, exc in self._failures.items():
            lines.append(f"(RANK {rank}) {type(exc).__name__}: {exc}")
        return "\n".join(lines)
