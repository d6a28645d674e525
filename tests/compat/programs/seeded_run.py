# Test wrapper (ember's, not a public program): ``python seeded_run.py PROGRAM [ARGS...]`` seeds
# the default generator and Python's ``random`` (SEED in the environment, 0 if unset) and runs
# PROGRAM as ``python PROGRAM ARGS`` would, so that a program that draws its data without
# seeding draws the same numbers under PyTorch and under ember.
import os
import random
import runpy
import sys

import torch

torch.manual_seed(int(os.environ.get("SEED", "0")))
random.seed(int(os.environ.get("SEED", "0")))
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
runpy.run_path(sys.argv[0], run_name="__main__")
