"""The spatial transformer tutorial (affine_grid/grid_sample, MaxPool2d followed by
ReLU(inplace=True), legacy ``size_average``) and the char-RNN classification and generation
tutorials (one-hot names, a Dataset with ``random_split`` by fractions and a seeded
Generator, nn.RNN, ``topk``, a confusion matrix, a hand-written RNN cell fed
``torch.LongTensor`` targets), with ``set_default_device``."""
import string, unicodedata, random, time, math
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
import numpy as np
from torch.utils.data import Dataset, DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.set_default_device(device)
print(f"Using device = {torch.get_default_device()}")

class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)
        self.localization = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=7), nn.MaxPool2d(2, stride=2), nn.ReLU(True),
            nn.Conv2d(8, 10, kernel_size=5), nn.MaxPool2d(2, stride=2), nn.ReLU(True))
        self.fc_loc = nn.Sequential(nn.Linear(10 * 3 * 3, 32), nn.ReLU(True), nn.Linear(32, 3 * 2))
        self.fc_loc[2].weight.data.zero_()
        self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

    def stn(self, x):
        xs = self.localization(x)
        xs = xs.view(-1, 10 * 3 * 3)
        theta = self.fc_loc(xs)
        theta = theta.view(-1, 2, 3)
        grid = F.affine_grid(theta, x.size())
        x = F.grid_sample(x, grid)
        return x

    def forward(self, x):
        x = self.stn(x)
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)

model = Net().to(device)
optimizer = optim.SGD(model.parameters(), lr=0.01)
data = torch.rand(8, 1, 28, 28)
target = torch.tensor([0, 1, 2, 3, 4, 5, 6, 7])
model.train()
optimizer.zero_grad()
output = model(data)
loss = F.nll_loss(output, target)
loss.backward()
optimizer.step()
print(output.shape, loss.dim())
with torch.no_grad():
    model.eval()
    identity = model.stn(data)
    print(torch.allclose(identity, data, atol=1e-2) or "moved", identity.shape)
    test_loss = F.nll_loss(model(data), target, size_average=False).item()
    pred = model(data).max(1, keepdim=True)[1]
    correct = pred.eq(target.view_as(pred)).sum().item()
    print(type(test_loss).__name__, type(correct).__name__)

def convert_image_np(inp):
    inp = inp.numpy().transpose((1, 2, 0))
    mean = np.array([0.485, 0.456, 0.406])
    std = np.array([0.229, 0.224, 0.225])
    inp = std * inp + mean
    inp = np.clip(inp, 0, 1)
    return inp
print(convert_image_np(data[0].repeat(3, 1, 1)).shape)

# char-RNN classification
allowed_characters = string.ascii_letters + " .,;'" + "_"
n_letters = len(allowed_characters)
def unicodeToAscii(s):
    return ''.join(c for c in unicodedata.normalize('NFD', s)
                   if unicodedata.category(c) != 'Mn' and c in allowed_characters)
print(unicodeToAscii('Ślusàrski'))
def letterToIndex(letter):
    if letter not in allowed_characters:
        return allowed_characters.find("_")
    return allowed_characters.find(letter)
def lineToTensor(line):
    tensor = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line):
        tensor[li][0][letterToIndex(letter)] = 1
    return tensor
print(f"The letter 'a' becomes {lineToTensor('a')}")
print(f"The name 'Ahn' becomes {lineToTensor('Ahn').shape}")

class NamesDataset(Dataset):
    def __init__(self):
        self.load_time = time.localtime
        labels_set = set()
        self.data, self.data_tensors, self.labels, self.labels_tensors = [], [], [], []
        names = {"English": ["Smith", "Jones", "Brown", "Taylor"], "French": ["Dubois", "Martin", "Bernard"],
                 "Polish": ["Nowak", "Kowalski"], "Czech": ["Novak", "Svoboda", "Dvorak"]}
        for label, lines in names.items():
            labels_set.add(label)
            for name in lines:
                self.data.append(name)
                self.data_tensors.append(lineToTensor(name))
                self.labels.append(label)
        self.labels_uniq = sorted(labels_set)
        for idx in range(len(self.labels)):
            temp_tensor = torch.tensor([self.labels_uniq.index(self.labels[idx])], dtype=torch.long)
            self.labels_tensors.append(temp_tensor)
    def __len__(self):
        return len(self.data)
    def __getitem__(self, idx):
        return self.labels_tensors[idx], self.data_tensors[idx], self.labels[idx], self.data[idx]

alldata = NamesDataset()
print(f"loaded {len(alldata)} items of data")
print(f"example = {alldata[0][0]} {alldata[0][1].shape} {alldata[0][2:]}")
train_set, test_set = torch.utils.data.random_split(alldata, [.85, .15], generator=torch.Generator(device=device).manual_seed(2024))
print(f"train examples = {len(train_set)}, validation examples = {len(test_set)}")

class CharRNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(CharRNN, self).__init__()
        self.rnn = nn.RNN(input_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)
    def forward(self, line_tensor):
        rnn_out, hidden = self.rnn(line_tensor)
        output = self.h2o(hidden[0])
        output = self.softmax(output)
        return output

