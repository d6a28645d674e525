"""``Compare``: lay many measurements out as tables, one per label -- rows by sub-label (or
statement), columns by description, grouped by thread count -- printed as PyTorch's."""

from __future__ import annotations

import collections
import enum

import numpy as np

from . import common

__all__ = ["Colorize", "Compare"]

BEST = "\033[92m"
GOOD = "\033[34m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m"
BOLD = "\033[1m"
TERMINATE = "\033[0m"


class Colorize(enum.Enum):
    """How :class:`Compare` colours cells: not at all, against the best of each column, or
    against the best of each row (``Compare.colorize`` picks one).

    Example:
        >>> from ember.utils.benchmark import Colorize
        >>> Colorize("rowwise") is Colorize.ROWWISE
        True
        >>> [c.value for c in Colorize]
        ['none', 'columnwise', 'rowwise']
    """

    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _leading_digits(x: float) -> int:
    return int(np.ceil(common._log10_f32(x)))


class _Column:
    """One column's number format: shared digits so the numbers line up."""

    def __init__(self, grouped_results, time_scale, trim_significant_figures,
                 highlight_warnings):
        self._grouped_results = grouped_results
        flat = [r for group in grouped_results for r in group]
        self._trim = trim_significant_figures
        self._highlight = highlight_warnings and any(r.has_warnings for r in flat if r)
        digits = [_leading_digits(r.median / time_scale) if r else None for r in flat]
        unit_digits = max(d for d in digits if d is not None)
        if self._trim:
            decimals = min(max(m.significant_figures - d, 0)
                           for d, m in zip(digits, flat) if m is not None and d is not None)
        else:
            decimals = 1
        width = unit_digits + decimals + (1 if decimals else 0)
        self._template = f"{{:>{width}.{decimals}f}}{{:>{7 if self._highlight else 0}}}"

    def get_results_for(self, group):
        return self._grouped_results[group]

    def num_to_str(self, value, estimated_sigfigs, spread):
        if value is None:
            return " " * len(self.num_to_str(1, estimated_sigfigs, None))
        if self._trim:
            value = common.trim_sigfig(value, estimated_sigfigs)
        note = f" (! {spread * 100:.0f}%)" if self._highlight and spread is not None else ""
        return self._template.format(value, note)


class _Row:
    """One row: its name (with the environment when several are compared) and its cells."""

    def __init__(self, results, row_group, render_env, env_str_len, time_scale, colorize,
                 num_threads=None):
        self._results = results
        self._row_group = row_group
        self._render_env = render_env
        self._env_str_len = env_str_len
        self._time_scale = time_scale
        self._colorize = colorize
        self._columns = ()
        self._num_threads = num_threads

    def register_columns(self, columns):
        self._columns = columns

    def as_column_strings(self):
        present = [r for r in self._results if r is not None]
        env = f"({present[0].env})" if self._render_env else ""
        out = ["  " + env.ljust(self._env_str_len + 4) + present[0].as_row_name]
        for m, col in zip(self._results, self._columns):
            if m is None:
                out.append(col.num_to_str(None, 1, None))
            else:
                out.append(col.num_to_str(m.median / self._time_scale, m.significant_figures,
                                          m.iqr / m.median if m.has_warnings else None))
        return out

    @staticmethod
    def color_segment(segment, value, best_value):
        if value <= best_value * 1.01 or value <= best_value + 100e-9:
            return BEST + BOLD + segment + TERMINATE * 2
        if value <= best_value * 1.1:
            return GOOD + BOLD + segment + TERMINATE * 2
        if value >= best_value * 5:
            return VERY_BAD + BOLD + segment + TERMINATE * 2
        if value >= best_value * 2:
            return BAD + segment + TERMINATE * 2
        return segment

    def row_separator(self, overall_width):
        if self._num_threads is None:
            return []
        return [f"{self._num_threads} threads: ".ljust(overall_width, "-")]

    def finalize_column_strings(self, column_strings, col_widths):
        best = [-1 for _ in column_strings]
        if self._colorize == Colorize.ROWWISE:
            row_min = min(r.median for r in self._results if r is not None)
            best = [row_min for _ in column_strings]
        elif self._colorize == Colorize.COLUMNWISE:
            best = []
            for column in self._columns:
                meds = [r.median for r in column.get_results_for(self._row_group) if r is not None]
                best.append(min(meds) if meds else None)
        cells = [column_strings[0].ljust(col_widths[0])]
        for text, width, result, b in zip(column_strings[1:], col_widths[1:], self._results, best):
            text = text.center(width)
            if self._colorize != Colorize.NONE and result is not None and b is not None:
                text = self.color_segment(text, result.median, b)
            cells.append(text)
        return cells


