"""``ember.futures``: values that arrive later, as ``torch.futures``.

A ``Future`` is completed once, with a value (``set_result``) or an error
(``set_exception``), from any thread; ``wait()`` blocks until then. Callbacks added with
``add_done_callback`` or ``then`` run in the order they were added, in the thread that
completes the Future (or at once, in the caller's thread, when it is already complete).
``rpc_async`` (``ember.distributed.rpc``), ``ember.jit.fork`` and asynchronous
collectives return them; ``collect_all`` / ``wait_all`` combine several.

NOTE [ Future errors ]
Errors follow PyTorch: ``wait()`` and ``value()`` re-raise the stored exception itself. A
``then`` callback that raises completes the child Future with a RuntimeError that names
the callback's error and its traceback ("Got the following error when running the
callback: ..."), chained to the original through ``__cause__``. An ``add_done_callback``
callback that raises is logged and ignored: the Future is already complete and nothing
waits on the callback. ``collect_all`` completes once every input has, with the first
failed input's error in list order.

NOTE [ Lazy futures ] (``ember/distributed/_future.py``) explains ``_waiter`` / ``_poll``:
a Future may hold a function that produces its value when someone waits, for engines
(MPI) that make progress only when asked.
"""

from __future__ import annotations

import logging
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Future", "collect_all", "wait_all"]

T = TypeVar("T")
S = TypeVar("S")

_log = logging.getLogger("ember.futures")

_COMPLETED_TWICE = ("Attempting to mark a completed Future as complete again. Note that a "
                    "Future can only be marked completed once.")


def _check_devices(devices):
    if devices is None:
        return []
    import ember

    out = []
    for d in devices:
        dev = ember.device(d) if not isinstance(d, int) else ember.device("cuda", d)
        if dev.type == "cpu":
            raise ValueError(f"Expected devices to have indices, got {dev}")
        if dev.type == "cuda" and not ember.cuda.is_available():
            raise RuntimeError("ember is not linked with support for cuda devices")
        out.append(dev)
    return out


class Future(Generic[T]):
    """A value that becomes available later: the result of ``rpc_async``, of
    ``ember.jit.fork`` or of an asynchronous collective. See NOTE [ Future errors ].

    Args:
        devices: CUDA devices the value's tensors may live on (each needs an index);
            CPU values need none.

    Example::

        >>> fut = ember.futures.Future()
        >>> child = fut.then(lambda f: f.wait() + 1)
        >>> fut.set_result(1)
        >>> child.wait()
        2
    """

    def __init__(self, *, devices=None):
        self._devices = _check_devices(devices)
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._done = False
        self._value = None
        self._exc = None
        self._callbacks = []
        self._waiter = None  # NOTE [ Lazy futures ]
        self._poll = None

    # -- completing -----------------------------------------------------------------------------

    def set_result(self, result: T) -> None:
        """Complete the Future with ``result``, wake its waiters and run its callbacks.

        Args:
            result: the value.

        Raises:
            RuntimeError: the Future is already complete.

        Example::

            >>> fut = ember.futures.Future()
            >>> fut.set_result(ember.ones(2))
            >>> fut.wait()
            tensor([1., 1.])
        """
        self._complete(result, None)

    def set_exception(self, result) -> None:
        """Complete the Future with an error: ``wait()`` and ``value()`` raise it.

        Args:
            result (BaseException): the error.

        Raises:
            AssertionError: ``result`` is not an exception instance.
            RuntimeError: the Future is already complete.

        Example::

            >>> fut = ember.futures.Future()
            >>> fut.set_exception(ValueError("no value"))
            >>> fut.wait()
            Traceback (most recent call last):
            ...
            ValueError: no value
        """
        if not isinstance(result, BaseException):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    def _complete(self, value, exc):
        with self._lock:
            if self._done:
                raise RuntimeError(_COMPLETED_TWICE)
            self._value, self._exc, self._done = value, exc, True
            self._waiter = self._poll = None
            callbacks, self._callbacks = self._callbacks, []
        self._event.set()
        for cb in callbacks:
            self._run_callback(cb)

    def _run_callback(self, cb):
        try:
            cb(self)
        except Exception:  # noqa: BLE001 - see NOTE [ Future errors ]
            _log.error("Got the following error when running the callback:\n%s",
                       traceback.format_exc())

    # -- reading --------------------------------------------------------------------------------

    def done(self) -> bool:
        """Whether the Future holds a value or an error; never blocks.

        Returns:
            bool

        Example::

            >>> fut = ember.futures.Future()
            >>> fut.done()
            False
        """
        if not self._done and self._poll is not None and self._poll():
            self._drive()
        return self._done

    def _drive(self):
        with self._lock:
            waiter, self._waiter = self._waiter, None
        if waiter is not None and not self._done:
            try:
                waiter()
            except Exception as e:  # noqa: BLE001 - the error belongs to the Future
                if not self._done:
                    self.set_exception(e)

    def wait(self) -> T:
        """Block until the Future completes; its value.

        Returns:
            The value it was completed with.

        Raises:
            The exception it was completed with (see NOTE [ Future errors ]).

        Example::

            >>> fut = ember.futures.Future()
            >>> fut.set_result("ready")
            >>> fut.wait()
            'ready'
        """
        if not self._done:
            self._drive()
            self._event.wait()
        if self._exc is not None:
            raise self._exc
        return self._value

    def value(self) -> T:
        """The value of a completed Future, without waiting (call it after ``wait()`` or
        inside a callback).

        Returns:
            The value.

        Raises:
            RuntimeError: the Future is not complete yet.
            The exception it was completed with.

        Example::

            >>> fut = ember.futures.Future()
            >>> fut.set_result(3)
            >>> fut.value()
            3
        """
        if not self.done():
            raise RuntimeError("Future.value(): the Future is not complete yet; call wait() "
                               "first, or read value() inside a then()/add_done_callback "
                               "callback")
        if self._exc is not None:
            raise self._exc
        return self._value

    # -- chaining -------------------------------------------------------------------------------

    def then(self, callback: Callable[[Future[T]], S]) -> Future[S]:
        """A new Future holding ``callback(self)``, computed once this one completes.

        Args:
            callback: called with this Future; its return value completes the child.

        Returns:
            Future: the child. If ``callback`` raises, the child holds a RuntimeError
            naming that error (NOTE [ Future errors ]).

        Raises:
            TypeError: ``callback`` is not callable.

        Example::

            >>> fut = ember.futures.Future()
            >>> doubled = fut.then(lambda f: f.value() * 2)
            >>> fut.set_result(21)
            >>> doubled.wait()
            42
        """
        if not callable(callback):
            raise TypeError(f"then(): expected a callable, got {type(callback).__name__}")
        child = Future()

        def run(parent):
            try:
                result = callback(parent)
            except Exception as e:  # noqa: BLE001 - the error belongs to the child
                tb = "".join(traceback.format_tb(e.__traceback__))
                err = RuntimeError(f"Got the following error when running the callback: "
                                   f"{type(e).__name__}: {e}\n\nAt:\n{tb}")
                err.__cause__ = e
                child.set_exception(err)
            else:
                child.set_result(result)

        with self._lock:
            if not self._done and (self._waiter is not None or self._poll is not None):
                child._waiter, child._poll = self._drive, self.done
        self.add_done_callback(run)
        return child

    def add_done_callback(self, callback: Callable[[Future[T]], None]) -> None:
        """Run ``callback(self)`` when the Future completes -- at once when it already has.
        Its return value is ignored, and an error it raises is logged, not propagated.

        Args:
            callback: called with this Future.

        Raises:
            TypeError: ``callback`` is not callable.

        Example::

            >>> seen = []
            >>> fut = ember.futures.Future()
            >>> fut.add_done_callback(lambda f: seen.append(f.value()))
            >>> fut.set_result(5); seen
            [5]
        """
        if not callable(callback):
            raise TypeError(f"add_done_callback(): expected a callable, got "
                            f"{type(callback).__name__}")
        with self._lock:
            if not self._done:
                self._callbacks.append(callback)
                return
        self._run_callback(callback)

    def __reduce__(self):
        raise RuntimeError("Can not pickle ember.futures.Future")


