"""The records a benchmark produces: :class:`TaskSpec` (what was timed) and
:class:`Measurement` (the times), with the number-formatting helpers the printouts share.

NOTE [ Benchmark statistics ]
Times are per run of the statement: each raw time covers ``number_per_run`` runs. Median
and quartiles interpolate linearly between sorted times (``numpy.quantile``'s default, as
``torch.quantile``). Scales, significant figures and rounding are computed in float32, the
precision PyTorch's own printout computes them in, so a table rounds exactly as PyTorch's.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import textwrap
from typing import Any

import numpy as np

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig",
           "ordered_unique", "set_torch_threads"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # below 25 ns, timer resolution decides, not the data
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """What a :class:`~ember.utils.benchmark.Timer` measures, without its globals.

    Measurements with equal task specs are replicates of one another (see
    :meth:`Measurement.merge`).

    Args:
        stmt (str): the timed code.
        setup (str): code run once before timing.
        global_setup (str): C++ only; empty for Python.
        label, sub_label, description, env (str, optional): how the result is labelled.
        num_threads (int): the thread count the statement ran with. Default: 1.

    Example:
        >>> from ember.utils.benchmark import TaskSpec
        >>> TaskSpec("x + 1", "pass", label="add", sub_label="small").title
        'add: small'
    """

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label (or the statement) with the sub-label: the first line of a printout."""
        sub = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + sub
        if "\n" not in self.stmt:
            return self.stmt + sub
        paren = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{paren}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        """The setup as printed (empty when there is none)."""
        if self.setup == "pass" or not self.setup:
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """The task's lines of a printout: title, description, setup."""
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(s + "\n" if "\n" in s else s for s in sections if s)


_TASKSPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))


def _f32(x) -> np.float32:
    return np.float32(x)


