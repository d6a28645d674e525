"""``ember._logging``: PyTorch's switchboard for its subsystems' logs (``set_logs``).

PyTorch programs turn on compiler and distributed logs with
``torch._logging.set_logs(dynamo=logging.INFO, graph_breaks=True)``. ember keeps the same
switchboard: each *component* (``dynamo``, ``distributed``, ...) is a standard ``logging``
logger under ``ember.<component>`` whose level ``set_logs`` sets, and each *artifact*
(``graph_breaks``, ``recompiles``, ...) is a flag that the subsystem producing it consults
through ``is_artifact_enabled`` and logs through ``getArtifactLogger``. A call resets every
switch it does not name, as PyTorch's does. ember's ``compile`` runs eagerly, so compiler
artifacts are accepted and recorded but most have nothing to report.
"""

from __future__ import annotations

import functools
import logging

__all__ = ["set_logs", "getArtifactLogger", "is_artifact_enabled", "LazyString",
           "warning_once", "DEFAULT_LOGGING"]

#: component name -> the ember logger it drives
_COMPONENTS = {
    "dynamo": "ember._dynamo", "aot": "ember._functorch", "autograd": "ember.autograd",
    "dynamic": "ember.fx.experimental.symbolic_shapes", "inductor": "ember._inductor",
    "distributed": "ember.distributed", "c10d": "ember.distributed.c10d",
    "ddp": "ember.nn.parallel.distributed", "fsdp": "ember.distributed.fsdp",
    "dtensor": "ember.distributed.tensor", "onnx": "ember.onnx", "export": "ember.export",
}
_ARTIFACTS = (
    "bytecode", "aot_graphs", "aot_joint_graph", "ddp_graphs", "graph", "graph_code",
    "graph_code_verbose", "graph_breaks", "side_effects", "graph_sizes", "guards",
    "recompiles", "recompiles_verbose", "trace_source", "trace_call", "trace_bytecode",
    "output_code", "kernel_code", "schedule", "perf_hints", "pre_grad_graphs",
    "post_grad_graphs", "ir_pre_fusion", "ir_post_fusion", "onnx_diagnostics", "fusion",
    "overlap", "cudagraphs", "sym_node", "compiled_autograd", "compiled_autograd_verbose",
    "cudagraph_static_inputs", "benchmarking", "autotuning", "incremental",
    "graph_region_expansion", "inductor_metrics", "hierarchical_compile",
    "compute_dependencies", "caching",
)
_LEVELS = (logging.CRITICAL, logging.ERROR, logging.WARNING, logging.INFO, logging.DEBUG,
           logging.NOTSET)
#: PyTorch's defaults: components log warnings, no artifact is on
DEFAULT_LOGGING = {"dynamo": logging.WARNING, "aot": logging.WARNING,
                   "inductor": logging.WARNING}

_enabled: set = set()


def _check_level(name, level):
    if level not in _LEVELS:
        raise ValueError(f"Unrecognized log level for log {name}: {level}, valid level values "
                         f"are: {','.join(str(x) for x in _LEVELS)}")


def _set_logs(all=None, modules=None, **switches):
    unknown = [k for k in switches if k not in _COMPONENTS and k not in _ARTIFACTS]
    if unknown:
        raise TypeError(f"set_logs() got an unexpected keyword argument '{unknown[0]}'")
    levels = {}
    for name in _COMPONENTS:
        level = switches.get(name)
        if level is None:
            level = all
        if level is not None:
            _check_level(name, level)
        levels[name] = level
    flags = set()
    for name in _ARTIFACTS:
        value = switches.get(name, False)
        if not isinstance(value, bool):
            raise ValueError(f"Unrecognized log level for artifact {name}: {value!r} "
                             "(artifacts take True or False)")
        if value:
            flags.add(name)
    module_levels = {}
    for qname, level in (modules or {}).items():
        level = logging.DEBUG if level is True else logging.NOTSET if level is False \
            else level
        _check_level(qname, level)
        module_levels[qname] = level
    # every check passed: now switch
    for name, level in levels.items():
        logging.getLogger(_COMPONENTS[name]).setLevel(
            logging.NOTSET if level is None else level)
    for qname, level in module_levels.items():
        logging.getLogger(qname).setLevel(level)
    _enabled.clear()
    _enabled.update(flags)