def _future_types():
    # ember.distributed's collective Futures keep the same fields (NOTE [ Lazy futures ])
    dist_future = sys.modules.get("ember.distributed._future")
    return (Future,) if dist_future is None else (Future, dist_future.Future)


def _check_futures(futures, fname):
    if not isinstance(futures, (list, tuple)):
        raise TypeError(f"{fname}(): expected a list of Futures, got {type(futures).__name__}")
    types = _future_types()
    for f in futures:
        if not isinstance(f, types):
            raise TypeError(f"{fname}(): expected a list of Futures, got an element of type "
                            f"{type(f).__name__}")


def collect_all(futures: list[Future]) -> Future[list[Future]]:
    """A Future that completes when every Future in ``futures`` has; its value is the list
    of those Futures. If any failed, it holds the first failure's error (in list order).

    Args:
        futures (list[Future]): the Futures to wait for.

    Returns:
        Future[list[Future]]

    Raises:
        TypeError: ``futures`` is not a list of Futures.

    Example::

        >>> a, b = ember.futures.Future(), ember.futures.Future()
        >>> both = ember.futures.collect_all([a, b])
        >>> a.set_result(1); b.set_result(2)
        >>> [f.wait() for f in both.wait()]
        [1, 2]
    """
    _check_futures(futures, "collect_all")
    futures = list(futures)
    out = Future()
    if not futures:
        out.set_result([])
        return out
    remaining = [len(futures)]
    lock = threading.Lock()

    def one_done(_):
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            failed = next((f for f in futures if f._exc is not None), None)
            if failed is not None:
                out.set_exception(failed._exc)
            else:
                out.set_result(futures)

    lazy = [f for f in futures if f._waiter is not None or f._poll is not None]
    if lazy:
        out._waiter = lambda: [f._drive() for f in lazy]
        out._poll = lambda: all(f.done() for f in lazy)
    for f in futures:
        f.add_done_callback(one_done)
    return out


def wait_all(futures: list[Future]) -> list:
    """Wait for every Future in ``futures``; their values, in order.

    Args:
        futures (list[Future]): the Futures.

    Returns:
        list: the values.

    Raises:
        The first failed Future's error (in list order), once all have completed.
        TypeError: ``futures`` is not a list of Futures.

    Example::

        >>> a, b = ember.futures.Future(), ember.futures.Future()
        >>> a.set_result("x"); b.set_result("y")
        >>> ember.futures.wait_all([a, b])
        ['x', 'y']
    """
    return [f.wait() for f in collect_all(futures).wait()]
