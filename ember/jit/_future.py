"""The result of ``ember.jit.fork``: a value that is already there (work runs eagerly)."""

from __future__ import annotations


class Future:
    """The result of an asynchronous call; in ember the call has finished by the time the
    Future exists, so ``wait()`` returns at once.

    Example::

        >>> fut = ember.jit.fork(lambda x: x + 1, 1)
        >>> fut.done(), fut.wait()
        (True, 2)
    """

    def __init__(self, *, devices=None):
        self._done = False
        self._result = None
        self._exception = None
        self._callbacks = []

    def done(self) -> bool:
        """Whether the result (or an error) has been set."""
        return self._done

    def wait(self):
        """The result; re-raises the error the call raised."""
        if not self._done:
            raise RuntimeError("Future.wait(): the result was never set (ember runs forked "
                               "work eagerly, so nothing else will set it)")
        if self._exception is not None:
            raise self._exception
        return self._result

    def value(self):
        """The result, as ``wait()``."""
        return self.wait()

    def set_result(self, result) -> None:
        """Complete the Future with ``result`` and run the callbacks."""
        if self._done:
            raise RuntimeError("Future can only be marked completed once.")
        self._result, self._done = result, True
        self._run_callbacks()

    def set_exception(self, result) -> None:
        """Complete the Future with an error, raised by ``wait()``."""
        if self._done:
            raise RuntimeError("Future can only be marked completed once.")
        self._exception, self._done = result, True
        self._run_callbacks()

    def then(self, callback):
        """A new Future holding ``callback(self)``, run when this one completes."""
        out = Future()

        def chain(fut):
            try:
                out.set_result(callback(fut))
            except Exception as e:  # the callback's error goes to the chained Future
                out.set_exception(e)

        self.add_done_callback(chain)
        return out

    def add_done_callback(self, callback) -> None:
        """Run ``callback(self)`` when the Future completes (now, if it has)."""
        self._callbacks.append(callback)
        if self._done:
            self._run_callbacks()

    def _run_callbacks(self):
        callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    def __repr__(self):
        return f"<ember.jit.Future done={self._done}>"
