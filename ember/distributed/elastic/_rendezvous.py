"""How the launcher's agents (one per node) agree on a worker group: static or through a
store (``--rdzv-backend c10d``).

NOTE [ Elastic rendezvous ]
With ``--rdzv-backend c10d --rdzv-endpoint host:port --nnodes MIN:MAX`` every node's agent
opens a ``TCPStore`` at the endpoint (the first agent on that host to bind the port serves
it, the others connect) and the agents meet in numbered *rounds*, all keys under
``rdzv/<run id>/``:

- ``round`` holds the open round. An agent joins it by ``add("<r>/joined", 1)``: the value
  is its place in join order, which becomes its node rank.
- The agent that joined first closes the round: at once when MAX agents have joined, or
  once MIN have and ``last_call_timeout`` seconds passed without reaching MAX. It writes
  the member count to ``<r>/closed`` (``compare_set``, so it is written once); an agent that
  joined after that is not a member: it adds itself to ``<r>/waiting`` and waits for the
  next round.
- Node 0 picks the workers' ``MASTER_ADDR:MASTER_PORT`` and publishes it as ``<r>/master``.
- While workers run, each agent watches the store: a new ``round`` (another agent
  restarted), ``<r>/waiting`` > 0 while the group is below MAX (a node wants in), or
  ``shutdown`` (an agent gave up). Any of these stops its workers; the first two send it
  back to the next rendezvous, which does not count against ``--max-restarts``.
- A worker failure stops the node's workers; with restarts left the agent opens the next
  round (``compare_set`` of ``round`` from r to r+1, so concurrent restarts open one round)
  and rejoins, and the other agents follow. Out of restarts, it sets ``shutdown``.
- A node whose workers all succeeded adds ``<r>/done`` and waits until every member has,
  then ``<r>/exited``; the agent serving the store leaves last, after every agent's
  ``exited``, so no agent talks to a store that is gone.

The static backend (the default) has one fixed round: ``--node-rank``, ``--nnodes``,
``--master-addr``/``--master-port`` as given; restarts rerun the node's workers alone.
"""

from __future__ import annotations

import datetime
import socket
import time

_DEFAULT_PORT = 29400


class RendezvousError(RuntimeError):
    """The agents could not form a group (timed out, or the group was shut down)."""


def _is_local(host: str) -> bool:
    if host in ("", "localhost", "127.0.0.1", "::1", "0.0.0.0"):
        return True
    try:
        names = {socket.gethostname(), socket.getfqdn()}
        addrs = {socket.gethostbyname(n) for n in names}
        return host in names or socket.gethostbyname(host) in addrs
    except OSError:
        return False


class StaticRendezvous:
    """One fixed round: the node rank, node count and master address as given."""

    def __init__(self, node_rank: int, nnodes: int, master_addr: str, master_port: int,
                 fresh_port: bool = False):
        self.node_rank, self.nnodes = node_rank, nnodes
        self.master_addr, self.master_port = master_addr, master_port
        self.fresh_port = fresh_port

    def next_rendezvous(self) -> tuple[int, int, str, int]:
        """``(node_rank, nnodes, master_addr, master_port)`` of the next worker group."""
        if self.fresh_port:  # --standalone: port 0, the store picks one as it binds
            self.master_port = 0  # (NOTE [ The agent's store ] in _run_agent.py)
        return self.node_rank, self.nnodes, self.master_addr, self.master_port

    def should_stop(self, nnodes: int) -> str | None:
        """Why the running group must stop (never, for a static group)."""
        return None

    def take_workers_store(self):
        """None: the node's group serves its store itself, on the port given."""
        return None

    def restart(self) -> None:
        """Prepare the next round (nothing to agree on)."""

    def shutdown(self, reason: str) -> None:
        """Tell the other agents to give up (there are none to tell)."""

    def finish(self, nnodes: int) -> str | None:
        """Wait for the other nodes to finish; None when all did (here: at once)."""
        return None


