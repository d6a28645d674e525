"""Stand-in for tiktoken (not installed here; build-nanogpt's train_gpt2.py and hellaswag.py
and LLMs-from-scratch's chapters import it): ``get_encoding(name)`` gives a byte-level
encoding, one token per UTF-8 byte, and decodes ids past 255 (a small model may sample any of
its 50304) as ``<id>``."""


class Encoding:
    """A byte-level tokenizer with tiktoken's ``encode``/``decode``."""

    def __init__(self, name):
        self.name = name
        self.eot_token = 50256
        self._special_tokens = {"<|endoftext|>": 50256}

    def encode(self, text, allowed_special=(), disallowed_special="all"):
        # ``allowed_special`` special tokens become their ids, the rest of the text bytes
        ids = []
        for i, part in enumerate(text.split("<|endoftext|>") if "<|endoftext|>" in
                                 allowed_special else [text]):
            ids += [self.eot_token] * (i > 0) + list(part.encode("utf-8"))
        return ids

    def encode_ordinary(self, text):
        return self.encode(text)

    def decode(self, tokens):
        out, run = [], bytearray()
        for t in tokens:
            if t < 256:
                run.append(t)
                continue
            out.append(run.decode("utf-8", "replace"))
            run = bytearray()
            out.append(f"<{t}>")
        out.append(run.decode("utf-8", "replace"))
        return "".join(out)


def get_encoding(name):
    return Encoding(name)
