"""Adversarial examples the way the PyTorch "Adversarial Example Generation" tutorial and
Madry-style robustness repositories write them: a LeNet trained briefly, ``fgsm_attack``
with ``data.grad.data.sign()``, the normalised-input ``denorm`` round trip, an accuracy
table over epsilons (the tutorial's ``test`` loop with ``init_pred``/``final_pred`` and
saved adversarial examples), a projected gradient descent attack with a random start and
``torch.max``/``torch.min`` projection, PGD adversarial training, and TRADES' KL term."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser(description="fgsm")
parser.add_argument("--epsilons", type=float, nargs="+", default=[0, .05, .1, .2, .3])
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--use-cuda", action="store_true", default=False)
args = parser.parse_args()

torch.manual_seed(args.seed)
device = torch.device("cuda" if args.use_cuda and torch.cuda.is_available() else "cpu")
print("CUDA Available: ", torch.cuda.is_available())


def make_digits(n, g):
    """Ten fixed 12x12 templates plus noise, in [0, 1]."""
    templates = torch.rand(10, 1, 12, 12, generator=torch.Generator().manual_seed(7))
    y = torch.randint(0, 10, (n,), generator=g)
    x = (templates[y] * 0.7 + 0.3 * torch.rand(n, 1, 12, 12, generator=g)).clamp(0, 1)
    return x, y


g = torch.Generator().manual_seed(0)
xtr, ytr = make_digits(256, g)
xte, yte = make_digits(40, g)
MEAN, STD = 0.1307, 0.3081
norm = lambda t: (t - MEAN) / STD  # noqa: E731


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.fc1 = nn.Linear(16 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def train(model, loader, optimizer, epochs, attack=None):
    for epoch in range(epochs):
        model.train()
        total = 0.0
        for data, target in loader:
            data, target = data.to(device), target.to(device)
            if attack is not None:
                model.eval()
                data = attack(model, data, target)
                model.train()
            optimizer.zero_grad()
            loss = F.nll_loss(model(norm(data)), target)
            loss.backward()
            optimizer.step()
            total += loss.item() * data.size(0)
        print(f"epoch {epoch} loss {total / len(loader.dataset):.4f}")


model = Net().to(device)
print(model)
optimizer = optim.Adam(model.parameters(), lr=3e-3)
loader = DataLoader(TensorDataset(xtr, ytr), batch_size=32, shuffle=True,
                    generator=torch.Generator().manual_seed(3))
train(model, loader, optimizer, 3)


def fgsm_attack(image, epsilon, data_grad):
    sign_data_grad = data_grad.sign()
    perturbed_image = image + epsilon * sign_data_grad
    perturbed_image = torch.clamp(perturbed_image, 0, 1)
    return perturbed_image


def denorm(batch, mean=[MEAN], std=[STD]):
    if isinstance(mean, list):
        mean = torch.tensor(mean).to(device)
    if isinstance(std, list):
        std = torch.tensor(std).to(device)
    return batch * std.view(1, -1, 1, 1) + mean.view(1, -1, 1, 1)


def test(model, device, test_loader, epsilon):
    correct = 0
    adv_examples = []
    margins = []
    for data, target in test_loader:
        data, target = data.to(device), target.to(device)
        data = norm(data)
        data.requires_grad = True
        output = model(data)
        init_pred = output.max(1, keepdim=True)[1]
        if init_pred.item() != target.item():
            continue
        loss = F.nll_loss(output, target)
        model.zero_grad()
        loss.backward()
        data_grad = data.grad.data
        data_denorm = denorm(data)
        perturbed_data = fgsm_attack(data_denorm, epsilon, data_grad)
        perturbed_data_normalized = norm(perturbed_data)
        output = model(perturbed_data_normalized)
        final_pred = output.max(1, keepdim=True)[1]
        top2 = output.topk(2, dim=1).values
        margins.append((top2[0, 0] - top2[0, 1]).item())
        if final_pred.item() == target.item():
            correct += 1
            if epsilon == 0 and len(adv_examples) < 3:
                adv_ex = perturbed_data.squeeze().detach().cpu().numpy()
                adv_examples.append((init_pred.item(), final_pred.item(), adv_ex))
        else:
            if len(adv_examples) < 3:
                adv_ex = perturbed_data.squeeze().detach().cpu().numpy()
                adv_examples.append((init_pred.item(), final_pred.item(), adv_ex))
    final_acc = correct / float(len(test_loader))
    print(f"Epsilon: {epsilon}\tTest Accuracy = {correct} / {len(test_loader)} = {final_acc}"
          f"\tmean margin {np.mean(margins):.4f}")
    return final_acc, adv_examples


model.eval()
test_loader = DataLoader(TensorDataset(xte, yte), batch_size=1, shuffle=False)
accuracies, examples = [], []
for eps in args.epsilons:
    acc, ex = test(model, device, test_loader, eps)
    accuracies.append(acc)
    examples.append(ex)
print("accuracies", accuracies)
print("example shapes", [(i, j, a.shape, round(float(a.mean()), 4)) for i, j, a in examples[2]])


def pgd_attack(model, images, labels, eps=0.2, alpha=0.05, iters=5, random_start=True):
    images = images.clone().detach()
    ori = images.clone()
    if random_start:
        images = images + torch.empty_like(images).uniform_(-eps, eps)
        images = torch.clamp(images, 0, 1).detach()
    for _ in range(iters):
        images.requires_grad = True
        outputs = model(norm(images))
        cost = F.nll_loss(outputs, labels)
        grad = torch.autograd.grad(cost, images, retain_graph=False, create_graph=False)[0]
        adv = images.detach() + alpha * grad.sign()
        eta = torch.clamp(adv - ori, min=-eps, max=eps)
        images = torch.clamp(ori + eta, min=0, max=1).detach()
    return images


def robust_accuracy(model, x, y, attack=None):
    model.eval()
    if attack is not None:
        x = attack(model, x, y)
    with torch.no_grad():
        pred = model(norm(x)).argmax(1)
    return (pred == y).float().mean().item(), x


clean, _ = robust_accuracy(model, xte, yte)
adv, xadv = robust_accuracy(model, xte, yte, pgd_attack)
print(f"standard model: clean {clean:.4f} pgd {adv:.4f} linf {(xadv - xte).abs().max():.4f}")

torch.manual_seed(5)
robust = Net().to(device)
opt = optim.SGD(robust.parameters(), lr=0.05, momentum=0.9)
train(robust, loader, opt, 2, attack=lambda m, x, y: pgd_attack(m, x, y, iters=3))
clean, _ = robust_accuracy(robust, xte, yte)
adv, _ = robust_accuracy(robust, xte, yte, pgd_attack)
print(f"pgd-trained model: clean {clean:.4f} pgd {adv:.4f}")


def trades_loss(model, x_natural, y, step_size=0.05, epsilon=0.2, perturb_steps=3, beta=6.0):
    criterion_kl = nn.KLDivLoss(reduction="sum")
    model.eval()
    x_adv = x_natural.detach() + 0.001 * torch.randn(x_natural.shape).to(device).detach()
    for _ in range(perturb_steps):
        x_adv.requires_grad_()
        with torch.enable_grad():
            loss_kl = criterion_kl(F.log_softmax(model(norm(x_adv)), dim=1),
                                   F.softmax(model(norm(x_natural)), dim=1))
        grad = torch.autograd.grad(loss_kl, [x_adv])[0]
        x_adv = x_adv.detach() + step_size * torch.sign(grad.detach())
        x_adv = torch.min(torch.max(x_adv, x_natural - epsilon), x_natural + epsilon)
        x_adv = torch.clamp(x_adv, 0.0, 1.0)
    model.train()
    x_adv = x_adv.detach().requires_grad_(False)
    logits = model(norm(x_natural))
    loss_natural = F.cross_entropy(logits, y)
    loss_robust = (1.0 / x_natural.size(0)) * criterion_kl(
        F.log_softmax(model(norm(x_adv)), dim=1), F.softmax(logits, dim=1))
    return loss_natural + beta * loss_robust, loss_natural, loss_robust


for step, (x, y) in enumerate(loader):
    if step == 3:
        break
    opt.zero_grad()
    loss, nat, rob = trades_loss(robust, x, y)
    loss.backward()
    opt.step()
    print(f"trades step {step} natural {nat.item():.4f} robust {rob.item():.4f}")