class Table:
    """The table of one label's measurements (all must share the label).

    Args:
        results (list of Measurement): merged measurements with one label.
        colorize (Colorize): how to colour cells.
        trim_significant_figures (bool): print only the digits the data supports.
        highlight_warnings (bool): mark noisy cells with ``(! XX%)``.
    """

    def __init__(self, results, colorize, trim_significant_figures, highlight_warnings):
        if len({r.label for r in results}) != 1:
            raise AssertionError("All results must share the same label")
        self.results = results
        self._colorize = colorize
        self._trim = trim_significant_figures
        self._highlight = highlight_warnings
        self.label = results[0].label
        self.time_unit, self.time_scale = common.select_unit(min(r.median for r in results))
        self.row_keys = common.ordered_unique([self.row_fn(r) for r in results])
        self.row_keys.sort(key=lambda k: k[:2])  # by threads and env; rows keep their order
        self.column_keys = common.ordered_unique([self.col_fn(r) for r in results])
        self.rows, self.columns = self.populate_rows_and_columns()

    @staticmethod
    def row_fn(m):
        return m.num_threads, m.env, m.as_row_name

    @staticmethod
    def col_fn(m):
        return m.description

    def populate_rows_and_columns(self):
        grid = [[None for _ in self.column_keys] for _ in self.row_keys]
        row_at = {k: i for i, k in enumerate(self.row_keys)}
        col_at = {k: j for j, k in enumerate(self.column_keys)}
        for r in self.results:
            grid[row_at[self.row_fn(r)]][col_at[self.col_fn(r)]] = r
        envs = {r.env for r in self.results}
        render_env = len(envs) > 1
        env_len = max(len(e) for e in envs) if render_env else 0
        rows, groups = [], []
        prior_threads, prior_env, group = -1, "", -1
        for (threads, env, _), row in zip(self.row_keys, grid):
            new_group = threads != prior_threads
            if new_group:
                prior_threads, prior_env = threads, ""
                group += 1
                groups.append([])
            rows.append(_Row(row, group, render_env and env != prior_env, env_len,
                             self.time_scale, self._colorize,
                             num_threads=threads if new_group else None))
            groups[-1].append(row)
            prior_env = env
        columns = tuple(
            _Column([tuple(row[j] for row in g) for g in groups], self.time_scale, self._trim,
                    self._highlight)
            for j in range(len(self.column_keys)))
        rows = tuple(rows)
        for r in rows:
            r.register_columns(columns)
        return rows, columns

    def render(self) -> str:
        string_rows = [[""] + self.column_keys]
        string_rows.extend(r.as_column_strings() for r in self.rows)
        n_cols = max(len(r) for r in string_rows)
        for r in string_rows:
            r.extend("" for _ in range(n_cols - len(r)))
        widths = [max(len(s) for s in col) for col in zip(*string_rows)]
        lines = ["  |  ".join(s.center(w) for s, w in zip(string_rows[0], widths))]
        overall = len(lines[0])
        for strings, row in zip(string_rows[1:], self.rows):
            lines.extend(row.row_separator(overall))
            lines.append("  |  ".join(row.finalize_column_strings(strings, widths)))
        has_warnings = self._highlight and any(r.has_warnings for r in self.results)
        title = (" " + (self.label or "") + " ").center(overall - 2, "-")
        note = ("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n"
                if has_warnings else "")
        return (f"[{title}]\n" + "\n".join(lines) + "\n\n"
                f"Times are in {common.unit_to_english(self.time_unit)}s ({self.time_unit}).\n"
                + note)


class Compare:
    """Print many measurements as tables: one per ``label``, a row per ``sub_label`` (or
    statement) and thread count, a column per ``description``; replicates are pooled.

    Args:
        results (list of Measurement): the measurements to show.

    Example:
        >>> from ember.utils.benchmark import Compare, Measurement, TaskSpec
        >>> ms = [Measurement(1, [2e-6 * (i + 1)] * 4,
        ...                   TaskSpec("f()", "pass", label="f", sub_label="x",
        ...                            description=f"n={i}")) for i in range(2)]
        >>> print(Compare(ms))
        [--------- f ---------]
                 |  n=0  |  n=1
        1 threads: ------------
              x  |  2.0  |  4.0
        <BLANKLINE>
        Times are in microseconds (us).
        <BLANKLINE>
    """

    def __init__(self, results) -> None:
        self._results = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def __str__(self) -> str:
        return "\n".join(self._render())

    def extend_results(self, results) -> None:
        """Add more measurements.

        Args:
            results (iterable of Measurement): the measurements.

        Raises:
            ValueError: if one is not a Measurement.
        """
        for r in results:
            if not isinstance(r, common.Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        """Print each number with only the digits its spread supports."""
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        """Colour cells by how they compare to the best of their column (or row).

        Args:
            rowwise (bool): compare within rows instead of columns. Default: False.
        """
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        """Mark cells whose measurements are noisy with ``(! XX%)``."""
        self._highlight_warnings = True

    def print(self) -> None:
        """Print the tables."""
        print(str(self))

    def _render(self):
        merged = common.Measurement.merge(self._results)
        by_label = collections.defaultdict(list)
        for r in merged:
            by_label[r.label].append(r)
        return [Table(group, self._colorize, self._trim_significant_figures,
                      self._highlight_warnings).render() for group in by_label.values()]