def _log10_f32(x) -> np.float32:
    """log10 of ``x`` taken as float32, correctly rounded to float32 (NumPy's own float32
    log10 can be an ulp off, which moves a unit boundary: 1e-6 must be 'us')."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.float32(np.log10(np.float64(np.float32(x))))


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """The times of one benchmarked statement and their statistics.

    See NOTE [ Benchmark statistics ]. The task's fields (``label``, ``stmt``,
    ``num_threads``, ...) read through as attributes.

    Args:
        number_per_run (int): how many runs of the statement each raw time covers.
        raw_times (list of float): the measured seconds, one per block of runs.
        task_spec (TaskSpec): what was measured.
        metadata (dict, optional): anything the caller wants to keep with it.

    Example:
        >>> from ember.utils.benchmark import Measurement, TaskSpec
        >>> m = Measurement(10, [1e-5, 2e-5, 3e-5, 4e-5], TaskSpec("f()", "pass"))
        >>> m.median, len(m.times)
        (2.5e-06, 4)
    """

    number_per_run: int
    raw_times: list
    task_spec: TaskSpec
    metadata: dict | None = None

    def __post_init__(self) -> None:
        self._sorted_times: tuple = ()
        self._warnings: tuple = ()
        self._median = self._mean = self._p25 = self._p75 = -1.0

    def __getattr__(self, name: str) -> Any:
        if name in _TASKSPEC_FIELDS:
            return getattr(self.task_spec, name)
        return super().__getattribute__(name)

    @property
    def times(self) -> list:
        """Seconds per single run of the statement, one per raw time."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        """The median time per run, in seconds."""
        self._lazy_init()
        return self._median

    @property
    def mean(self) -> float:
        """The mean time per run, in seconds."""
        self._lazy_init()
        return self._mean

    @property
    def iqr(self) -> float:
        """The interquartile range of the times per run, in seconds."""
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def significant_figures(self) -> int:
        """How many digits of the median the data supports (1 to 4).

        From a 90% confidence interval of the mean of the interquartile times (z = 1.645),
        never narrower than 25 ns; used by ``Compare.trim_significant_figures``.
        """
        self._lazy_init()
        n = len(self._sorted_times)
        middle = self._sorted_times[n // 4:int(np.ceil(_f32(3 * n / 4)))]
        std = float(np.std(np.asarray(middle, dtype=np.float32)))
        sqrt_n = float(np.sqrt(_f32(len(middle))))
        ci = max(1.645 * std / sqrt_n, _MIN_CONFIDENCE_INTERVAL)
        figures = int(np.floor(_log10_f32(self._median / ci)))
        return min(max(figures, 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self) -> bool:
        """Whether the spread of the times is large enough to warn about."""
        self._lazy_init()
        return bool(self._warnings)

    def _lazy_init(self) -> None:
        if not self.raw_times or self._sorted_times:
            return
        self._sorted_times = tuple(sorted(self.times))
        t = np.asarray(self._sorted_times, dtype=np.float64)
        self._median = float(np.quantile(t, 0.5))
        self._mean = float(t.mean())
        self._p25 = float(np.quantile(t, 0.25))
        self._p75 = float(np.quantile(t, 0.75))

        def warn(msg):
            rel_iqr = self.iqr / self.median * 100
            self._warnings += (f"  WARNING: Interquartile range is {rel_iqr:.1f}% of the median "
                               f"measurement.\n           {msg}",)

        if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
            warn("This suggests significant environmental influence.")
        elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
            warn("This could indicate system fluctuation.")

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        """Whether ``iqr / median`` is below ``threshold``.

        Args:
            threshold (float): the relative spread allowed. Default: 0.1.

        Returns:
            bool
        """
        return self.iqr / self.median < threshold

    @property
    def title(self) -> str:
        """The task's title (label or statement, with the sub-label)."""
        return self.task_spec.title

    @property
    def env(self):
        """The task's environment tag (None when not given, as PyTorch's reads it)."""
        return self.task_spec.env

    @property
    def as_row_name(self) -> str:
        """The row this measurement takes in a :class:`Compare` table."""
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        from ...._core import dtype as _dt

        self._lazy_init()
        n = len(self._sorted_times)
        unit, scale = select_unit(self._median)
        head = (f"<{_dt.printed_module[0]}.utils.benchmark.utils.common.Measurement object at "
                f"{id(self):#x}>")
        lines = [head, self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{self._median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({self._p25 / scale:.2f} to "
                         f"{self._p75 / scale:.2f})")
        threads = f"{self.num_threads} thread{'s' if self.num_threads > 1 else ''}"
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads}")
        lines.append("\n".join(self._warnings))
        return "\n".join("\n".join(lines).strip().splitlines())

    @staticmethod
    def merge(measurements) -> list:
        """Pool replicates: one measurement per distinct task spec, holding every time per
        run (``number_per_run=1``); metadata is dropped.

        Args:
            measurements (iterable of Measurement): the results to pool.

        Returns:
            list of Measurement: in order of first appearance of each task.

        Example:
            >>> from ember.utils.benchmark import Measurement, TaskSpec
            >>> spec = TaskSpec("f()", "pass")
            >>> merged = Measurement.merge([Measurement(2, [4.0], spec),
            ...                             Measurement(1, [1.0], spec)])
            >>> len(merged), merged[0].times
            (1, [2.0, 1.0])
        """
        groups: dict = collections.defaultdict(list)
        for m in measurements:
            groups[m.task_spec].append(m)
        return [Measurement(number_per_run=1, raw_times=[t for m in g for t in m.times],
                            task_spec=spec, metadata=None) for spec, g in groups.items()]


def select_unit(t: float) -> tuple:
    """The unit that shows ``t`` seconds with one to three leading digits.

    Args:
        t (float): a time in seconds.

    Returns:
        tuple: ``(unit, scale)``, e.g. ``("us", 1e-6)``.

    Example:
        >>> from ember.utils.benchmark import select_unit
        >>> select_unit(3.2e-5)
        ('us', 1e-06)
    """
    exponent = int(float(_log10_f32(t)) // 3)  # ValueError for t <= 0, as PyTorch
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(exponent, "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


def unit_to_english(u: str) -> str:
    """The English word for a time unit: ``"us"`` -> ``"microsecond"``.

    Args:
        u (str): ``"ns"``, ``"us"``, ``"ms"`` or ``"s"``.

    Returns:
        str

    Example:
        >>> from ember.utils.benchmark import unit_to_english
        >>> unit_to_english("ms")
        'millisecond'
    """
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x: float, n: int) -> float:
    """Round ``x`` to ``n`` significant figures (in float32, see NOTE [ Benchmark
    statistics ]).

    Args:
        x (float): the number.
        n (int): significant figures to keep.

    Returns:
        float

    Example:
        >>> from ember.utils.benchmark import trim_sigfig
        >>> round(trim_sigfig(3.14159, 2), 4)
        3.1
    """
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    magnitude = int(np.ceil(_log10_f32(abs(x))))
    scale = 10 ** (magnitude - n)
    return float(np.float32(np.round(_f32(x / scale)) * scale))


def ordered_unique(elements) -> list:
    """The distinct elements, in order of first appearance.

    Args:
        elements (iterable): hashable items.

    Returns:
        list

    Example:
        >>> from ember.utils.benchmark import ordered_unique
        >>> ordered_unique([3, 1, 3, 2])
        [3, 1, 2]
    """
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n: int):
    """Run the block with ``n`` compute threads, restoring the count afterwards.

    Args:
        n (int): the thread count (``ember.set_num_threads``).

    Returns:
        A context manager.

    Example:
        >>> import ember
        >>> from ember.utils.benchmark import set_torch_threads
        >>> with set_torch_threads(1):
        ...     ember.get_num_threads()
        1
    """
    import ember

    prior = ember.get_num_threads()
    try:
        ember.set_num_threads(n)
        yield
    finally:
        ember.set_num_threads(prior)
