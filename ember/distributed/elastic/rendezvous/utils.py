"""Parsing rendezvous endpoints.

Example::

    >>> from ember.distributed.elastic.rendezvous.utils import parse_rendezvous_endpoint
    >>> parse_rendezvous_endpoint("node0:29400", 1), parse_rendezvous_endpoint("[::1]", 5)
    (('node0', 29400), ('::1', 5))
"""

from __future__ import annotations

import re

__all__ = ["parse_rendezvous_endpoint"]


def parse_rendezvous_endpoint(endpoint: str | None, default_port: int) -> tuple[str, int]:
    """``(host, port)`` of ``host[:port]`` (``[v6 address][:port]`` too); an empty
    endpoint is ``localhost``.

    Args:
        endpoint (str, optional): the endpoint.
        default_port (int): the port when none is given.

    Returns:
        tuple[str, int]

    Raises:
        ValueError: a bad port or host name.

    Example::

        >>> parse_rendezvous_endpoint("", 29400)
        ('localhost', 29400)
        >>> parse_rendezvous_endpoint("h:x", 1)
        Traceback (most recent call last):
        ...
        ValueError: The port number of the rendezvous endpoint 'h:x' must be an integer \
between 0 and 65536.
    """
    endpoint = endpoint.strip() if endpoint is not None else endpoint
    if not endpoint:
        return "localhost", default_port
    if endpoint[0] == "[" and endpoint[-1] == "]":
        host, rest = endpoint, []
    else:
        host, *rest = endpoint.rsplit(":", 1)
    if len(host) > 1 and host[0] == "[" and host[-1] == "]":
        host = host[1:-1]
    port = default_port
    if len(rest) == 1:
        try:
            port = int(rest[0])
        except ValueError:
            port = None
        if port is None or not 0 <= port < 2**16:
            raise ValueError(f"The port number of the rendezvous endpoint '{endpoint}' must be "
                             "an integer between 0 and 65536.")
    if not re.match(r"^[\w\.:-]+$", host):
        raise ValueError(f"The hostname of the rendezvous endpoint '{endpoint}' must be a "
                         "dot-separated list of labels, an IPv4 address, or an IPv6 address.")
    return host, port
