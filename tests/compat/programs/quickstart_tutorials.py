"""The PyTorch quickstart, "Build the neural network" and "Optimizing model parameters"
tutorials on synthetic FashionMNIST-shaped data."""
import os
import tempfile

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

class FakeFashion(Dataset):
    def __init__(self, n, train=True, transform=None, target_transform=None):
        rng = np.random.RandomState(0 if train else 1)
        self.images = rng.randint(0, 256, size=(n, 28, 28)).astype(np.uint8)
        self.labels = rng.randint(0, 10, size=n)
        self.transform = transform
        self.target_transform = target_transform
    def __len__(self):
        return len(self.labels)
    def __getitem__(self, idx):
        image, label = self.images[idx], self.labels[idx]
        if self.transform:
            image = self.transform(image)
        if self.target_transform:
            label = self.target_transform(label)
        return image, label

def ToTensor(img):
    return torch.from_numpy(img).unsqueeze(0).float().div(255)

training_data = FakeFashion(96, True, transform=ToTensor)
test_data = FakeFashion(32, False, transform=ToTensor,
                        target_transform=lambda y: torch.zeros(10, dtype=torch.float).scatter_(0, torch.tensor(y), value=1))
labels_map = {0: "T-Shirt", 1: "Trouser", 2: "Pullover", 3: "Dress", 4: "Coat", 5: "Sandal",
              6: "Shirt", 7: "Sneaker", 8: "Bag", 9: "Ankle Boot"}
sample_idx = torch.randint(len(training_data), size=(1,)).item()
img, label = training_data[sample_idx]
print(type(sample_idx).__name__, img.shape, img.squeeze().shape, type(label).__name__, labels_map[int(label)] in labels_map.values())
print(test_data[0][1])
batch_size = 32
train_dataloader = DataLoader(training_data, batch_size=batch_size, shuffle=True)
test_dataloader = DataLoader(FakeFashion(32, False, transform=ToTensor), batch_size=batch_size)
for X, y in test_dataloader:
    print(f"Shape of X [N, C, H, W]: {X.shape}")
    print(f"Shape of y: {y.shape} {y.dtype}")
    break
train_features, train_labels = next(iter(train_dataloader))
print(f"Feature batch shape: {train_features.size()}")
print(f"Labels batch shape: {train_labels.size()}")
device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
print(f"Using {device} device")

class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28*28, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits

model = NeuralNetwork().to(device)
print(model)
for m in model.modules():
    if isinstance(m, nn.Linear):
        nn.init.constant_(m.weight, 0.01)
        nn.init.zeros_(m.bias)
with torch.no_grad():
    model.linear_relu_stack[4].bias.copy_(torch.tensor([0., 1., 0., 3., 0., 0., 2., 0., 0., 0.]))
X = torch.ones(1, 28, 28, device=device)
logits = model(X)
pred_probab = nn.Softmax(dim=1)(logits)
y_pred = pred_probab.argmax(1)
print(f"Predicted class: {y_pred}")
input_image = torch.ones(3, 28, 28)
flat_image = nn.Flatten()(input_image)
print(flat_image.size())
layer1 = nn.Linear(in_features=28*28, out_features=20)
nn.init.constant_(layer1.weight, -0.001); nn.init.constant_(layer1.bias, 0.1)
hidden1 = layer1(flat_image)
print(hidden1.size())
print(f"Before ReLU: {hidden1[:, :4]}\n\n")
hidden1 = nn.ReLU()(hidden1)
print(f"After ReLU: {hidden1[:, :4]}")
print(f"Model structure: {model}\n\n")
for name, param in model.named_parameters():
    print(f"Layer: {name} | Size: {param.size()} | Values : {param[:2, :3] if param.dim() > 1 else param[:2]} \n")

learning_rate = 1e-3
epochs = 2
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)
torch.manual_seed(0)
model = NeuralNetwork().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)

def train_loop(dataloader, model, loss_fn, optimizer):
    size = len(dataloader.dataset)
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        pred = model(X)
        loss = loss_fn(pred, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if batch % 2 == 0:
            loss, current = loss.item(), batch * batch_size + len(X)
            print(f"loss: {'%7s' % type(loss).__name__}  [{current:>5d}/{size:>5d}]")

def test_loop(dataloader, model, loss_fn):
    model.eval()
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    test_loss /= num_batches
    correct /= size
    print(f"Test Error: \n Accuracy: {type(100*correct).__name__}%, Avg loss: {type(test_loss).__name__} \n")

for t in range(epochs):
    print(f"Epoch {t+1}\n-------------------------------")
    train_loop(train_dataloader, model, loss_fn, optimizer)
    test_loop(test_dataloader, model, loss_fn)
print("Done!")
path = os.path.join(tempfile.mkdtemp(), "model.pth")
torch.save(model.state_dict(), path)
model = NeuralNetwork().to(device)
print(model.load_state_dict(torch.load(path, weights_only=True)))
classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
model.eval()
x, y = test_data[0][0], test_data[0][1]
with torch.no_grad():
    x = x.to(device)
    pred = model(x)
    predicted, actual = classes[pred[0].argmax(0)], classes[y.argmax(0)]
    print(f'Predicted: "{predicted in classes}", Actual: "{actual}"')