n_hidden = 16
rnn = CharRNN(n_letters, n_hidden, len(alldata.labels_uniq))
print(rnn)
def label_from_output(output, output_labels):
    top_n, top_i = output.topk(1)
    label_i = top_i[0].item()
    return output_labels[label_i], label_i
input = lineToTensor('Albert')
output = rnn(input)
print(output.shape, label_from_output(output, alldata.labels_uniq)[0] in alldata.labels_uniq)

def train(rnn, training_data, n_epoch=2, n_batch_size=4, report_every=1, learning_rate=0.2, criterion=nn.NLLLoss()):
    current_loss = 0
    all_losses = []
    rnn.train()
    optimizer = torch.optim.SGD(rnn.parameters(), lr=learning_rate)
    start = time.time()
    for iter in range(1, n_epoch + 1):
        rnn.zero_grad()
        batches = list(range(len(training_data)))
        random.shuffle(batches)
        batches = np.array_split(batches, len(batches) // n_batch_size)
        for idx, batch in enumerate(batches):
            batch_loss = 0
            for i in batch:
                (label_tensor, text_tensor, label, text) = training_data[i]
                output = rnn.forward(text_tensor)
                loss = criterion(output, label_tensor)
                batch_loss += loss
            batch_loss.backward()
            nn.utils.clip_grad_norm_(rnn.parameters(), 3)
            optimizer.step()
            optimizer.zero_grad()
            current_loss += batch_loss.item() / len(batch)
        all_losses.append(current_loss / len(batches))
        current_loss = 0
    return all_losses
all_losses = train(rnn, train_set)
print(len(all_losses), type(all_losses[0]).__name__)
confusion = torch.zeros(len(alldata.labels_uniq), len(alldata.labels_uniq))
rnn.eval()
with torch.no_grad():
    for i in range(len(test_set)):
        (label_tensor, text_tensor, label, text) = test_set[i]
        output = rnn(text_tensor)
        guess, guess_i = label_from_output(output, alldata.labels_uniq)
        label_i = alldata.labels_uniq.index(label)
        confusion[label_i][guess_i] += 1
for i in range(len(alldata.labels_uniq)):
    denom = confusion[i].sum()
    if denom > 0:
        confusion[i] = confusion[i] / denom
print(confusion.sum().item() <= len(alldata.labels_uniq), confusion.cpu().numpy().shape)

# generation (older tutorial): manual RNN cell with torch.cat and dropout
class RNN(nn.Module):
    def __init__(self, n_categories, input_size, hidden_size, output_size):
        super(RNN, self).__init__()
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(n_categories + input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(n_categories + input_size + hidden_size, output_size)
        self.o2o = nn.Linear(hidden_size + output_size, output_size)
        self.dropout = nn.Dropout(0.1)
        self.softmax = nn.LogSoftmax(dim=1)
    def forward(self, category, input, hidden):
        input_combined = torch.cat((category, input, hidden), 1)
        hidden = self.i2h(input_combined)
        output = self.i2o(input_combined)
        output_combined = torch.cat((hidden, output), 1)
        output = self.o2o(output_combined)
        output = self.dropout(output)
        output = self.softmax(output)
        return output, hidden
    def initHidden(self):
        return torch.zeros(1, self.hidden_size)
gen = RNN(4, n_letters, 16, n_letters + 1)
criterion = nn.NLLLoss()
def categoryTensor(i):
    t = torch.zeros(1, 4); t[0][i] = 1; return t
def targetTensor(line):
    letter_indexes = [allowed_characters.find(line[li]) for li in range(1, len(line))]
    letter_indexes.append(n_letters)
    return torch.LongTensor(letter_indexes)
line = "Smith"
target_line_tensor = targetTensor(line)
target_line_tensor.unsqueeze_(-1)
input_line_tensor = lineToTensor(line)
hidden = gen.initHidden()
gen.zero_grad()
loss = torch.Tensor([0])
for i in range(input_line_tensor.size(0)):
    output, hidden = gen(categoryTensor(0), input_line_tensor[i], hidden)
    l = criterion(output, target_line_tensor[i])
    loss += l
loss.backward()
for p in gen.parameters():
    p.data.add_(p.grad.data, alpha=-0.005)
print(loss.shape, loss.item() / input_line_tensor.size(0) > 0, target_line_tensor.shape, target_line_tensor.dtype)
def timeSince(since):
    now = time.time(); s = now - since; m = math.floor(s / 60); s -= m * 60
    return '%dm %ds' % (m, s)
with torch.no_grad():
    category_tensor = categoryTensor(1)
    input = lineToTensor('A')
    hidden = gen.initHidden()
    output_name = 'A'
    for i in range(5):
        output, hidden = gen(category_tensor, input[0], hidden)
        topv, topi = output.topk(1)
        topi = topi[0][0]
        if topi == n_letters:
            break
        letter = allowed_characters[topi]
        output_name += letter
        input = lineToTensor(letter)
    print(type(output_name).__name__, topv.shape, topi.shape, topi.dtype)
