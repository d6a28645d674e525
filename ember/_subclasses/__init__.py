"""``torch._subclasses``: tensor subclasses PyTorch uses internally (fake tensors for tracing).

ember has no fake tensors; this package holds the few names libraries import from it.
"""
