"""yunjey/pytorch-tutorial's basics and intermediate models as written there (autograd basics, linear regression step, logistic regression on fake MNIST, ConvNet, BiRNN, ResNet block, update_lr, LongTensor ids); random data, tiny sizes."""
# yunjey-style basics: logistic regression, feedforward, CNN, bidirectional RNN, ResNet block
import os
import tempfile
import torch
import torch.nn as nn
import torch.nn.functional as F
import numpy as np
torch.manual_seed(0)
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
# basics: autograd
x = torch.tensor(1., requires_grad=True); w = torch.tensor(2., requires_grad=True); b = torch.tensor(3., requires_grad=True)
y = w * x + b; y.backward(); print(x.grad, w.grad, b.grad)
x = torch.randn(10, 3); y = torch.randn(10, 2)
linear = nn.Linear(3, 2); print('w: ', linear.weight.shape); print('b: ', linear.bias.shape)
criterion = nn.MSELoss(); optimizer = torch.optim.SGD(linear.parameters(), lr=0.01)
pred = linear(x); loss = criterion(pred, y); l0 = loss.item()
loss.backward(); optimizer.step()
pred = linear(x); loss = criterion(pred, y); print('loss decreased:', loss.item() < l0)
xn = np.array([[1, 2], [3, 4]]); yt = torch.from_numpy(xn); z = yt.numpy(); print(yt, z.dtype)
# logistic regression on fake mnist
input_size, num_classes, batch_size = 784, 10, 20
data = torch.utils.data.TensorDataset(torch.randn(100, 1, 28, 28), torch.randint(0, 10, (100,)))
loader = torch.utils.data.DataLoader(dataset=data, batch_size=batch_size, shuffle=True)
model = nn.Linear(input_size, num_classes)
optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
for epoch in range(2):
    for i, (images, labels) in enumerate(loader):
        images = images.reshape(-1, input_size)
        outputs = model(images); loss = F.cross_entropy(outputs, labels)
        optimizer.zero_grad(); loss.backward(); optimizer.step()
with torch.no_grad():
    correct = 0; total = 0
    for images, labels in loader:
        outputs = model(images.reshape(-1, input_size)); _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0); correct += (predicted == labels).sum()
print('total', total, type(correct), correct.dtype)
torch.save(model.state_dict(), os.path.join(tempfile.mkdtemp(), 'model.ckpt'))
# CNN
class ConvNet(nn.Module):
    def __init__(self, num_classes=10):
        super(ConvNet, self).__init__()
        self.layer1 = nn.Sequential(nn.Conv2d(1, 16, kernel_size=5, stride=1, padding=2), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(kernel_size=2, stride=2))
        self.layer2 = nn.Sequential(nn.Conv2d(16, 32, kernel_size=5, stride=1, padding=2), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(kernel_size=2, stride=2))
        self.fc = nn.Linear(7*7*32, num_classes)
    def forward(self, x):
        out = self.layer1(x); out = self.layer2(out); out = out.reshape(out.size(0), -1); return self.fc(out)
model = ConvNet(num_classes).to(device); print(model)
out = model(torch.randn(4, 1, 28, 28)); print(out.shape)
model.eval()
# bidirectional RNN
class BiRNN(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super(BiRNN, self).__init__()
        self.hidden_size = hidden_size; self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(hidden_size*2, num_classes)
    def forward(self, x):
        h0 = torch.zeros(self.num_layers*2, x.size(0), self.hidden_size).to(device)
        c0 = torch.zeros(self.num_layers*2, x.size(0), self.hidden_size).to(device)
        out, _ = self.lstm(x, (h0, c0)); return self.fc(out[:, -1, :])
m = BiRNN(28, 16, 2, 10); print(m); print(m(torch.randn(3, 28, 28)).shape)
# ResNet
def conv3x3(in_channels, out_channels, stride=1):
    return nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=stride, padding=1, bias=False)
class ResidualBlock(nn.Module):
    def __init__(self, in_channels, out_channels, stride=1, downsample=None):
        super(ResidualBlock, self).__init__()
        self.conv1 = conv3x3(in_channels, out_channels, stride); self.bn1 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True); self.conv2 = conv3x3(out_channels, out_channels); self.bn2 = nn.BatchNorm2d(out_channels)
        self.downsample = downsample
    def forward(self, x):
        residual = x
        out = self.relu(self.bn1(self.conv1(x))); out = self.bn2(self.conv2(out))
        if self.downsample: residual = self.downsample(x)
        out += residual; return self.relu(out)
blk = ResidualBlock(16, 32, 2, nn.Sequential(conv3x3(16, 32, stride=2), nn.BatchNorm2d(32)))
o = blk(torch.randn(2, 16, 8, 8)); o.sum().backward(); print(o.shape, blk.conv1.weight.grad.shape)
def update_lr(optimizer, lr):
    for param_group in optimizer.param_groups: param_group['lr'] = lr
opt = torch.optim.Adam(blk.parameters(), lr=0.001); update_lr(opt, 0.0005); print(opt)
# language model helpers
ids = torch.LongTensor(30); print(ids.shape, ids.dtype)
def detach(states): return [state.detach() for state in states]
nn.utils.clip_grad_norm_(blk.parameters(), 0.5)
print(np.exp(2.0), torch.multinomial(torch.tensor([0.1, 0.0, 0.9]), num_samples=1).item() in (0, 2))
