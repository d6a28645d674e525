"""Reverse-mode automatic differentiation (the engine lives in _engine.py)."""
