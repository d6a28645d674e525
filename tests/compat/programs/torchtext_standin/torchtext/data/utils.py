"""Tokenizers: every name (``"spacy"``, ``"basic_english"``, ...) gives the same regular
expression tokenizer, words and single punctuation marks."""

import re

_TOKEN = re.compile(r"\w+|[^\w\s]")


def get_tokenizer(tokenizer, language="en"):
    """A function from a string to its list of tokens (``language`` is accepted and
    ignored)."""
    return _TOKEN.findall
