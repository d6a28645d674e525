"""Attention-based multiple-instance learning the way AMLab-Amsterdam/AttentionDeepMIL
(``model.py``, ``dataloader.py``, ``main.py``) and CLAM write it: a ``MnistBags``-style
dataset of variable-size bags whose label says whether a target instance is present,
``batch_size=1`` loaders with ``shuffle=True``, the ``Attention`` and ``GatedAttention``
poolings (``tanh`` times ``sigmoid`` branches, ``torch.transpose`` then ``softmax`` over
instances, ``torch.mm``), ``calculate_objective`` with the clamped negative log-likelihood,
``calculate_classification_error`` with ``ge(0.5)``, ``Adam`` with ``betas=(0.9, 0.999)``
and weight decay, CLAM's instance-level top-k pseudo-labels, and attention weights of a
bag printed next to its instance labels."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
import torch.utils.data as data_utils

parser = argparse.ArgumentParser(description="PyTorch MNIST bags Example")
parser.add_argument("--epochs", type=int, default=4, metavar="N")
parser.add_argument("--lr", type=float, default=0.0005, metavar="LR")
parser.add_argument("--reg", type=float, default=10e-5, metavar="R")
parser.add_argument("--target_number", type=int, default=9, metavar="T")
parser.add_argument("--mean_bag_length", type=int, default=6)
parser.add_argument("--var_bag_length", type=int, default=2)
parser.add_argument("--num_bags_train", type=int, default=40)
parser.add_argument("--num_bags_test", type=int, default=20)
parser.add_argument("--seed", type=int, default=1, metavar="S")
parser.add_argument("--no-cuda", action="store_true", default=False)
args = parser.parse_args()
args.cuda = not args.no_cuda and torch.cuda.is_available()
torch.manual_seed(args.seed)
if args.cuda:
    torch.cuda.manual_seed(args.seed)
    print("\nGPU is ON!")
loader_kwargs = {"num_workers": 1, "pin_memory": True} if args.cuda else {}


class MnistBags(data_utils.Dataset):
    """Digits are 6x6 noisy glyphs: a digit's template plus noise."""

    def __init__(self, target_number, mean_bag_length, var_bag_length, num_bag, seed, train=True):
        self.r = np.random.RandomState(seed)
        templates = np.random.RandomState(0).rand(10, 1, 6, 6).astype(np.float32)
        digits = self.r.randint(0, 10, 400)
        images = templates[digits] + 0.3 * self.r.randn(400, 1, 6, 6).astype(np.float32)
        self.bags, self.labels = [], []
        for _ in range(num_bag):
            n = max(1, int(self.r.normal(mean_bag_length, var_bag_length)))
            idx = self.r.randint(0, 400, n)
            self.bags.append(torch.from_numpy(images[idx]))
            self.labels.append(torch.from_numpy(digits[idx] == target_number))

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return self.bags[index], [max(self.labels[index]), self.labels[index]]


train_loader = data_utils.DataLoader(MnistBags(args.target_number, args.mean_bag_length, args.var_bag_length,
                                               args.num_bags_train, args.seed, True),
                                     batch_size=1, shuffle=True, **loader_kwargs)
test_loader = data_utils.DataLoader(MnistBags(args.target_number, args.mean_bag_length, args.var_bag_length,
                                              args.num_bags_test, args.seed + 1, False),
                                    batch_size=1, shuffle=False, **loader_kwargs)
pos = sum(int(bag_label[0]) for _, bag_label in train_loader.dataset)
print(f"Number positive train bags: {pos}/{len(train_loader.dataset)}")


