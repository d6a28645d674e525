"""``ember.utils``: data loading and other utilities."""

from . import data  # noqa: F401
