"""``tyro.cli`` stand-in: the dataclass built with the JSON overrides in ``$TYRO_OVERRIDES``."""

import json
import os


def cli(cls):
    return cls(**json.loads(os.environ.get("TYRO_OVERRIDES", "{}")))
