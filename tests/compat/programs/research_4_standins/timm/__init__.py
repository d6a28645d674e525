"""Stand-in for timm: only the helpers the vendored model files import (see ../README.md)."""
