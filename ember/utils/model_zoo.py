"""``ember.utils.model_zoo``: the old home of :func:`load_url` (``torch.utils.model_zoo``).

``load_url`` is :func:`ember.hub.load_state_dict_from_url` itself: it downloads a file
``torch.save`` wrote into the hub cache once and loads it from there afterwards. It is
looked up on first use, because ``ember.hub`` builds on ``ember.utils``.
"""

__all__ = ["load_url"]  # noqa: F822  (provided by __getattr__)


def __getattr__(name):
    if name == "load_url":
        from ..hub import load_state_dict_from_url

        return load_state_dict_from_url
    if name == "tqdm":  # torchvision's download progress; torch re-exports torch.hub's
        from .. import hub

        return hub.tqdm if hub.tqdm is not None else _PlainProgress
    raise AttributeError(f"module 'ember.utils.model_zoo' has no attribute '{name}'")


class _PlainProgress:
    """``tqdm``'s calls, as a percentage on stderr, for when tqdm is not installed."""

    def __init__(self, iterable=None, total=None, disable=False, **kwargs):
        from ..hub import _Progress

        self._shown = _Progress(total, disable)
        self.iterable = iterable

    def update(self, n=1):
        self._shown.update(n)

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.update(1)

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._shown.__exit__(*exc)


def __dir__():
    return sorted(list(globals()) + ["load_url", "tqdm"])
