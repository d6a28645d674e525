"""Federated learning the way shaoxiongji/federated-learning and the FedProx/FedML
reference code write it: a non-IID split of a dataset over clients by Dirichlet label
proportions (``np.random.dirichlet``), ``Subset`` per client behind a ``DatasetSplit``,
``LocalUpdate`` with deep-copied global weights and local SGD epochs, ``FedAvg`` weighted by
sample counts over ``state_dict``s (BatchNorm's ``num_batches_tracked`` included), the FedProx
proximal term against the frozen global parameters, client sampling with ``np.random.choice``,
a ``torch.save`` of the round history next to the weights, and the server model evaluated
each round."""
import copy
import argparse

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, Subset, TensorDataset


def args_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4, help="rounds of training")
    parser.add_argument("--num_users", type=int, default=6, help="number of users: K")
    parser.add_argument("--frac", type=float, default=0.5, help="the fraction of clients: C")
    parser.add_argument("--local_ep", type=int, default=2, help="the number of local epochs: E")
    parser.add_argument("--local_bs", type=int, default=10, help="local batch size: B")
    parser.add_argument("--lr", type=float, default=0.05, help="learning rate")
    parser.add_argument("--momentum", type=float, default=0.5, help="SGD momentum")
    parser.add_argument("--mu", type=float, default=0.0, help="proximal term (FedProx)")
    parser.add_argument("--alpha", type=float, default=0.5, help="Dirichlet concentration")
    parser.add_argument("--seed", type=int, default=1, help="random seed")
    return parser.parse_args([])


args = args_parser()
args.device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
np.random.seed(args.seed)
torch.manual_seed(args.seed)

n_classes = 5
g = torch.Generator().manual_seed(11)
protos = torch.randn(n_classes, 20, generator=g)
labels = torch.randint(0, n_classes, (360,), generator=g)
feats = protos[labels] + 0.9 * torch.randn(360, 20, generator=g)
dataset_train = TensorDataset(feats[:300], labels[:300])
dataset_test = TensorDataset(feats[300:], labels[300:])


def dirichlet_noniid(targets, num_users, alpha):
    idx_batch = [[] for _ in range(num_users)]
    for k in range(n_classes):
        idx_k = np.where(targets == k)[0]
        np.random.shuffle(idx_k)
        proportions = np.random.dirichlet(np.repeat(alpha, num_users))
        proportions = (np.cumsum(proportions) * len(idx_k)).astype(int)[:-1]
        idx_batch = [idx_j + idx.tolist() for idx_j, idx in
                     zip(idx_batch, np.split(idx_k, proportions))]
    return {i: np.array(sorted(b), dtype="int64") for i, b in enumerate(idx_batch)}


dict_users = dirichlet_noniid(labels[:300].numpy(), args.num_users, args.alpha)
for i in range(args.num_users):
    counts = np.bincount(labels[:300].numpy()[dict_users[i]], minlength=n_classes)
    print(f"user {i}: {len(dict_users[i]):3d} samples, labels {counts.tolist()}")


class DatasetSplit(Dataset):
    def __init__(self, dataset, idxs):
        self.subset = Subset(dataset, [int(i) for i in idxs])

    def __len__(self):
        return len(self.subset)

    def __getitem__(self, item):
        image, label = self.subset[item]
        return image, label


class MLP(nn.Module):
    def __init__(self, dim_in, dim_hidden, dim_out):
        super(MLP, self).__init__()
        self.layer_input = nn.Linear(dim_in, dim_hidden)
        self.bn = nn.BatchNorm1d(dim_hidden)
        self.relu = nn.ReLU()
        self.dropout = nn.Dropout()
        self.layer_hidden = nn.Linear(dim_hidden, dim_out)

    def forward(self, x):
        x = self.layer_input(x)
        x = self.dropout(self.relu(self.bn(x)))
        return self.layer_hidden(x)


