"""Backends beyond the CPU registered through ``ember.library``: ``meta`` (shapes and dtypes,
no data). The CPU backend lives in ember/_dispatch.py and CUDA in ember/cuda."""
