"""A worker program started in its own session, with its output files.

Example::

    >>> from ember.distributed.elastic.multiprocessing.subprocess_handler.subprocess_handler \\
    ...     import SubprocessHandler
    >>> SubprocessHandler("true", (), {}, "", "", 0).proc.wait()
    0
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

__all__ = ["SubprocessHandler"]

IS_WINDOWS = sys.platform == "win32"


def _default_signal() -> signal.Signals:
    return signal.CTRL_C_EVENT if IS_WINDOWS else signal.SIGTERM  # type: ignore[attr-defined]


class SubprocessHandler:
    """Starts ``entrypoint *args`` with this process's environment updated by ``env``; its
    streams go to the named files (``""``: this process's own).

    NOTE [ Workers in their own session ]
    The worker starts a new session (as PyTorch's launcher starts them), so ``close``
    signals its whole process group: programs the worker started (a shell script's
    commands, DataLoader processes) stop with it. The cost: a Ctrl-C typed at the terminal
    reaches the launcher only, which passes it on (``ember.distributed.run`` forwards
    SIGINT and SIGTERM).

    Args:
        entrypoint (str): the program.
        args (tuple): its arguments (made strings).
        env (dict[str, str]): variables to set.
        stdout (str): the output file, or ``""``.
        stderr (str): the error file, or ``""``.
        local_rank_id (int): its local rank.

    Example::

        >>> SubprocessHandler("false", (), {}, "", "", 0).proc.wait()
        1
    """

    def __init__(self, entrypoint: str, args: tuple, env: dict[str, str], stdout: str | None,
                 stderr: str | None, local_rank_id: int, numa_options=None) -> None:
        self._stdout = open(stdout, "w") if stdout else None  # noqa: SIM115 - kept open
        self._stderr = open(stderr, "w") if stderr else None  # noqa: SIM115
        env_vars = os.environ.copy()
        env_vars.update(env)
        self.local_rank_id = local_rank_id
        self.proc: subprocess.Popen = self._popen((entrypoint, *map(str, args)), env_vars)

    def _popen(self, args: tuple, env: dict[str, str]) -> subprocess.Popen:
        kwargs = {} if IS_WINDOWS else {"start_new_session": True}
        return subprocess.Popen(args=args, env=env, stdout=self._stdout, stderr=self._stderr,
                                **kwargs)

    def close(self, death_sig: signal.Signals | None = None) -> None:
        """Signal the worker's process group (``death_sig``, default SIGTERM) and close its
        files.

        Args:
            death_sig (signal.Signals, optional): the signal.

        Returns:
            None
        """
        death_sig = death_sig or _default_signal()
        try:
            if IS_WINDOWS:
                self.proc.send_signal(death_sig)
            else:
                os.killpg(self.proc.pid, death_sig)
        except ProcessLookupError:
            pass
        self.close_files()

    def close_files(self) -> None:
        """Close the worker's output files (this process's copies).

        Returns:
            None
        """
        for f in (self._stdout, self._stderr):
            if f is not None and not f.closed:
                f.close()
