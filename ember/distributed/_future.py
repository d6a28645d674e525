"""``Future``: the value of an asynchronous collective, as ``torch.futures.Future``.

NOTE [ Lazy futures ]
MPI makes progress when a process asks it to (a test or a wait on a request). Where no
progress thread runs (a group of one process, no mpi4py, MPI without
``MPI_THREAD_MULTIPLE``, or ``EMBER_DDP_PROGRESS_THREAD=0``), a Future made from a
``Work`` handle holds a *waiter*: ``wait()`` calls it, which waits for the collective and
sets the result; ``done()`` polls the request without blocking. ``then(callback)``
returns a child Future whose waiter is the parent's, so a chain such as DDP's
communication hooks (all-reduce, then divide, then cast back) runs when its end is waited
on, or as soon as its start is set with ``set_result``. A Future with no waiter is
completed by ``set_result`` / ``set_exception`` (from any thread). Elsewhere the progress
thread completes it (NOTE [ Hook futures on the progress thread ] in ``_progress.py``).

The class is ``ember.futures.Future`` (errors of ``then`` callbacks as PyTorch reports
them: NOTE [ Future errors ]), under the name ``ember.distributed.Future``.
"""

from __future__ import annotations

from ..futures import Future as _Future

__all__ = ["Future"]


class Future(_Future):
    """A value that becomes available later (the result of an ``async_op`` collective or
    of a DDP communication hook): ``ember.futures.Future``, see NOTE [ Lazy futures ].

    Args:
        devices: accepted for compatibility (CPU futures need none).

    Example::

        >>> fut = ember.distributed.Future()
        >>> fut.set_result(3)
        >>> fut.then(lambda f: f.value() + 1).wait()
        4
    """


def from_work(work, outputs) -> Future:
    """A Future completed with ``outputs`` when ``work`` finishes: by the progress thread
    where one runs for the work's group, else lazily (NOTE [ Lazy futures ]).

    Args:
        work: a ``Work`` (or an NCCL work: always lazy).
        outputs: the Future's value.

    Returns:
        Future
    """
    from . import _progress

    if getattr(work, "_future", None) is not None:  # asked twice: the same Future
        return work._future
    fut = Future()
    driver = getattr(work, "_driver", None)
    if driver is None and work.is_completed():  # (a driven work is the driver's to test)
        fut.set_result(outputs)
        return fut
    pg = getattr(work, "_pg", None)
    if driver is None and pg is not None:
        driver = _progress.driver_for(pg)
    if driver is not None and getattr(work, "_future", True) is None and \
            driver.attach(work, fut):
        fut._waiter = work._await
        return fut

    def waiter():
        work.wait()
        if not fut.done():
            fut.set_result(outputs)

    fut._waiter = waiter
    fut._poll = work.is_completed
    return fut


def when_waited(fut, fn) -> Future:
    """A Future holding ``fn(fut)``, computed by the thread that waits on it once ``fut``
    completed -- never as a callback on the progress thread. For hook steps that start
    collectives: DDP waits on its buckets in order on every rank, so the collectives start
    in the same order everywhere (NOTE [ Hook futures on the progress thread ]).

    Args:
        fut: the Future to wait for.
        fn: called with ``fut`` once it completed; its return value is the result.

    Returns:
        Future
    """
    out = Future()

    def waiter():
        fut.wait()
        out.set_result(fn(fut))

    out._waiter = waiter
    return out
