"""Shared by the examples: where outputs go, and a progress display that suits the terminal.

Outputs: every example writes its checkpoint and loss curve into a run directory,
``runs/<example>/`` under the current directory by default (``--out DIR`` to choose), never
next to the sources. ``--checkpoint`` and ``--plot`` still name single files exactly.

Progress: on a terminal, a tqdm bar (when tqdm is installed); otherwise (output redirected
to a log file, CI, a pipe) one plain line every ``every`` seconds and one at the end, so
logs do not fill with carriage-return redraws.
"""

from __future__ import annotations

import os
import sys
import time


def add_output_args(parser, name, plot_what="loss curve"):
    """Add ``--out``, ``--checkpoint`` and ``--plot`` to ``parser`` for the example ``name``.

    Args:
        parser: an ``argparse.ArgumentParser``.
        name: the example's name; the defaults are ``runs/<name>/<name>.pt`` and
            ``runs/<name>/<name>_loss.png``.
        plot_what: what the PNG shows, for ``--help``.
    """
    parser.add_argument("--out", default=os.path.join("runs", name),
                        help="run directory for the checkpoint and the plot "
                             "(default: %(default)s, created when needed)")
    parser.add_argument("--checkpoint", default=None,
                        help=f"checkpoint file (default: OUT/{name}.pt)")
    parser.add_argument("--plot", default=None,
                        help=f"{plot_what} PNG (default: OUT/{name}_loss.png; needs "
                             "matplotlib; \"\" to skip)")


def resolve_outputs(args, name):
    """Fill in ``args.checkpoint`` and ``args.plot`` from ``args.out`` where not given, and
    create the directories they go in. Returns ``args``."""
    if args.checkpoint is None:
        args.checkpoint = os.path.join(args.out, f"{name}.pt")
    if args.plot is None:
        args.plot = os.path.join(args.out, f"{name}_loss.png")
    for path in (args.checkpoint, args.plot):
        if path and os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
    return args


def _interactive(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # replaced or closed streams
        return False


class progress:
    """Iterate over ``iterable`` showing progress: a tqdm bar on a terminal, else lines.

    Args:
        iterable: what to iterate over.
        desc: a short label ("training", "epoch 3").
        total: the number of items (default ``len(iterable)`` when it has one).
        unit: what one item is ("step", "batch").
        every: seconds between lines when not on a terminal.
        leave: keep the tqdm bar on screen when done.
        file: where lines go (default ``sys.stdout``). The bar goes to ``sys.stderr``, as
            tqdm's does, and is used only when ``sys.stderr`` is a terminal.

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> for _ in progress(range(3), "demo", unit="step", file=out):
        ...     pass
        >>> out.getvalue()[:19]
        'demo: 3/3 steps 100'
    """

    def __init__(self, iterable, desc="", total=None, unit="it", every=10.0, leave=True,
                 file=None):
        self.iterable, self.desc, self.unit, self.every = iterable, desc, unit, every
        self.total = total if total is not None else (
            len(iterable) if hasattr(iterable, "__len__") else None)
        self.file = file
        self.postfix = ""
        self._bar = None
        if file is None and _interactive(sys.stderr):
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self._bar = tqdm(iterable, desc=desc, total=self.total, unit=unit,
                                 leave=leave)

    def set_postfix(self, **values):
        """Show ``name=value`` pairs after the count (the running loss, say)."""
        if self._bar is not None:
            self._bar.set_postfix(**values)
        self.postfix = ", ".join(f"{k} {v}" for k, v in values.items())

    def write(self, msg):
        """Print ``msg`` on its own line without breaking the bar."""
        if self._bar is not None:
            self._bar.write(msg)
        else:
            print(msg, file=self.file or sys.stdout, flush=True)

    def _line(self, n, start):
        count = f"{n}/{self.total}" if self.total is not None else f"{n}"
        pct = f" {100 * n / self.total:.0f}%" if self.total else ""
        post = f", {self.postfix}" if self.postfix else ""
        unit = self.unit if n == 1 else self.unit + (
            "es" if self.unit.endswith(("ch", "sh", "s", "x")) else "s")
        self.write(f"{self.desc}: {count} {unit}{pct}, {time.perf_counter() - start:.0f}s"
                   f"{post}")

    def __iter__(self):
        if self._bar is not None:
            yield from self._bar
            return
        start = last = time.perf_counter()
        n = shown = 0
        for item in self.iterable:
            yield item
            n += 1
            now = time.perf_counter()
            if now - last >= self.every:
                last, shown = now, n
                self._line(n, start)
        if shown != n or n == 0:  # the final count, unless the last line already said it
            self._line(n, start)
