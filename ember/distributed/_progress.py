"""A thread that drives MPI's progress for DDP's bucket all-reduces while backward runs.

NOTE [ MPI progress thread ]
MPI moves a message only inside its progress calls (NOTE [ Waiting on MPI ] in
``_group.py``), so an all-reduce that DDP starts when a bucket's last gradient arrives
stands still until someone calls into MPI again: with one thread, that is the next
gradient-ready hook (each one tests the earlier buckets) or the wait at the end of
backward, and the transfer mostly happens after backward instead of beside it. PyTorch's
gloo runs its collectives on threads of its own; ember does the same with one daemon
thread per process, the *driver*, which tests the requests of the works handed to it
(``drive``) while the main thread goes on with backward. NumPy's loops and BLAS release
the GIL, and so does mpi4py around every MPI call, so the two threads overlap wherever the
main thread runs a kernel.

- It is used only where it can help and is safe: a group of more than one process, on an
  MPI library initialised with ``MPI_THREAD_MULTIPLE`` (``_engine.mpi()`` asks for it;
  MPICH's wheels give it). The main thread keeps calling MPI for other collectives
  meanwhile; MPI forbids only two threads testing *the same* request at once, so a work
  has one owner at a time: the driver from ``drive`` until it saw the requests complete or
  the owner takes the work back (``take_back``, under the driver's lock, so never in the
  middle of one of the driver's calls). A world of one, and processes without mpi4py, never
  start the thread.
- ``Work.is_completed()`` on a driven work reads the driver's verdict and makes no MPI
  call; ``Work.wait()`` takes the work back and waits as before, on the calling thread
  (with the group's timeout and the same errors): at the end of backward the main thread
  has nothing else to do, and waiting there saves a hand-off between threads. The data
  are unpacked (the work's ``finish``) on the caller's thread, never on the driver.
- Pacing: a call that moved data (longer than ``_BUSY_CALL``) is followed at once by the
  next one; a call that found nothing to do means the peer is behind, and then the driver
  naps (a quarter of the time it has waited, ``_NAP_MIN``-``_NAP_MAX``, on a condition
  that a new work or a stop request wakes) instead of spinning as ``_wait_requests``
  does: here the main thread is doing useful work on the same CPUs, and every return from
  MPI asks it for the GIL. With no work it sleeps on the condition and costs nothing.
- A call that raises (a peer's connection broke) ends the work's driving with the error
  kept; the owner's ``wait()`` raises it as DistBackendError. A peer that hangs is the
  owner's timeout to notice: the driver has none.
- Futures: see NOTE [ Hook futures on the progress thread ] below.
- It stops in ``destroy_process_group`` and at interpreter exit (an ``atexit`` hook,
  registered after mpi4py's, so it runs before MPI is finalized), joining the thread.

NOTE [ Hook futures on the progress thread ]
With gloo, an asynchronous collective's ``get_future()`` is completed by gloo's worker
thread, which runs the ``then`` callbacks there as soon as the data arrived, whether or
not anyone waits (checked with PyTorch 2.13: a DDP comm hook itself runs on the thread
that runs backward, its ``then`` callbacks on another thread, or inline when the future
was already complete; a callback's error reaches ``backward()`` as a RuntimeError "Got
the following error when running the callback: ...", after which the next iteration
trains normally; an error raised by the hook itself reaches ``backward()`` unchanged and
the next forward refuses to start: "Expected to have finished reduction ..."). ember does
the same on this thread: ``Work.get_future()`` in a group where a driver runs hands the
work to it (``_future.from_work``); when its requests complete the driver, after
releasing its lock, unpacks the data and completes the Future (``Work._settle``), so its
callbacks run here. Waiting on such a Future waits for the driver, within the group's
timeout (``Work._await``); a callback that itself waits on another collective's Future
(it runs on this thread) takes that work back and waits for it here. Completing is
guarded by the work's lock, so an owner that waits on the work itself races safely: one
of the two threads unpacks and completes the Future. Collectives started *inside* a
callback run from this thread, at a time that differs between ranks: as with gloo, keeping
their order the same on every rank is the caller's business (ember's own PowerSGD starts
its second all-reduce from the thread that waits, not from a callback).
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from time import perf_counter_ns

from . import _engine

__all__ = []

_BUSY_CALL = 15e-6  # seconds: a progress call longer than this moved data
_NAP_MIN, _NAP_MAX = 20e-6, 2e-3  # seconds

#: whether DDP hands its bucket all-reduces to the driver (``EMBER_DDP_PROGRESS_THREAD=0``
#: turns it off; ``bench/ddp.py`` flips it to compare)
ENABLED = os.environ.get("EMBER_DDP_PROGRESS_THREAD", "1") != "0"

_driver = None
_multiple = None


def _thread_multiple() -> bool:
    global _multiple
    if _multiple is None:
        MPI = _engine.mpi()
        _multiple = MPI.Query_thread() >= MPI.THREAD_MULTIPLE
    return _multiple


def driver_for(pg):
    """The driver to hand ``pg``'s works to, or None where none runs (a world of one, no
    mpi4py, MPI without THREAD_MULTIPLE, or turned off)."""
    if not ENABLED or pg.size() < 2 or not _engine.available() or not _thread_multiple():
        return None
    global _driver
    if _driver is None:
        _driver = _Driver()
    return _driver


def stop() -> None:
    """Stop the driver thread, if one runs (``destroy_process_group``, interpreter exit)."""
    global _driver
    d, _driver = _driver, None
    if d is not None:
        d.stop()


class _Driver:
    """The progress thread and the works it drives (NOTE [ MPI progress thread ])."""

    def __init__(self):
        self._cv = threading.Condition()
        self._works = []
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="ember_mpi_progress",
                                        daemon=True)
        self._thread.start()
        atexit.register(self.stop)

    def is_current(self) -> bool:
        """Whether the calling thread is this driver's thread."""
        return threading.current_thread() is self._thread

    def drive(self, work, event=None) -> None:
        """Make ``work``'s requests progress on the thread; ``event``, a profiler event,
        gets its end time when they complete."""
        with self._cv:
            work._driver = self
            work._event = event
            self._works.append(work)
            self._cv.notify()

    def attach(self, work, fut) -> bool:
        """Make the driver complete ``fut`` with ``work`` (driving the work if it is not
        yet); False where it cannot: the work was driven and is finished, or the driver
        stops. Under the lock, so the driver never misses the Future of a work it
        completes."""
        with self._cv:
            if self._stopping or work._driver not in (None, self):
                return False
            if work._driver is None:
                if work._driven_done or work._done:
                    return False
                work._driver = self
                self._works.append(work)
                self._cv.notify()
            work._future = fut
            return True

    def take_back(self, work) -> None:
        """Stop driving ``work`` (the caller will test it); waits out a call in progress."""
        with self._cv:
            if work._driver is self:
                work._driver = None
                self._works.remove(work)

    def stop(self) -> None:
        with self._cv:
            self._stopping = True
            for w in self._works:
                w._driver = None
            self._works.clear()
            self._cv.notify()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)
        atexit.unregister(self.stop)

    def _run(self):
        MPI = _engine.mpi()
        testall = MPI.Request.Testall
        clock = time.perf_counter
        cv = self._cv
        waited_since = None
        with cv:
            while not self._stopping:
                works = self._works
                if not works:
                    waited_since = None
                    cv.wait()
                    continue
                moved = False
                settle = []
                for w in list(works):
                    start = clock()
                    try:
                        done = testall(w._requests)
                    except MPI.Exception as e:
                        w._failure = e.Get_error_string()
                        done = True
                    if clock() - start > _BUSY_CALL:
                        moved = True
                    if done:
                        if w._event is not None:
                            w._event.end = perf_counter_ns()
                        w._driven_done = True  # before ``_driver``: is_completed reads
                        w._driver = None       # them without the lock, in this order
                        works.remove(w)
                        if w._future is not None:
                            settle.append(w)
                if settle:  # NOTE [ Hook futures on the progress thread ]: unlocked
                    cv.release()
                    try:
                        for w in settle:
                            _settle(w)
                    finally:
                        cv.acquire()
                    continue
                now = clock()
                if moved or waited_since is None:
                    waited_since = now
                    if moved:
                        continue
                cv.wait(min(_NAP_MAX, max(_NAP_MIN, (now - waited_since) / 4)))


def _settle(work) -> None:
    """Complete ``work``'s Future on the driver thread; an error there goes to the Future
    (a second completion, raced by an owner that timed out, is dropped)."""
    try:
        work._settle()
    except Exception as e:  # noqa: BLE001 - the Future's, never the thread's
        fut, work._future = work._future, None
        if fut is not None and not fut.done():
            try:
                fut.set_exception(e)
            except RuntimeError:
                pass
