"""Every ember operator, one family per module. Importing this package registers them all.

Families are discovered, not listed, so adding a module here is the whole registration.
"""

import importlib
import pkgutil

from ._registry import Op, functions, list_ops, ops, public  # noqa: F401

for _m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _m.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_m.name}")