def set_logs(*, all=None, modules=None, **switches):
    """Set the log level of ember's subsystems and turn log artifacts on or off.

    Every switch not named goes back to its default, as in PyTorch.

    Args:
        all (int, optional): a ``logging`` level for every component.
        modules (dict, optional): logger name -> level (True: DEBUG, False: unset).
        **switches: a component name (``dynamo``, ``aot``, ``autograd``, ``dynamic``,
            ``inductor``, ``distributed``, ``c10d``, ``ddp``, ``fsdp``, ``dtensor``,
            ``onnx``, ``export``) with a ``logging`` level, or an artifact name
            (``graph_breaks``, ``recompiles``, ``guards``, ``output_code``, ...) with a bool.

    Returns:
        None.

    Raises:
        TypeError: an unknown switch name. ValueError: a level ``logging`` does not define.

    Example:
        >>> import logging
        >>> import ember
        >>> ember._logging.set_logs(dynamo=logging.INFO, graph_breaks=True)
        >>> ember._logging.is_artifact_enabled("graph_breaks")
        True
        >>> ember._logging.set_logs()
    """
    _set_logs(all=all, modules=modules, **switches)


def is_artifact_enabled(name):
    """Whether the log artifact ``name`` is on (see ``set_logs``).

    Args:
        name (str): an artifact name such as ``"graph_breaks"``.

    Returns:
        bool.

    Example:
        >>> import ember
        >>> ember._logging.is_artifact_enabled("recompiles")
        False
    """
    return name in _enabled


class _ArtifactFilter(logging.Filter):
    def __init__(self, artifact):
        super().__init__()
        self.artifact = artifact

    def filter(self, record):
        return self.artifact in _enabled


def getArtifactLogger(module_qname, artifact_name):
    """A logger for one artifact of a module: its records pass only while ``set_logs``
    has that artifact on.

    Args:
        module_qname (str): the module's name (``__name__``).
        artifact_name (str): one of ``set_logs``'s artifact names.

    Returns:
        logging.Logger.

    Example:
        >>> import ember
        >>> log = ember._logging.getArtifactLogger(__name__, "graph_breaks")
        >>> log.name.endswith("__graph_breaks")
        True
    """
    if artifact_name not in _ARTIFACTS:
        raise ValueError(f"Artifact name: {artifact_name!r} not registered")
    logger = logging.getLogger(f"{module_qname}.__{artifact_name}")
    if not any(isinstance(f, _ArtifactFilter) for f in logger.filters):
        logger.addFilter(_ArtifactFilter(artifact_name))
        logger.setLevel(logging.DEBUG)
    return logger


class LazyString:
    """A string computed only when a log record is formatted.

    Args:
        func: called with ``*args, **kwargs`` to make the string.

    Returns:
        An object whose ``str()`` is ``func(*args, **kwargs)``.

    Example:
        >>> import ember
        >>> str(ember._logging.LazyString(lambda n: "x" * n, 3))
        'xxx'
    """

    def __init__(self, func, *args, **kwargs):
        self.func, self.args, self.kwargs = func, args, kwargs

    def __str__(self):
        return self.func(*self.args, **self.kwargs)


@functools.lru_cache(None)
def warning_once(logger_obj, *args, **kwargs):
    """``logger_obj.warning(*args, **kwargs)``, once per distinct call.

    Args:
        logger_obj (logging.Logger): where to log.
        *args, **kwargs: as for ``Logger.warning`` (hashable).

    Returns:
        None.

    Example:
        >>> import logging, ember
        >>> ember._logging.warning_once(logging.getLogger("demo"), "said once")
    """
    logger_obj.warning(*args, **kwargs)
