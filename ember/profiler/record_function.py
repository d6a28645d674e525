"""``record_function``: a named block that shows in the profile with its work nested."""

from __future__ import annotations

from contextlib import ContextDecorator

from . import _recorder

__all__ = ["record_function"]


class record_function(ContextDecorator):
    """Label a block of code: inside a profile it becomes an event (a ``user_annotation``
    in the trace) with the ops it runs nested under it. Outside a profile it costs a
    look-up and does nothing. Usable as a context manager or a decorator.

    Args:
        name (str): the label shown in tables and traces.
        args (str, optional): extra information kept with the event.

    Example::

        >>> import ember
        >>> from ember.profiler import profile, record_function
        >>> with profile() as prof:
        ...     with record_function("my_block"):
        ...         _ = ember.ones(2) + 1
        >>> block = prof.events()[0]
        >>> block.name, [c.name for c in block.cpu_children][-1]
        ('my_block', 'aten::add')
    """

    def __init__(self, name: str, args: str | None = None):
        self.name: str = name
        self.args: str | None = args
        self.run_callbacks_on_exit: bool = True
        self.record = None
        self._session = None

    def __enter__(self):
        s = _recorder.current_session()
        if s is not None and s.active:
            self._session = s
            self.record = s.begin(self.name)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if not self.run_callbacks_on_exit:
            return False
        s, rec = self._session, self.record
        if s is not None and rec is not None:
            s.end(rec)
        self._session = None
        self.record = None
        return False

    def _call_end_callbacks_on_future(self, fut):
        """Close the block when the future ``fut`` completes; returns ``fut``."""
        if not self.run_callbacks_on_exit:
            raise RuntimeError("_call_end_callbacks_on_future can only be called once.")
        self.run_callbacks_on_exit = False
        s, rec = self._session, self.record
        if s is not None and rec is not None:
            if hasattr(fut, "add_done_callback"):
                fut.add_done_callback(lambda _: s.end(rec))
            else:
                s.end(rec)
        return fut

    def _recreate_cm(self):
        # ContextDecorator: a fresh instance per decorated call, so calls nest correctly
        return type(self)(self.name, self.args)
