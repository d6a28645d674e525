"""Differential tests: ember against real PyTorch on generated inputs (see harness.py)."""
