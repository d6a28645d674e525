"""Stand-in for transformers (not installed here): build-nanogpt's hellaswag.py imports
``GPT2LMHeadModel`` at its top and uses it only in its own command-line evaluation."""


class GPT2LMHeadModel:
    """Unused by train_gpt2.py: loading pretrained weights needs the real package."""

    @classmethod
    def from_pretrained(cls, name):
        raise NotImplementedError("the transformers stand-in loads no pretrained weights")