class Attention(nn.Module):
    def __init__(self, gated=False):
        super().__init__()
        self.M, self.L, self.ATTENTION_BRANCHES = 32, 16, 1
        self.gated = gated
        self.feature_extractor_part1 = nn.Sequential(nn.Conv2d(1, 8, kernel_size=3), nn.ReLU(),
                                                     nn.MaxPool2d(2, stride=2))
        self.feature_extractor_part2 = nn.Sequential(nn.Linear(8 * 2 * 2, self.M), nn.ReLU())
        if gated:
            self.attention_V = nn.Sequential(nn.Linear(self.M, self.L), nn.Tanh())
            self.attention_U = nn.Sequential(nn.Linear(self.M, self.L), nn.Sigmoid())
            self.attention_w = nn.Linear(self.L, self.ATTENTION_BRANCHES)
        else:
            self.attention = nn.Sequential(nn.Linear(self.M, self.L), nn.Tanh(),
                                           nn.Linear(self.L, self.ATTENTION_BRANCHES))
        self.classifier = nn.Sequential(nn.Linear(self.M * self.ATTENTION_BRANCHES, 1), nn.Sigmoid())
        self.instance_classifier = nn.Linear(self.M, 2)

    def forward(self, x):
        x = x.squeeze(0)
        H = self.feature_extractor_part1(x)
        H = H.view(-1, 8 * 2 * 2)
        H = self.feature_extractor_part2(H)
        if self.gated:
            A = self.attention_w(self.attention_V(H) * self.attention_U(H))
        else:
            A = self.attention(H)
        A = torch.transpose(A, 1, 0)
        A = F.softmax(A, dim=1)
        Z = torch.mm(A, H)
        Y_prob = self.classifier(Z)
        Y_hat = torch.ge(Y_prob, 0.5).float()
        return Y_prob, Y_hat, A, H

    def calculate_classification_error(self, X, Y):
        Y = Y.float()
        _, Y_hat, _, _ = self.forward(X)
        return 1.0 - Y_hat.eq(Y).cpu().float().mean().item(), Y_hat

    def calculate_objective(self, X, Y):
        Y = Y.float()
        Y_prob, _, A, H = self.forward(X)
        Y_prob = torch.clamp(Y_prob, min=1e-5, max=1.0 - 1e-5)
        neg_log_likelihood = -1.0 * (Y * torch.log(Y_prob) + (1.0 - Y) * torch.log(1.0 - Y_prob))
        return neg_log_likelihood, A, H

    def instance_loss(self, A, H, k=1):
        # CLAM: the top-k attended instances are pseudo-positive, the bottom-k pseudo-negative
        k = min(k, A.shape[1] // 2)
        if k == 0:
            return H.new_zeros(())
        top = torch.topk(A, k, dim=1)[1][-1]
        bottom = torch.topk(-A, k, dim=1)[1][-1]
        inst = torch.cat([torch.index_select(H, 0, top), torch.index_select(H, 0, bottom)])
        targets = torch.cat([torch.ones(k, dtype=torch.long), torch.zeros(k, dtype=torch.long)])
        return F.cross_entropy(self.instance_classifier(inst), targets)


for gated in (False, True):
    torch.manual_seed(args.seed)
    model = Attention(gated=gated)
    optimizer = optim.Adam(model.parameters(), lr=args.lr * 20, betas=(0.9, 0.999), weight_decay=args.reg)
    for epoch in range(1, args.epochs + 1):
        model.train()
        train_loss = train_error = 0.0
        for batch_idx, (data, label) in enumerate(train_loader):
            bag_label = label[0]
            optimizer.zero_grad()
            loss, A, H = model.calculate_objective(data, bag_label)
            total = loss + 0.3 * model.instance_loss(A, H) if bag_label.item() else loss
            train_loss += loss.data[0][0]
            error, _ = model.calculate_classification_error(data, bag_label)
            train_error += error
            total.backward()
            optimizer.step()
        train_loss /= len(train_loader)
        train_error /= len(train_loader)
        print("{} Epoch: {}, Loss: {:.4f}, Train error: {:.4f}".format(
            "gated" if gated else "plain", epoch, train_loss.cpu().numpy().item(), train_error))
    model.eval()
    test_loss = test_error = 0.0
    with torch.no_grad():
        for batch_idx, (data, label) in enumerate(test_loader):
            bag_label, instance_labels = label[0], label[1]
            loss, attention_weights, _ = model.calculate_objective(data, bag_label)
            test_loss += loss.data[0][0]
            error, predicted_label = model.calculate_classification_error(data, bag_label)
            test_error += error
            if batch_idx < 2:
                bag_level = (bag_label.cpu().data.numpy()[0], int(predicted_label.cpu().data.numpy()[0][0]))
                instance_level = list(zip(instance_labels.numpy()[0].tolist(),
                                          np.round(attention_weights.cpu().data.numpy()[0], decimals=3).tolist()))
                print("True Bag Label, Predicted Bag Label: {}\nTrue Instance Labels, Attention Weights: {}".format(
                    bag_level, instance_level))
    print("Test Set, Loss: {:.4f}, Test error: {:.4f}".format(
        test_loss.cpu().numpy().item() / len(test_loader), test_error / len(test_loader)))
