# Test wrapper (ember's, not part of pytorch/examples): ``python float64_run.py PROGRAM [ARGS]``
# runs PROGRAM as ``python PROGRAM ARGS`` would, with float64 as the default dtype, so that
# runs whose float32 rounding grows apart (a high learning rate on an RNN) can be compared
# closely between PyTorch and ember.
import os
import runpy
import sys

import torch

torch.set_default_dtype(torch.float64)
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
runpy.run_path(sys.argv[0], run_name="__main__")
