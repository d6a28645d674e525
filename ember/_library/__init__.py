"""The machinery behind ``ember.library``'s custom operators.

- ``schema.py``: torch's operator schema language -- parsed, printed, inferred from type
  annotations, and bound to the arguments of a call.
- ``custom_ops.py``: ``LibraryOp``, the registry ``Op`` a custom operator becomes, and its
  path through the dispatcher (NOTE [ Custom ops ]).
- ``registration.py``: ``Library``, and dispatch keys and device types as registration slots.
- ``opcheck.py``: ``opcheck``, the checks that a custom operator's registrations agree with
  what its kernels do.

The public API lives in ``ember/library.py``; nothing here is imported by the rest of ember.
"""
