"""Benchmarks that time ember against PyTorch side by side: ``python -m bench [GROUP ...]``.

Workloads register themselves with ``bench.common.workload``; each module of this package
other than ``common`` is a group of them. See bench/README.md.
"""
