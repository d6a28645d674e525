"""``build_vocab_from_iterator`` and the ``Vocab`` it returns."""

from collections import Counter


class Vocab:
    """Tokens and their indices; an unknown token maps to the default index once one is set
    (before that it raises ``RuntimeError``, as torchtext's)."""

    def __init__(self, tokens):
        self._itos = list(tokens)
        self._stoi = {t: i for i, t in enumerate(self._itos)}
        self._default = None

    def __len__(self):
        return len(self._itos)

    def __contains__(self, token):
        return token in self._stoi

    def __getitem__(self, token):
        if token in self._stoi:
            return self._stoi[token]
        if self._default is None:
            raise RuntimeError(f"Token {token} not found and default index is not set")
        return self._default

    def __call__(self, tokens):
        return [self[t] for t in tokens]

    def set_default_index(self, index):
        self._default = index

    def get_default_index(self):
        return self._default

    def lookup_indices(self, tokens):
        return self(tokens)

    def lookup_token(self, index):
        return self._itos[index]

    def lookup_tokens(self, indices):
        return [self._itos[int(i)] for i in indices]

    def get_itos(self):
        return list(self._itos)

    def get_stoi(self):
        return dict(self._stoi)


def build_vocab_from_iterator(iterator, min_freq=1, specials=None, special_first=True,
                              max_tokens=None):
    """A ``Vocab`` of the tokens in ``iterator`` (an iterable of token lists) seen at least
    ``min_freq`` times, most frequent first (ties in order of first appearance), with
    ``specials`` in front (or at the end)."""
    counts = Counter()
    for tokens in iterator:
        counts.update(tokens)
    specials = list(specials or [])
    ordered = [t for t, n in sorted(counts.items(), key=lambda item: -item[1])
               if n >= min_freq and t not in specials]
    if max_tokens is not None:
        ordered = ordered[:max_tokens - len(specials)]
    return Vocab(specials + ordered if special_first else ordered + specials)