class LocalUpdate(object):
    def __init__(self, args, dataset=None, idxs=None, seed=0):
        self.args = args
        self.loss_func = nn.CrossEntropyLoss()
        self.ldr_train = DataLoader(DatasetSplit(dataset, idxs), batch_size=self.args.local_bs,
                                    shuffle=True, generator=torch.Generator().manual_seed(seed))

    def train(self, net):
        global_params = [p.detach().clone() for p in net.parameters()]
        net.train()
        optimizer = torch.optim.SGD(net.parameters(), lr=self.args.lr,
                                    momentum=self.args.momentum)
        epoch_loss = []
        for iter in range(self.args.local_ep):
            batch_loss = []
            for batch_idx, (images, labels) in enumerate(self.ldr_train):
                if len(labels) < 2:  # BatchNorm needs two samples
                    continue
                images, labels = images.to(self.args.device), labels.to(self.args.device)
                net.zero_grad()
                log_probs = net(images)
                loss = self.loss_func(log_probs, labels)
                if self.args.mu > 0:
                    prox = sum(((w - w0) ** 2).sum() for w, w0 in
                               zip(net.parameters(), global_params))
                    loss = loss + self.args.mu / 2 * prox
                loss.backward()
                optimizer.step()
                batch_loss.append(loss.item())
            epoch_loss.append(sum(batch_loss) / max(len(batch_loss), 1))
        return net.state_dict(), sum(epoch_loss) / len(epoch_loss)


def FedAvg(w, weights):
    total = float(sum(weights))
    w_avg = copy.deepcopy(w[0])
    for k in w_avg.keys():
        if w_avg[k].dtype == torch.long:
            w_avg[k] = torch.stack([wi[k] for wi in w]).max()
            continue
        w_avg[k] = w[0][k] * (weights[0] / total)
        for i in range(1, len(w)):
            w_avg[k] += w[i][k] * (weights[i] / total)
    return w_avg


def test_img(net_g, datatest):
    net_g.eval()
    test_loss, correct = 0, 0
    data_loader = DataLoader(datatest, batch_size=16)
    for idx, (data, target) in enumerate(data_loader):
        log_probs = net_g(data)
        test_loss += F.cross_entropy(log_probs, target, reduction="sum").item()
        y_pred = log_probs.data.max(1, keepdim=True)[1]
        correct += y_pred.eq(target.data.view_as(y_pred)).long().cpu().sum()
    test_loss /= len(data_loader.dataset)
    accuracy = 100.00 * correct / len(data_loader.dataset)
    return accuracy, test_loss


def run(mu):
    args.mu = mu
    torch.manual_seed(args.seed)
    np.random.seed(args.seed + 100)
    net_glob = MLP(dim_in=20, dim_hidden=32, dim_out=n_classes).to(args.device)
    if mu == 0.0:
        print(net_glob)
    net_glob.train()
    w_glob = net_glob.state_dict()
    history = []
    for iter in range(args.epochs):
        loss_locals, w_locals, n_locals = [], [], []
        m = max(int(args.frac * args.num_users), 1)
        idxs_users = np.random.choice(range(args.num_users), m, replace=False)
        for idx in idxs_users:
            local = LocalUpdate(args=args, dataset=dataset_train, idxs=dict_users[idx],
                                seed=iter * 100 + int(idx))
            w, loss = local.train(net=copy.deepcopy(net_glob).to(args.device))
            w_locals.append(copy.deepcopy(w))
            loss_locals.append(copy.deepcopy(loss))
            n_locals.append(len(dict_users[idx]))
        w_glob = FedAvg(w_locals, n_locals)
        net_glob.load_state_dict(w_glob)
        loss_avg = sum(loss_locals) / len(loss_locals)
        acc, tl = test_img(net_glob, dataset_test)
        history.append({"round": iter, "users": idxs_users.tolist(), "loss": loss_avg,
                        "acc": acc.item()})
        print("mu {:.2f} Round {:3d}, users {}, Average loss {:.4f}, test acc {:.2f}, "
              "test loss {:.4f}".format(mu, iter, sorted(idxs_users.tolist()), loss_avg,
                                        acc.item(), tl))
    return net_glob, history


net_avg, hist_avg = run(0.0)
net_prox, hist_prox = run(0.1)
torch.save({"fedavg": net_avg.state_dict(), "fedprox": net_prox.state_dict(),
            "history": [hist_avg, hist_prox], "args": vars(args)}, "fed.pt")
ck = torch.load("fed.pt", weights_only=False)
print(ck["args"]["device"], type(ck["args"]["device"]).__name__, ck["history"][1][-1])
print("num_batches_tracked", ck["fedavg"]["bn.num_batches_tracked"],
      ck["fedavg"]["bn.running_var"][:4])
diff = {k: (ck["fedavg"][k].float() - ck["fedprox"][k].float()).norm().item()
        for k in ck["fedavg"]}
print({k: round(v, 4) for k, v in diff.items()})
