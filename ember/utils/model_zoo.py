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
    raise AttributeError(f"module 'ember.utils.model_zoo' has no attribute '{name}'")


def __dir__():
    return sorted(list(globals()) + ["load_url"])
