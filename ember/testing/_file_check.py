"""``FileCheck``: assertions about the text of a printed graph or program, in the style of
LLVM's FileCheck (``torch.testing.FileCheck``).

Checks are queued with ``check*`` calls (each returns the checker, so they chain) and run
against a string with ``run``. A cursor moves through the string: ``check`` finds its text at
or after the cursor and moves the cursor past it; ``check_next`` must match on the line after
the previous match, ``check_same`` on the same line; ``check_not`` forbids its text between
the previous match and the next one; consecutive ``check_dag`` texts may appear in any order;
``check_count`` finds a text N times (``exactly``: and no more before the next match).
A failing check raises RuntimeError saying what was expected and where it looked.
"""

from __future__ import annotations

import re
import sys

__all__ = ["FileCheck"]

_DIRECTIVE = re.compile(
    r"CHECK(?:-(NEXT|NOT|SAME|DAG|REGEX|SOURCE-HIGHLIGHTED|COUNT-EXACTLY-(\d+)|COUNT-(\d+)))?"
    r":\s?(.*)")


class _Check:
    __slots__ = ("kind", "text", "count", "exactly")

    def __init__(self, kind, text, count=1, exactly=False):
        self.kind, self.text, self.count, self.exactly = kind, text, count, exactly

    def label(self) -> str:
        if self.kind == "COUNT":
            return f"CHECK-COUNT-{'EXACTLY-' if self.exactly else ''}{self.count}: {self.text}"
        return ("CHECK" if self.kind == "CHECK" else f"CHECK-{self.kind}") + f": {self.text}"


def _find(kind: str, text: str, s: str, start: int):
    """(start, end) of the first match at or after ``start``, or None."""
    if kind == "REGEX":
        m = re.compile(text).search(s, start)
        return None if m is None else (m.start(), m.end())
    i = s.find(text, start)
    return None if i < 0 else (i, i + len(text))


def _not_found(check: _Check, s: str, start: int) -> RuntimeError:
    return RuntimeError(f'Expected to find "{check.text}" but did not find it\n'
                        f"Searched string:\n{s[start:]}\nFrom {check.label()}\n")


def _found_forbidden(check: _Check, s: str, at: int, end: int) -> RuntimeError:
    line_start = s.rfind("\n", 0, at) + 1
    line_end = s.find("\n", at)
    line_end = len(s) if line_end < 0 else line_end
    marker = " " * (at - line_start) + "~" * max(end - at, 1) + " <--- HERE"
    return RuntimeError(f'Expected to not find "{check.text}" but found it\n'
                        f"{s[:line_end]}\n{marker}\n{s[line_end + 1:]}\nFrom {check.label()}\n")


