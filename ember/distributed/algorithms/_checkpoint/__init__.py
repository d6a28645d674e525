"""``ember.distributed.algorithms._checkpoint``: activation checkpointing as a module wrapper
(``checkpoint_wrapper``), the way FSDP training scripts apply it."""
