"""Ports for tests that start a server in another process (or later in this one).

NOTE [ Test ports outside the ephemeral range ]
A test that asks the OS for a free port (bind to port 0, read it, close) and hands the number
to a process that binds it later races everything else on the machine for that port: the OS
gives the same range to every ``bind(("", 0))`` and to the local end of every outgoing
``connect`` (a TCPStore client, a gloo pair, pip, ...), so under ``pytest -n 2`` the other
worker, or a child of this one, can take the port in between and the server then fails with
EADDRINUSE, or, worse, a client reaches someone else's server. ``free_port`` therefore picks
below (or above) the kernel's ephemeral range (``ip_local_port_range``), where the OS never
hands out ports by itself, gives each xdist worker its own slice so two workers never pick
the same number, walks its slice in order from a random start so a port a finished test left
in TIME_WAIT is not picked again at once, and checks the port is bindable right now (taken by
an unrelated listener, it is skipped). Ports that programs under test hard-code (12355,
29500, ...) are never handed out.
"""

from __future__ import annotations

import itertools
import os
import random
import socket

# what programs under tests/ bind on their own when no port is given
_HARD_CODED = frozenset({1234, 12345, 12355, 12356, 29400, *range(29500, 29511)})


def _ephemeral_range() -> tuple[int, int]:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(p) for p in f.read().split())
        return lo, hi
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default; macOS/BSD use 49152-65535


def _slice() -> list[int]:
    lo, hi = _ephemeral_range()
    # below the range first (well above the well-known ports), else what lies above it
    ports = [p for p in range(10000, 65536) if not lo <= p <= hi and p not in _HARD_CODED]
    if len(ports) < 1000:  # an unusually wide ephemeral range: nothing better to do
        ports = [p for p in range(1024, 65536) if p not in _HARD_CODED]
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    if count > 1:
        ports = ports[index % count::count]
    return ports


def _bindable(port: int) -> bool:
    # no SO_REUSEADDR: a port with a listener or a connection in TIME_WAIT fails here
    for host in ("127.0.0.1", ""):
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                return False
    return True


_ports = _slice()
_walk = itertools.islice(itertools.cycle(_ports), random.Random(os.getpid()).randrange(len(_ports)),
                         None)


def free_port() -> int:
    """A TCP port on this machine that nothing holds now and that the OS will not hand out
    on its own (NOTE [ Test ports outside the ephemeral range ]).

    Returns:
        the port number, for a server that a test starts later (in a child process, say).

    Example::

        >>> 1024 <= free_port() < 65536
        True
    """
    for _ in range(len(_ports)):
        port = next(_walk)
        if _bindable(port):
            return port
    raise RuntimeError("free_port: every port in this test worker's slice is taken")
