"""Imported by a ``forkserver`` server started while ember's ``torch`` alias is installed: it
installs the alias there, so the children it forks see ember as ``torch`` (NOTE [ The alias
in child processes ] in ember/compat/__init__.py)."""

from . import install

install()
