"""``Timer``: time a Python statement the way ``torch.utils.benchmark`` does -- with warm-up,
a fixed thread count, blocks of runs sized to make timer overhead negligible, and replicates
for statistics."""

from __future__ import annotations

import enum
import textwrap
import timeit as _timeit

import numpy as np

from . import common

__all__ = ["Timer", "timer", "Language"]


def timer() -> float:
    """The current time in seconds, after waiting for any accelerator work to finish.

    Returns:
        float: ``timeit.default_timer()``.

    Example:
        >>> from ember.utils.benchmark import timer
        >>> timer() <= timer()
        True
    """
    import ember

    accelerator = getattr(ember, "accelerator", None)
    if accelerator is not None and accelerator.is_available():
        accelerator.synchronize()
    return _timeit.default_timer()


class Language(enum.Enum):
    """The language of a timed statement; ember times Python only.

    Example:
        >>> from ember.utils.benchmark import Language, Timer
        >>> Timer("x + 1", globals={"x": 1}, language=Language.PYTHON).timeit(10).number_per_run
        10
    """

    PYTHON = 0
    CPP = 1


class Timer:
    """Measure how long a statement takes: ``timeit.Timer`` with replicates and labels.

    The statement runs in a namespace made of ``globals`` (plus ``torch``, which is ember),
    after ``setup``; during measurement the compute thread count is ``num_threads``. The
    labels only name the result: printed by :class:`Measurement` and used by
    :class:`Compare` to lay out tables (``label`` the table, ``sub_label`` the row,
    ``description`` the column, ``env`` a prefix for A/B runs).

    Args:
        stmt (str): the code to time. Default: ``"pass"``.
        setup (str): code run once before timing. Default: ``"pass"``.
        global_setup (str): C++ only; must be empty.
        timer (callable): returns the current time in seconds. Default: :func:`timer`.
        globals (dict, optional): variables the statement uses.
        label (str, optional): names what is measured (``"ReLU(x + 1)"``).
        sub_label (str, optional): tells apart measurements with the same label.
        description (str, optional): the column in a :class:`Compare` table (e.g. a size).
        env (str, optional): the environment, for comparing otherwise equal tasks.
        num_threads (int): compute threads during timing. Default: 1.
        language (Language or str): ``"python"`` only (C++ timing needs a compiler
            toolchain PyTorch ships and ember does not).

    Example:
        >>> import ember
        >>> from ember.utils.benchmark import Timer
        >>> t = Timer("x + 1", globals={"x": ember.ones(8)}, label="add")
        >>> m = t.timeit(10)
        >>> m.number_per_run, len(m.times), m.median > 0
        (10, 1, True)
    """

    _timer_cls = _timeit.Timer

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer=timer, globals: dict | None = None, label: str | None = None,
                 sub_label: str | None = None, description: str | None = None,
                 env: str | None = None, num_threads: int = 1,
                 language=Language.PYTHON) -> None:
        import ember

        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        self._globals = dict(globals or {})
        if language in (Language.PYTHON, "py", "python"):
            self._globals.setdefault("torch", ember)
            self._language = Language.PYTHON
            if global_setup:
                raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely "
                                 "this code can simply be moved to `setup`.")
        elif language in (Language.CPP, "cpp", "c++"):
            raise RuntimeError("Timer: C++ statements (language='c++') are not supported by "
                               "ember, which has no C++ runtime to compile them against; "
                               "time the Python form of the statement instead")
        else:
            raise ValueError(f"Invalid language `{language}`.")
        stmt, setup = self._clean(stmt), self._clean(setup)
        self._timer = self._timer_cls(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = common.TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup,
                                          label=label, sub_label=sub_label,
                                          description=description, env=env,
                                          num_threads=num_threads)

    @staticmethod
    def _clean(code: str) -> str:
        code = textwrap.dedent(code)
        return (code[1:] if code.startswith("\n") else code).rstrip()

    def _timeit(self, number: int) -> float:
        # never 0: later statistics divide by it
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> common.Measurement:
        """Run the statement ``number`` times (after a short warm-up) and time the lot.

        Args:
            number (int): runs in the one timed block. Default: 1000000.

        Returns:
            Measurement: one raw time covering ``number`` runs.
        """
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))  # warm-up
            return common.Measurement(number_per_run=number,
                                      raw_times=[self._timeit(number=number)],
                                      task_spec=self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1):
        """Not offered (as in PyTorch): use :meth:`blocked_autorange`, which repeats.

        Raises:
            NotImplementedError: always, pointing at :meth:`blocked_autorange`.
        """
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        """Not offered (as in PyTorch): use :meth:`blocked_autorange`.

        Raises:
            NotImplementedError: always, pointing at :meth:`blocked_autorange`.
        """
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _measurement_loop(self, number, time_hook, stop_hook, min_run_time,
                          max_run_time=None, callback=None) -> list:
        total, can_stop, times = 0.0, False, []
        with common.set_torch_threads(self._task_spec.num_threads):
            while total < min_run_time or not can_stop:
                spent = time_hook()
                times.append(spent)
                total += spent
                if callback:
                    callback(number, spent)
                can_stop = stop_hook(times)
                if max_run_time and total > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time: float) -> int:
        """The smallest power of ten of runs per block for which the timer's own overhead
        is at most 0.01% and a block takes at least 0.1% of ``min_run_time``."""
        with common.set_torch_threads(self._task_spec.num_threads):
            overhead = float(np.median([self._timeit(0) for _ in range(5)]))
            number = 1
            while True:
                taken = self._timeit(number)
                if overhead / taken <= 1e-4 and taken >= min_run_time / 1000:
                    break
                if taken > min_run_time or number * 10 > 2147483647:
                    break
                number *= 10
        return number

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> common.Measurement:
        """Time blocks of runs until ``min_run_time`` seconds have been spent.

        The block size is chosen first (see ``_estimate_block_size``) so that reading the
        clock costs nothing measurable; then blocks run until their total time reaches
        ``min_run_time``.

        Args:
            callback (callable, optional): ``callback(number, seconds)`` after each block.
            min_run_time (float): seconds of measurement to collect. Default: 0.2.

        Returns:
            Measurement: one raw time per block.

        Example:
            >>> from ember.utils.benchmark import Timer
            >>> m = Timer("sum(range(10))").blocked_autorange(min_run_time=0.01)
            >>> len(m.times) >= 1
            True
        """
        number = self._estimate_block_size(min_run_time)
        times = self._measurement_loop(number, lambda: self._timeit(number),
                                       lambda times: True, min_run_time, callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0, callback=None) -> common.Measurement:
        """Time blocks of runs until the spread is small or time runs out.

        After at least four blocks and ``min_run_time`` seconds, stops as soon as
        ``iqr / median < threshold``; always stops after ``max_run_time`` seconds.

        Args:
            threshold (float): the relative interquartile range to reach. Default: 0.1.
            min_run_time (float): seconds to spend before checking. Default: 0.01.
            max_run_time (float): seconds after which to stop regardless. Default: 10.
            callback (callable, optional): ``callback(number, seconds)`` after each block.

        Returns:
            Measurement: one raw time per block.

        Example:
            >>> from ember.utils.benchmark import Timer
            >>> m = Timer("sum(range(10))").adaptive_autorange(max_run_time=0.05)
            >>> len(m.times) >= 1
            True
        """
        number = self._estimate_block_size(min_run_time=0.05)

        def confident(times):
            return len(times) > 3 and common.Measurement(
                number_per_run=number, raw_times=times,
                task_spec=self._task_spec).meets_confidence(threshold=threshold)

        times = self._measurement_loop(number, lambda: self._timeit(number), confident,
                                       min_run_time, max_run_time, callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)