class StoreRendezvous:
    """The rounds of NOTE [ Elastic rendezvous ] on a ``TCPStore``.

    Args:
        endpoint (str): ``host[:port]`` of the store (default port 29400).
        run_id (str): the job's id; agents with other ids do not meet.
        nmin, nmax (int): the fewest and most nodes of a group.
        conf (dict): ``last_call_timeout`` (seconds, default 30), ``join_timeout`` (600),
            ``read_timeout`` (60).
        local_addr (str, optional): the address node 0 gives the workers as MASTER_ADDR.
        store (Store, optional): the store to meet in (default: one at ``endpoint``).
    """

    def __init__(self, endpoint: str, run_id: str, nmin: int, nmax: int, conf: dict,
                 local_addr: str | None = None, store=None):
        from .._store import TCPStore

        host, _, port = endpoint.rpartition(":") if ":" in endpoint else (endpoint, "", "")
        self.host, self.port = host or "127.0.0.1", int(port or _DEFAULT_PORT)
        self.nmin, self.nmax = nmin, nmax
        self.last_call = float(conf.get("last_call_timeout", 30))
        self.join_timeout = float(conf.get("join_timeout", 600))
        timeout = datetime.timedelta(seconds=float(conf.get("read_timeout", 60)))
        self.local_addr = local_addr or ("127.0.0.1" if self.host in ("127.0.0.1", "localhost")
                                         else socket.getfqdn())
        self.prefix = f"rdzv/{run_id}/"
        self.is_host = False
        self.store = store  # given: a store another part of this agent serves or reaches
        if self.store is None and _is_local(self.host):
            try:
                self.store = TCPStore(self.host, self.port, is_master=True, timeout=timeout,
                                      wait_for_workers=False)
                self.is_host = True
            except OSError:  # another agent on this machine serves it
                pass
        if self.store is None:
            self.store = TCPStore(self.host, self.port, is_master=False, timeout=timeout)
        self.round = -1
        self.agents = 1
        self._workers_store = None

    def _k(self, name: str) -> str:
        return self.prefix + name

    def _current_round(self) -> int:
        return self.store.add(self._k("round"), 0)

    def _count(self, name: str) -> int:
        return self.store.add(self._k(f"{self.round}/{name}"), 0)

    def _check_shutdown(self) -> None:
        if self.store.check([self._k("shutdown")]):
            self.store.add(self._k("shutdown_seen"), 1)
            raise RendezvousError("the worker group was shut down by another agent: "
                                  + self.store.get(self._k("shutdown")).decode())

    def next_rendezvous(self) -> tuple[int, int, str, int]:
        """Join the open round (waiting for later rounds while this agent is not let in);
        ``(node_rank, nnodes, master_addr, master_port)``.

        Raises:
            RendezvousError: no group formed within ``join_timeout``, or shutdown.
        """
        deadline = time.monotonic() + self.join_timeout
        while True:
            self._check_shutdown()
            r = self._current_round()
            index = self.store.add(self._k(f"{r}/joined"), 1) - 1
            if index == 0:
                self._close_round(r, deadline)
            closed = self._wait_closed(r, deadline)
            if closed is not None and index < closed:
                self.round, self.agents = r, closed
                if index == 0:  # serve the workers' store now, on a port the OS picks
                    port = self._serve_workers_store()
                    self.store.set(self._k(f"{r}/master"), f"{self.local_addr}:{port}")
                addr, _, port = self.store.get(self._k(f"{r}/master")).decode().rpartition(":")
                return index, closed, addr, int(port)
            if closed is not None:  # too late for round r: ask for room, wait for r + 1
                self.store.add(self._k(f"{r}/waiting"), 1)
            while self._current_round() == r:
                self._check_shutdown()
                if time.monotonic() > deadline:
                    raise RendezvousError(f"no worker group admitted this node within "
                                          f"{self.join_timeout:g} s (join_timeout)")
                time.sleep(0.05)

    def _serve_workers_store(self) -> int:
        # NOTE [ The agent's store ] in _run_agent.py: node 0's agent serves the store its
        # group's workers meet in. It binds here, before the port is published: a port found
        # free, published, and bound only later could be taken in between by any other
        # connection on the machine.
        from .._store import TCPStore

        if self._workers_store is not None:  # one a round that never ran left behind
            self._workers_store.close()
        self._workers_store = TCPStore("127.0.0.1", 0, is_master=True,
                                       timeout=datetime.timedelta(seconds=60),
                                       wait_for_workers=False)
        return self._workers_store.port

    def take_workers_store(self):
        """The store node 0's agent serves for this round's workers, handed over once (the
        caller closes it); None on the other nodes, or once taken."""
        store, self._workers_store = self._workers_store, None
        return store

    def _close_round(self, r: int, deadline: float) -> None:
        min_reached = None
        while True:
            joined = self.store.add(self._k(f"{r}/joined"), 0)
            if joined >= self.nmin and min_reached is None:
                min_reached = time.monotonic()
            if joined >= self.nmax or (min_reached is not None
                                       and time.monotonic() - min_reached >= self.last_call):
                self.store.compare_set(self._k(f"{r}/closed"), "", str(min(joined, self.nmax)))
                return
            if time.monotonic() > deadline:
                raise RendezvousError(f"only {joined} of at least {self.nmin} nodes joined "
                                      f"within {self.join_timeout:g} s (join_timeout)")
            time.sleep(0.05)

    def _wait_closed(self, r: int, deadline: float) -> int | None:
        key = self._k(f"{r}/closed")
        while not self.store.check([key]):
            self._check_shutdown()
            if self._current_round() != r:
                return None
            if time.monotonic() > deadline:
                raise RendezvousError(f"the rendezvous round did not close within "
                                      f"{self.join_timeout:g} s (join_timeout)")
            time.sleep(0.05)
        return int(self.store.get(key))

    def should_stop(self, nnodes: int) -> str | None:
        """Why the running group must stop: a new round, a node waiting to join, or shutdown.

        Raises:
            RendezvousError: another agent shut the group down.
        """
        self._check_shutdown()
        if self._current_round() != self.round:
            return "another node restarted the worker group"
        if nnodes < self.nmax and self._count("waiting") > 0:
            return "a new node asked to join"
        return None

    def restart(self) -> None:
        """Open the next round (once, however many agents ask)."""
        self.store.compare_set(self._k("round"), str(self.round), str(self.round + 1))

    def shutdown(self, reason: str) -> None:
        """Make every agent give up (``should_stop`` raises on them); the agent serving the
        store waits a little for the others to read it."""
        self.store.set(self._k("shutdown"), reason)
        if self.is_host:
            deadline = time.monotonic() + 10
            while (self.store.add(self._k("shutdown_seen"), 0) < self.agents - 1
                   and time.monotonic() < deadline):
                time.sleep(0.05)

    def finish(self, nnodes: int) -> str | None:
        """After this node's workers succeeded: wait for the other members; None when all
        succeeded, else why the group must start again.

        Raises:
            RendezvousError: another agent shut the group down.
        """
        self.store.add(self._k(f"{self.round}/done"), 1)
        while self._count("done") < nnodes:
            why = self.should_stop(nnodes)
            if why is not None and "join" not in why:
                return why
            time.sleep(0.05)
        self.store.add(self._k(f"{self.round}/exited"), 1)
        if self.is_host:  # keep serving until every agent stopped talking to the store
            deadline = time.monotonic() + 30
            while self._count("exited") < nnodes and time.monotonic() < deadline:
                time.sleep(0.02)
        return None
