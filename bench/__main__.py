"""``python -m bench``: run the registered workloads (see bench/README.md)."""

import sys

from bench.run import main

if sys.argv[1:2] == ["ddp"]:  # 2-process group with its own runner (bench/ddp.py)
    from bench.ddp import main  # noqa: F811
    sys.argv[1:2] = []
sys.exit(main())
