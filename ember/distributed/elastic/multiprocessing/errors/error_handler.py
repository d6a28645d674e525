"""Writing a worker's exception where its launcher reads it (``TORCHELASTIC_ERROR_FILE``).

Example::

    >>> from ember.distributed.elastic.multiprocessing.errors.error_handler import ErrorHandler
    >>> ErrorHandler().initialize()
"""

from __future__ import annotations

import json
import logging
import os
import time
import traceback

__all__ = ["ErrorHandler"]

logger = logging.getLogger(__name__)


class ErrorHandler:
    """Writes a worker's exception to the file ``TORCHELASTIC_ERROR_FILE`` names.

    Example::

        >>> from ember.distributed.elastic.multiprocessing.errors import ErrorHandler
        >>> ErrorHandler().initialize()
    """

    def _get_error_file_path(self):
        return os.environ.get("TORCHELASTIC_ERROR_FILE")

    def initialize(self) -> None:
        """Prepare for recording (nothing to set up in ember).

        Returns:
            None
        """

    def record_exception(self, e: BaseException) -> None:
        """Write ``e`` and the current traceback to the error file, when one is named.

        Args:
            e (BaseException): the exception being handled.

        Returns:
            None
        """
        path = self._get_error_file_path()
        if not path:
            return
        data = {"message": {"message": f"{type(e).__name__}: {e}",
                            "extraInfo": {"py_callstack": traceback.format_exc(),
                                          "timestamp": str(int(time.time()))}}}
        with open(path, "w") as f:
            json.dump(data, f)

    def dump_error_file(self, rootcause_error_file: str, error_code: int = 0) -> None:
        """Copy a child's error file to this process's error file (a failure that started
        in a child process this one launched).

        Args:
            rootcause_error_file (str): the child's error file.
            error_code (int): the child's exit code, recorded when the file lacks one.

        Returns:
            None
        """
        path = self._get_error_file_path()
        with open(rootcause_error_file) as f:
            data = json.load(f)
        if error_code and isinstance(data.get("message"), dict):
            data["message"].setdefault("errorCode", error_code)
        if path:
            with open(path, "w") as f:
                json.dump(data, f)
