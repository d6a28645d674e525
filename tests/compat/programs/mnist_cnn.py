"""MNIST-style convnet training, after pytorch/examples/mnist (synthetic digits, no download)."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, Dataset


class SyntheticDigits(Dataset):
    """Ten fixed 28x28 prototypes plus noise; label = prototype index."""

    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        protos = torch.rand(10, 1, 28, 28, generator=torch.Generator().manual_seed(123))
        self.targets = torch.randint(0, 10, (n,), generator=g)
        noise = 0.3 * torch.randn(n, 1, 28, 28, generator=g)
        self.data = protos[self.targets] + noise

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, idx):
        img = (self.data[idx] - 0.1307) / 0.3081
        return img, self.targets[idx]


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(2304, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    losses = []
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if batch_idx % args.log_interval == 0 and args.verbose:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))
    return sum(losses) / len(losses)


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)
    return test_loss, correct


def main():
    parser = argparse.ArgumentParser(description='PyTorch MNIST Example')
    parser.add_argument('--batch-size', type=int, default=32, metavar='N')
    parser.add_argument('--test-batch-size', type=int, default=100, metavar='N')
    parser.add_argument('--epochs', type=int, default=2, metavar='N')
    parser.add_argument('--lr', type=float, default=1.0, metavar='LR')
    parser.add_argument('--gamma', type=float, default=0.7, metavar='M')
    parser.add_argument('--no-cuda', action='store_true', default=False)
    parser.add_argument('--seed', type=int, default=1, metavar='S')
    parser.add_argument('--log-interval', type=int, default=10, metavar='N')
    parser.add_argument('--train-size', type=int, default=256)
    parser.add_argument('--verbose', action='store_true', default=False)
    parser.add_argument('--save-model', action='store_true', default=False)
    args = parser.parse_args()
    use_cuda = not args.no_cuda and torch.cuda.is_available()

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if use_cuda else "cpu")
    print(f"device: {device}")

    train_kwargs = {'batch_size': args.batch_size, 'shuffle': True}
    test_kwargs = {'batch_size': args.test_batch_size}
    if use_cuda:
        cuda_kwargs = {'num_workers': 1, 'pin_memory': True}
        train_kwargs.update(cuda_kwargs)
        test_kwargs.update(cuda_kwargs)

    dataset1 = SyntheticDigits(args.train_size, seed=1)
    dataset2 = SyntheticDigits(200, seed=2)
    train_loader = DataLoader(dataset1, **train_kwargs)
    test_loader = DataLoader(dataset2, **test_kwargs)
    img, label = dataset1[0]
    print("sample:", tuple(img.shape), img.dtype, type(label.item()).__name__)

    model = Net().to(device)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"parameters: {n_params}")
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)

    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    first_loss, _ = test(model, device, test_loader)
    history = []
    for epoch in range(1, args.epochs + 1):
        history.append(train(args, model, device, train_loader, optimizer, epoch))
        scheduler.step()
        print(f"epoch {epoch} lr {scheduler.get_last_lr()[0]:.4f}")
    test_loss, correct = test(model, device, test_loader)
    print("test loss decreased:", test_loss < first_loss)
    print("accuracy above chance:", correct / len(test_loader.dataset) > 0.3)

    if args.save_model:
        torch.save(model.state_dict(), "mnist_cnn.pt")
    sd = model.state_dict()
    print(list(sd.keys()))
    print([tuple(v.shape) for v in sd.values()][:4])


if __name__ == '__main__':
    main()
