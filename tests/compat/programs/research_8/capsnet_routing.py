"""Capsule networks the way the popular PyTorch CapsNet ports (gram-ai/capsule-networks and
its descendants) write them: primary capsules as a conv reshaped into 8-D vectors, the
``squash`` nonlinearity, dynamic routing by agreement over a 5-D prediction tensor with
``softmax`` over routes and iterative logit updates, the margin loss, a reconstruction
decoder masked by the longest capsule (``index_select`` on an identity matrix), class
lengths as probabilities, ``torch.no_grad`` evaluation; trained with ``ExponentialLR``
and the best test accuracy reported with ``state_dict`` snapshots."""
import copy

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd import Variable

torch.manual_seed(2)
NUM_CLASSES = 4
NUM_ROUTING_ITERATIONS = 3
USE_CUDA = torch.cuda.is_available()


def softmax(input, dim=1):
    transposed_input = input.transpose(dim, len(input.size()) - 1)
    softmaxed_output = F.softmax(transposed_input.contiguous().view(-1, transposed_input.size(-1)),
                                 dim=-1)
    return softmaxed_output.view(*transposed_input.size()).transpose(dim, len(input.size()) - 1)


class CapsuleLayer(nn.Module):
    def __init__(self, num_capsules, num_route_nodes, in_channels, out_channels,
                 kernel_size=None, stride=None, num_iterations=NUM_ROUTING_ITERATIONS):
        super(CapsuleLayer, self).__init__()
        self.num_route_nodes = num_route_nodes
        self.num_iterations = num_iterations
        self.num_capsules = num_capsules
        if num_route_nodes != -1:
            self.route_weights = nn.Parameter(
                torch.randn(num_capsules, num_route_nodes, in_channels, out_channels) * 0.1)
        else:
            self.capsules = nn.ModuleList(
                [nn.Conv2d(in_channels, out_channels, kernel_size=kernel_size, stride=stride,
                           padding=0) for _ in range(num_capsules)])

    @staticmethod
    def squash(tensor, dim=-1):
        squared_norm = (tensor ** 2).sum(dim=dim, keepdim=True)
        scale = squared_norm / (1 + squared_norm)
        return scale * tensor / torch.sqrt(squared_norm)

    def forward(self, x):
        if self.num_route_nodes != -1:
            priors = x[None, :, :, None, :] @ self.route_weights[:, None, :, :, :]
            logits = Variable(torch.zeros(*priors.size()))
            if USE_CUDA:
                logits = logits.cuda()
            for i in range(self.num_iterations):
                probs = softmax(logits, dim=2)
                outputs = self.squash((probs * priors).sum(dim=2, keepdim=True))
                if i != self.num_iterations - 1:
                    delta_logits = (priors * outputs).sum(dim=-1, keepdim=True)
                    logits = logits + delta_logits
        else:
            outputs = [capsule(x).view(x.size(0), -1, 1) for capsule in self.capsules]
            outputs = torch.cat(outputs, dim=-1)
            outputs = self.squash(outputs)
        return outputs


class CapsuleNet(nn.Module):
    def __init__(self):
        super(CapsuleNet, self).__init__()
        self.conv1 = nn.Conv2d(in_channels=1, out_channels=16, kernel_size=5, stride=1)
        self.primary_capsules = CapsuleLayer(num_capsules=8, num_route_nodes=-1,
                                             in_channels=16, out_channels=4, kernel_size=5,
                                             stride=2)
        self.digit_capsules = CapsuleLayer(num_capsules=NUM_CLASSES, num_route_nodes=4 * 2 * 2,
                                           in_channels=8, out_channels=8)
        self.decoder = nn.Sequential(
            nn.Linear(8 * NUM_CLASSES, 64), nn.ReLU(inplace=True),
            nn.Linear(64, 128), nn.ReLU(inplace=True),
            nn.Linear(128, 144), nn.Sigmoid())

    def forward(self, x, y=None):
        x = F.relu(self.conv1(x), inplace=True)
        x = self.primary_capsules(x)
        x = self.digit_capsules(x).squeeze().transpose(0, 1)
        classes = (x ** 2).sum(dim=-1) ** 0.5
        classes = F.softmax(classes, dim=-1)
        if y is None:
            # In all batches, get the most active capsule.
            _, max_length_indices = classes.max(dim=1)
            y = Variable(torch.eye(NUM_CLASSES)).index_select(dim=0,
                                                              index=max_length_indices.data)
        reconstructions = self.decoder((x * y[:, :, None]).reshape(x.size(0), -1))
        return classes, reconstructions


class CapsuleLoss(nn.Module):
    def __init__(self):
        super(CapsuleLoss, self).__init__()
        self.reconstruction_loss = nn.MSELoss(reduction="sum")

    def forward(self, images, labels, classes, reconstructions):
        left = F.relu(0.9 - classes, inplace=True) ** 2
        right = F.relu(classes - 0.1, inplace=True) ** 2
        margin_loss = labels * left + 0.5 * (1.0 - labels) * right
        margin_loss = margin_loss.sum()
        assert torch.numel(images) == torch.numel(reconstructions)
        images = images.view(reconstructions.size()[0], -1)
        reconstruction_loss = self.reconstruction_loss(reconstructions, images)
        return (margin_loss + 0.0005 * reconstruction_loss) / images.size(0)


def make_batch(n, generator):
    labels = torch.randint(0, NUM_CLASSES, (n,), generator=generator)
    images = torch.rand(n, 1, 12, 12, generator=generator) * 0.3
    for i, c in enumerate(labels.tolist()):
        r, s = divmod(c, 2)
        images[i, 0, 6 * r: 6 * r + 6, 6 * s: 6 * s + 6] += 0.7
    return images.clamp(0, 1), labels


g = torch.Generator().manual_seed(0)
train = [make_batch(16, g) for _ in range(4)]
test_images, test_labels = make_batch(32, g)

model = CapsuleNet()
print(model.primary_capsules.capsules[0], tuple(model.digit_capsules.route_weights.shape))
print("# parameters:", sum(param.numel() for param in model.parameters()))
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
capsule_loss = CapsuleLoss()

x = torch.randn(2, 3, 5)
sq = CapsuleLayer.squash(x)
print("squash norms < 1:", bool((sq.norm(dim=-1) < 1).all()),
      f"{sq.norm(dim=-1)[0, 0].item():.5f}")

best_acc, best_state = 0.0, None
for epoch in range(5):
    model.train()
    for images, labels in train:
        onehot = torch.eye(NUM_CLASSES).index_select(dim=0, index=labels)
        classes, reconstructions = model(images, onehot)
        loss = capsule_loss(images, onehot, classes, reconstructions)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    scheduler.step()
    model.eval()
    with torch.no_grad():
        classes, reconstructions = model(test_images)
        acc = (classes.argmax(1) == test_labels).float().mean().item()
        test_loss = capsule_loss(test_images, torch.eye(NUM_CLASSES)[test_labels], classes,
                                 reconstructions)
    if acc > best_acc:
        best_acc, best_state = acc, copy.deepcopy(model.state_dict())
    print(f"[Epoch {epoch}] train loss {loss.item():.5f} test loss {test_loss.item():.5f} "
          f"acc {acc:.4f} lr {scheduler.get_last_lr()[0]:.6f}")

print(f"best accuracy {best_acc:.4f}", sorted(best_state)[:3])
with torch.no_grad():
    classes, recon = model(test_images[:3])
print("class probabilities:", classes)
print("reconstruction range:", f"{recon.min().item():.4f}", f"{recon.max().item():.4f}")
