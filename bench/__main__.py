"""``python -m bench``: run the registered workloads (see bench/README.md)."""

import sys

from bench.run import main

sys.exit(main())
