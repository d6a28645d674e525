"""``torch._functorch``: the pieces of PyTorch's function-transform internals that libraries
import by name (``vmap``'s helpers). The transforms themselves are ``ember.func``.

Example::

    >>> from ember._functorch.vmap import _get_name
    >>> _get_name(len)
    'len'
"""

from . import vmap  # noqa: F401
