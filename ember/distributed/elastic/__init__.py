"""``ember.distributed.elastic``: the parts of ``torch.distributed.elastic`` training scripts
import — ``multiprocessing.errors.record`` for the main function of a worker that
``python -m ember.distributed.run`` starts.

Example::

    >>> from ember.distributed.elastic.multiprocessing.errors import record
    >>> record(lambda: 3)()
    3
"""
