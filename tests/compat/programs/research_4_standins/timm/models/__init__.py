"""Stand-in for ``timm.models``: ``layers`` and ``registry`` only."""
