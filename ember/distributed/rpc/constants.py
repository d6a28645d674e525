"""Default values of ``ember.distributed.rpc`` (``torch.distributed.rpc.constants``)."""

import datetime

__all__ = ["DEFAULT_INIT_METHOD", "DEFAULT_NUM_WORKER_THREADS", "DEFAULT_PROCESS_GROUP_TIMEOUT",
           "DEFAULT_RPC_TIMEOUT_SEC", "DEFAULT_SHUTDOWN_TIMEOUT", "UNSET_RPC_TIMEOUT"]

#: seconds an RPC may take by default
DEFAULT_RPC_TIMEOUT_SEC = 60.0
#: how the workers meet by default
DEFAULT_INIT_METHOD = "env://"
#: threads that run incoming requests
DEFAULT_NUM_WORKER_THREADS = 16
#: "use the default timeout" as a timeout argument
UNSET_RPC_TIMEOUT = -1.0
#: how long a graceful shutdown waits by default (seconds)
DEFAULT_SHUTDOWN_TIMEOUT = 0.0
#: how long a process-group rendezvous may wait (effectively forever, as PyTorch)
DEFAULT_PROCESS_GROUP_TIMEOUT = datetime.timedelta(milliseconds=2**31 - 1)