class FileCheck:
    """Queue text checks, then ``run`` them against a string (a printed graph, code, a log).

    Args:
        none: takes no arguments; add checks with the ``check*`` methods.

    Returns:
        FileCheck: an empty checker.

    Example::

        >>> code = "x = add(a, b)\\ny = mul(x, x)\\nreturn y"
        >>> ember.FileCheck().check("add").check_next("mul").check_not("sub").run(code)
        >>> try:
        ...     ember.FileCheck().check("mul").check("add").run(code)
        ... except RuntimeError as e:
        ...     print(str(e).splitlines()[0])
        Expected to find "add" but did not find it
    """

    def __init__(self):
        self._checks: list[_Check] = []
        self._has_run = False

    def _add(self, check: _Check) -> FileCheck:
        self._checks.append(check)
        return self

    def check(self, check_string: str) -> FileCheck:
        """Expect ``check_string`` at or after the cursor.

        Args:
            check_string (str): the text.

        Returns:
            FileCheck: this checker.
        """
        return self._add(_Check("CHECK", check_string))

    def check_not(self, check_string: str) -> FileCheck:
        """Forbid ``check_string`` between the previous match and the next one.

        Args:
            check_string (str): the text.

        Returns:
            FileCheck: this checker.
        """
        return self._add(_Check("NOT", check_string))

    def check_same(self, check_string: str) -> FileCheck:
        """Expect ``check_string`` on the line of the previous match, after it.

        Args:
            check_string (str): the text.

        Returns:
            FileCheck: this checker.
        """
        return self._add(_Check("SAME", check_string))

    def check_next(self, check_string: str) -> FileCheck:
        """Expect ``check_string`` on the line right after the previous match's line.

        Args:
            check_string (str): the text.

        Returns:
            FileCheck: this checker.
        """
        return self._add(_Check("NEXT", check_string))

    def check_count(self, check_string: str, count: int, exactly: bool = False) -> FileCheck:
        """Expect ``check_string`` ``count`` times from the cursor; with ``exactly``, no
        further occurrence before the next match.

        Args:
            check_string (str): the text.
            count (int): how many times (0 only with ``exactly``: it must not appear).
            exactly (bool): forbid more occurrences.

        Returns:
            FileCheck: this checker.
        """
        count = int(count)
        if count == 0 and not exactly:
            raise RuntimeError("check_count: count == 0 without exactly=True checks nothing")
        if count == 0:
            return self._add(_Check("NOT", check_string))
        self._add(_Check("COUNT", check_string, count, bool(exactly)))
        if exactly:
            self._add(_Check("NOT", check_string))
        return self

    def check_dag(self, check_string: str) -> FileCheck:
        """Expect ``check_string`` after the cursor, in any order with the neighbouring
        ``check_dag`` texts.

        Args:
            check_string (str): the text.

        Returns:
            FileCheck: this checker.
        """
        return self._add(_Check("DAG", check_string))

    def check_regex(self, check_string: str) -> FileCheck:
        """Expect a match of the regular expression ``check_string`` after the cursor.

        Args:
            check_string (str): a Python regular expression.

        Returns:
            FileCheck: this checker.
        """
        return self._add(_Check("REGEX", check_string))

    def check_source_highlighted(self, check_string: str) -> FileCheck:
        """Expect ``check_string`` underlined with ``~`` on the following line (as error
        messages highlight source).

        Args:
            check_string (str): the text.

        Returns:
            FileCheck: this checker.
        """
        return self._add(_Check("SOURCE-HIGHLIGHTED", check_string))

    def run(self, checks_or_test: str, test_file: str | None = None) -> None:
        """Run the queued checks against a string, or parse ``# CHECK:`` directives from
        the first string and run them against the second.

        Args:
            checks_or_test (str): the text to check (or, with two arguments, the checks).
            test_file (str, optional): the text to check when the first argument holds
                ``CHECK``, ``CHECK-NEXT``, ``CHECK-NOT``, ``CHECK-SAME``, ``CHECK-DAG``,
                ``CHECK-COUNT-N``, ``CHECK-COUNT-EXACTLY-N`` or ``CHECK-REGEX`` lines.

        Returns:
            None; RuntimeError on the first failing check.
        """
        if test_file is not None:
            self._parse(checks_or_test)
            text = test_file
        else:
            text = checks_or_test
        if not isinstance(text, str):
            raise TypeError(f"run(): expected a str, got {type(text).__name__}")
        self._has_run = True
        if not self._checks:
            raise RuntimeError("No checks have been added to this instance of FileCheck! "
                               "Check for bad input.")
        self._run(text)

    def _parse(self, checks: str) -> None:
        for line in checks.splitlines():
            m = _DIRECTIVE.search(line)
            if m is None:
                continue
            kind, exact_n, n, text = m.groups()
            text = text.rstrip()
            if exact_n is not None:
                self.check_count(text, int(exact_n), exactly=True)
            elif n is not None:
                self.check_count(text, int(n))
            else:
                self._add(_Check(kind or "CHECK", text))

    def _run(self, s: str) -> None:
        pos, prev_start, pending_not = 0, 0, []
        checks, i = self._checks, 0
        while i < len(checks):
            c = checks[i]
            if c.kind == "NOT":
                pending_not.append(c)
                i += 1
                continue
            if c.kind == "DAG":
                group = []
                while i < len(checks) and checks[i].kind == "DAG":
                    group.append(checks[i])
                    i += 1
                spans = []
                for d in group:
                    span = _find("CHECK", d.text, s, pos)
                    if span is None:
                        raise _not_found(d, s, pos)
                    spans.append(span)
                start, end = min(a for a, _ in spans), max(b for _, b in spans)
            else:
                start, end = self._match(c, s, pos, prev_start)
                i += 1
            for n in pending_not:
                hit = _find("CHECK", n.text, s[:start], pos)
                if hit is not None:
                    raise _found_forbidden(n, s, *hit)
            pending_not = []
            prev_start, pos = start, end
        for n in pending_not:
            hit = _find("CHECK", n.text, s, pos)
            if hit is not None:
                raise _found_forbidden(n, s, *hit)

    def _match(self, c: _Check, s: str, pos: int, prev_start: int):
        if c.kind == "COUNT":
            first, end = None, pos
            for _ in range(c.count):
                span = _find("CHECK", c.text, s, end)
                if span is None:
                    raise _not_found(c, s, pos)
                first = span[0] if first is None else first
                end = span[1]
            return first, end
        if c.kind == "SOURCE-HIGHLIGHTED":
            start = pos
            while True:
                span = _find("CHECK", c.text, s, start)
                if span is None:
                    raise RuntimeError(f'Expected to find "{c.text}"highlighted but it is '
                                       f"not.\n{s[pos:]}\n")
                line_start = s.rfind("\n", 0, span[0]) + 1
                col = span[0] - line_start
                next_start = s.find("\n", span[0])
                if next_start >= 0:
                    next_end = s.find("\n", next_start + 1)
                    below = s[next_start + 1:len(s) if next_end < 0 else next_end]
                    if below[col:col + len(c.text)] == "~" * len(c.text):
                        return span
                start = span[1]
        span = _find(c.kind, c.text, s, pos)
        if span is None:
            raise _not_found(c, s, pos)
        if c.kind == "SAME" and "\n" in s[pos:span[0]]:
            nl = s.find("\n", pos)
            raise _found_forbidden(_Check("SAME", "\\n"), s, nl, nl + 1)
        if c.kind == "NEXT":
            between = s[pos:span[0]]
            if between.count("\n") != 1:
                raise RuntimeError(f'Expected to find "{c.text}" on the line after the '
                                   f"previous match\nSearched string:\n{s[pos:]}\n"
                                   f"From {c.label()}\n")
        return span

    def __del__(self):
        if self._checks and not self._has_run:
            lines = "\n".join("\t" + c.label() for c in self._checks)
            try:
                sys.stderr.write("You have not run this instance of FileCheck!\n"
                                 f"FileCheck checks:\n{lines}\n")
            except Exception:  # noqa: BLE001  (interpreter shutdown)
                pass
