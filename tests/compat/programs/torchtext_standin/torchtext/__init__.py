"""A stand-in for the parts of torchtext that pytorch/examples' ``language_translation``
touches, for machines without torchtext or spaCy (the tests put its folder on PYTHONPATH).

``datasets.Multi30k`` yields seeded synthetic sentence pairs (nothing is downloaded),
``data.utils.get_tokenizer`` splits words and punctuation with a regular expression, and
``vocab.build_vocab_from_iterator`` builds torchtext's frequency-ordered vocabulary. It works
under PyTorch and under ember's alias, so a program's output can be compared between the two.
"""

from . import data, datasets, vocab  # noqa: F401
