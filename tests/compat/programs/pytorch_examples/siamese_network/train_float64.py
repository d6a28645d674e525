# Test driver (ember's, not part of pytorch/examples): ``python train_float64.py STEPS`` trains
# main.py's SiameseNetwork on its APP_MATCHER pairs as main.py's ``train`` does (Adadelta,
# lr 1.0, BCELoss, StepLR), but in float64, and prints each loss and the parameters' sum with
# all their digits. (In float32 Adadelta's first steps, about lr * sign(grad) where a gradient
# is rounding noise, carry float32 rounding into the weights, so main.py's own float32 losses
# part ways with PyTorch's after the first step; float64 shows the arithmetic is the same.)
import random
import sys

import torch

from main import APP_MATCHER, SiameseNetwork

torch.manual_seed(1)
random.seed(0)
model = SiameseNetwork().double()
optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
loader = torch.utils.data.DataLoader(APP_MATCHER("../data", train=True), batch_size=16)
criterion = torch.nn.BCELoss()
for step, (images_1, images_2, targets) in enumerate(loader):
    if step == int(sys.argv[1]):
        break
    optimizer.zero_grad()
    loss = criterion(model(images_1.double(), images_2.double()).squeeze(), targets.double())
    loss.backward()
    optimizer.step()
    scheduler.step()
    total = sum(p.sum().item() for p in model.parameters())
    print(f"step {step} loss {loss.item()!r} sum {total!r}")
