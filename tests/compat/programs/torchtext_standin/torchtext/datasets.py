"""``Multi30k``: seeded synthetic German-English sentence pairs in place of the download."""

import random

import torch.utils.data

#: torchtext.datasets.multi30k's URL table (programs overwrite entries; nothing is fetched)
_WORDS = {
    "en": ("a man woman dog child girl boy runs sits plays walks on in the with red blue "
           "street park ball water grass").split(),
    "de": ("ein mann frau hund kind mädchen junge läuft sitzt spielt geht auf in der mit rot "
           "blau straße park ball wasser gras").split(),
}


class _Multi30kModule:
    URL = {"train": "", "valid": "", "test": ""}


multi30k = _Multi30kModule()

#: pairs per split
SIZES = {"train": 48, "valid": 16, "test": 16}


class Multi30k(torch.utils.data.IterableDataset):
    """``(source, target)`` sentence pairs of ``language_pair``, each a line with its newline,
    the same pairs on every pass; word ``i`` of one language translates to word ``i`` of the
    other."""

    def __init__(self, root=".data", split="train", language_pair=("de", "en")):
        super().__init__()
        rng = random.Random(f"multi30k-{split}")
        src, tgt = language_pair
        self._pairs = []
        for _ in range(SIZES[split]):
            picks = [rng.randrange(len(_WORDS["en"])) for _ in range(rng.randint(3, 9))]
            self._pairs.append((" ".join(_WORDS[src][i] for i in picks).capitalize() + ".\n",
                                " ".join(_WORDS[tgt][i] for i in picks).capitalize() + ".\n"))

    def __iter__(self):
        return iter(self._pairs)

    def __len__(self):
        return len(self._pairs)
