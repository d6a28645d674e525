"""The Python function events of ``with_stack=True``: the user's Python calls as events.

NOTE [ Python function events ]
With ``with_stack=True`` PyTorch's profiler also records the Python calls made while it
runs, as events in the same tree as the ops (category ``python_function`` in the trace):
``script.py(12): train_step`` > ``aten::mm``, named ``file(first line): function`` with the
file relative to its ``sys.path`` entry, and C functions as their ``repr``
(``<built-in function len>``); the frames already running when recording starts are open
events from its start, named by their current line. ember's ops are Python, so recording
every call would bury the ops under ember's own machinery; what is recorded is what
PyTorch, whose ops are C++, would show: a call is traced when it is not in ember's own files
and either its caller is traced or (called back from ember: a module's ``forward``, an
``autograd.Function``'s ``backward``) it is the user's code rather than a library's
(standard library or site-packages). A library function ember calls, and everything under
it, is not recorded. C functions are recorded when a traced frame calls them. The hook is
``sys.setprofile`` on the recording thread, installed only for ``with_stack`` sessions.
It is called for every call and return on the thread, so it sleeps (``sys.setprofile(None)``
and back) where only ember's code can run and nothing would be recorded: inside an op and
the recorder's bookkeeping of it, the engine's hook for each backward node, the formula of
a node of ember's own ops (not a user's ``autograd.Function``), and the ``step`` of an
ember optimizer called without a closure or hooks of its own. On the GPT bench step that
took the hook's calls from ~80k to ~25k per step (session 17).
"""

from __future__ import annotations

import functools
import os
import sys
import sysconfig

__all__ = []


@functools.lru_cache(maxsize=1)
def _library_prefixes():
    """The folders of the standard library and of installed packages."""
    paths = sysconfig.get_paths()
    prefixes = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    prefixes.update(p for p in sys.path if "site-packages" in p or "dist-packages" in p)
    return tuple(sorted(p + os.sep for p in prefixes if p))


_short_names: dict = {}


def short_path(fname):
    """``fname`` relative to the longest ``sys.path`` entry holding it, as PyTorch names
    Python events' files."""
    name = _short_names.get(fname)
    if name is None:
        name = fname
        best = 0
        for p in sys.path:
            p = p or os.getcwd()
            if len(p) > best and fname.startswith(p + os.sep):
                best = len(p)
                name = fname[best + 1:]
        if len(_short_names) > 8192:
            _short_names.clear()
        _short_names[fname] = name
    return name


def _restore(previous):
    """Give the thread's profile hook back to ``previous``: a Python function goes back
    through ``sys.setprofile``; a profiler written in C (``cProfile.Profile``, which
    ``sys.getprofile`` returns though it cannot be called) re-installs itself."""
    if previous is None or callable(previous):
        sys.setprofile(previous)
    elif hasattr(previous, "enable"):
        previous.enable()
    else:
        sys.setprofile(None)


class PythonTracer:
    """Records a session's Python function events (NOTE [ Python function events ])."""

    def __init__(self, session, is_ember_file):
        self.session = session
        self._is_ember = is_ember_file
        self._library = _library_prefixes()
        self._kinds: dict = {}     # file name -> "ember", "library" or "user"
        self._traced: dict = {}    # id(frame) -> its event, for the traced frames running
        self._c_calls = []         # (id(frame), C function, event) of open C calls
        self._previous = None
        #: the function given to ``sys.setprofile`` (ops compare it by identity to pause it)
        self.hook = self._hook

    def _kind(self, fname):
        kind = self._kinds.get(fname)
        if kind is None:
            if self._is_ember(fname):
                kind = "ember"
            elif fname.startswith("<") or fname.startswith(self._library):
                kind = "library"
            else:
                kind = "user"
            self._kinds[fname] = kind
        return kind

    def start(self, frame):
        """Open events for the traced frames running at ``frame`` and outside it, then
        install the hook."""
        running = []
        f = frame
        while f is not None:
            running.append(f)
            f = f.f_back
        for f in reversed(running):
            code = f.f_code
            if self._kind(code.co_filename) == "ember":
                continue
            name = f"{short_path(code.co_filename)}({f.f_lineno}): {code.co_name}"
            self._traced[id(f)] = self.session.begin(name, "python")
        self._previous = sys.getprofile()
        sys.setprofile(self.hook)

    def stop(self):
        if sys.getprofile() is self.hook:
            _restore(self._previous)
        self._traced.clear()
        self._c_calls.clear()

    def _hook(self, frame, event, arg):
        # called for every Python and C call and return on the thread: the common cases
        # (C calls and calls in frames that are not traced) leave first
        if event == "c_call":
            if id(frame) in self._traced:
                self._c_calls.append((id(frame), arg, self.session.begin(repr(arg), "python")))
        elif event == "return":
            ev = self._traced.pop(id(frame), None)
            if ev is not None:
                self.session.end(ev)
        elif event == "call":
            if not self.session.active:   # stopped from another thread: leave this one
                _restore(self._previous)
                return
            code = frame.f_code
            kind = self._kinds.get(code.co_filename) or self._kind(code.co_filename)
            if kind == "ember":
                return
            back = frame.f_back
            if back is None or id(back) not in self._traced:
                if back is not None and (kind == "library" or
                                         self._kind(back.f_code.co_filename) != "ember"):
                    return
            name = f"{short_path(code.co_filename)}({code.co_firstlineno}): {code.co_name}"
            self._traced[id(frame)] = self.session.begin(name, "python")
        elif self._c_calls:   # c_return, c_exception
            key, fn, ev = self._c_calls[-1]
            if key == id(frame) and fn is arg:
                self._c_calls.pop()
                self.session.end(ev)
