# Test driver (ember's, not a public program): ``python train_models.py DTYPE NAME...`` builds
# each of kuangliu/pytorch-cifar's models (``models/``, unchanged) by the expression NAME, seeded,
# and takes one training step the way that repository's main.py does (cross-entropy, SGD with
# momentum 0.9 and weight decay 5e-4) on a random batch of two 32x32 images; it prints the loss,
# the output's shape and the evaluation-mode output after the step, and saves the step's
# gradients (those that exist) to ``grads_<i>.npz`` beside itself (in the folder it runs from).
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import *  # noqa: E402,F403

dtype = getattr(torch, sys.argv[1])
for i, name in enumerate(sys.argv[2:]):
    torch.manual_seed(0)
    net = eval(name).to(dtype)
    x = torch.randn(2, 3, 32, 32, dtype=dtype)
    y = torch.randint(0, 10, (2,))
    optimizer = optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    net.train()
    optimizer.zero_grad()
    out = net(x)
    loss = nn.CrossEntropyLoss()(out, y)
    loss.backward()
    optimizer.step()
    # (EfficientNetB0's first block never uses its expansion layers: no gradient, as in torch)
    np.savez(f"grads_{i}.npz", **{k: p.grad.numpy() for k, p in net.named_parameters()
                                  if p.grad is not None})
    net.eval()
    with torch.no_grad():
        after = net(x)
    print(name, tuple(out.shape), repr(loss.item()), repr(after.sum().item()), flush=True)
