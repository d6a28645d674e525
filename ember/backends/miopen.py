"""``ember.backends.miopen``: AMD's MIOpen settings (``immediate``), recorded only.

ember runs no MIOpen kernels. See NOTE [ Backend settings ] in ember/backends/_flags.py.

Example::

    >>> ember.backends.miopen.immediate
    False
"""

from __future__ import annotations

from ._flags import bool_setting, settings_module

__all__: list = []

_state = {"immediate": False}

settings_module(__name__, {
    "immediate": bool_setting("torch.backends.miopen", "immediate", _state, freezable=True),
})
