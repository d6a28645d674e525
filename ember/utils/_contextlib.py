"""``torch.utils._contextlib``: the base of context managers that also decorate functions
(the grad modes' base; tensordict derives its own modes from it).

Example::

    >>> from ember.utils._contextlib import _DecoratorContextManager
    >>> _DecoratorContextManager.__name__
    '_DecoratorContextManager'
"""

from ..autograd.grad_mode import _DecoratorContextManager, _NoParamDecoratorContextManager

__all__ = ["_DecoratorContextManager", "_NoParamDecoratorContextManager"]
