"""Stand-in for ``timm.models.registry``: ``register_model`` records a model factory by name."""

MODELS = {}


def register_model(fn):
    """Records ``fn`` under its name and returns it unchanged."""
    MODELS[fn.__name__] = fn
    return fn
