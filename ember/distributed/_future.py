"""``Future``: the value of an asynchronous collective, as ``torch.futures.Future``.

NOTE [ Lazy futures ]
MPI makes progress when a process asks it to (a test or a wait on a request), and ember
has no background thread driving collectives. So a Future made from a ``Work`` handle
holds a *waiter*: ``wait()`` (or ``value()``) calls it, which waits for the collective and
sets the result; ``done()`` polls the request without blocking. ``then(callback)`` returns
a child Future whose waiter is the parent's, so a chain such as DDP's communication hooks
(all-reduce, then divide, then cast back) runs when its end is waited on, or as soon as
its start is set with ``set_result``. A Future with no waiter is completed by
``set_result`` / ``set_exception`` (from any thread).
"""

from __future__ import annotations

import threading

__all__ = ["Future"]


class Future:
    """A value that becomes available later (the result of an ``async_op`` collective or
    of a DDP communication hook); see NOTE [ Lazy futures ].

    Args:
        devices: accepted for compatibility (CPU futures need none).

    Example::

        >>> fut = ember.distributed.Future()
        >>> fut.set_result(3)
        >>> fut.then(lambda f: f.value() + 1).wait()
        4
    """

    def __init__(self, *, devices=None):
        self._done = False
        self._value = None
        self._exc = None
        self._callbacks = []
        self._waiter = None
        self._poll = None
        self._event = threading.Event()

    # -- completing -----------------------------------------------------------------------------

    def set_result(self, result) -> None:
        """Complete the future with ``result`` and run the callbacks.

        Raises:
            RuntimeError: it was already completed.
        """
        if self._done:
            raise RuntimeError("Attempting to mark a completed Future as complete again. Note "
                               "that a Future can only be marked completed once.")
        self._value = result
        self._finish()

    def set_exception(self, result) -> None:
        """Complete the future with an exception; ``wait()`` raises it.

        Raises:
            RuntimeError: it was already completed.
        """
        if self._done:
            raise RuntimeError("Attempting to mark a completed Future as complete again. Note "
                               "that a Future can only be marked completed once.")
        self._exc = result
        self._finish()

    def _finish(self):
        self._done = True
        self._event.set()
        callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    # -- reading --------------------------------------------------------------------------------

    def done(self) -> bool:
        """Whether the value (or an error) is available; never blocks."""
        if not self._done and self._poll is not None and self._poll():
            self._drive()
        return self._done

    def _drive(self):
        if not self._done and self._waiter is not None:
            waiter, self._waiter = self._waiter, None
            try:
                waiter()
            except Exception as e:  # noqa: BLE001 - the error belongs to the future
                if not self._done:
                    self.set_exception(e)

    def wait(self):
        """Block until the future completes; its value.

        Raises:
            the exception it was completed with.
        """
        self._drive()
        if not self._done:
            self._event.wait()
        if self._exc is not None:
            raise self._exc
        return self._value

    def value(self):
        """The value (waiting for it if needed); raises the stored exception if any."""
        return self.wait()

    def then(self, callback) -> Future:
        """A new Future holding ``callback(self)``, computed once this one completes.

        Args:
            callback: called with this Future; its return value is the child's value.

        Returns:
            Future
        """
        child = Future()

        def run(parent):
            try:
                child.set_result(callback(parent))
            except Exception as e:  # noqa: BLE001 - the error belongs to the child
                child.set_exception(e)

        self.add_done_callback(run)
        if not child._done:
            child._waiter = self._drive
            child._poll = self.done
        return child

    def add_done_callback(self, callback) -> None:
        """Run ``callback(self)`` when the future completes (now, if it already has)."""
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)

    def __repr__(self):
        return f"Future(done={self._done})"


def from_work(work, outputs) -> Future:
    """A Future completed with ``outputs`` when ``work`` finishes (lazily)."""
    fut = Future()

    def waiter():
        work.wait()
        fut.set_result(outputs)

    fut._waiter = waiter
    fut._poll = work.is_completed
    return fut
