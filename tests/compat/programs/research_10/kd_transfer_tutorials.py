"""The PyTorch "Knowledge Distillation" and "Transfer Learning for Computer Vision"
tutorials' programs on synthetic CIFAR-like data: ``DeepNN`` teacher and ``LightNN``
student, ``train_knowledge_distillation`` with temperature soft targets (the sum-of-products
form scaled by ``T**2``), the cosine-loss variant through ``nn.CosineEmbeddingLoss`` on
``avg_pool1d``-matched hidden vectors, the regressor variant matching feature maps with a
``Conv2d`` and ``MSELoss``; then transfer learning: a pretrained backbone saved and loaded,
``train_model`` with ``train``/``val`` phases under ``torch.set_grad_enabled``, ``StepLR``,
the best weights kept by ``copy.deepcopy(model.state_dict())``, the fixed-feature variant with
frozen parameters (``requires_grad = False``) and a new ``fc``; data from an
``IterableDataset`` split across two workers by ``get_worker_info``."""
import copy
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim import lr_scheduler
from torch.utils.data import DataLoader, IterableDataset, TensorDataset, get_worker_info

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(42)
print(f"Using {device} device")

g = torch.Generator().manual_seed(0)
protos = torch.randn(10, 3, 8, 8, generator=g)
ytr = torch.randint(0, 10, (160,), generator=g)
xtr = protos[ytr] + 0.7 * torch.randn(160, 3, 8, 8, generator=g)
yte = torch.randint(0, 10, (60,), generator=g)
xte = protos[yte] + 0.7 * torch.randn(60, 3, 8, 8, generator=g)
train_loader = DataLoader(TensorDataset(xtr, ytr), batch_size=32, shuffle=True,
                          generator=torch.Generator().manual_seed(1))
test_loader = DataLoader(TensorDataset(xte, yte), batch_size=32, shuffle=False)


class DeepNN(nn.Module):
    def __init__(self, num_classes=10):
        super(DeepNN, self).__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 8, kernel_size=3, padding=1), nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(8, 8, kernel_size=3, padding=1), nn.ReLU(),
            nn.Conv2d(8, 4, kernel_size=3, padding=1), nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2))
        self.classifier = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Dropout(0.1),
                                        nn.Linear(64, num_classes))

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


class LightNN(nn.Module):
    def __init__(self, num_classes=10):
        super(LightNN, self).__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 4, kernel_size=3, padding=1), nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(4, 4, kernel_size=3, padding=1), nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2))
        self.classifier = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.1),
                                        nn.Linear(32, num_classes))

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


def train(model, train_loader, epochs, learning_rate, device):
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=learning_rate)
    model.train()
    for epoch in range(epochs):
        running_loss = 0.0
        for inputs, labels in train_loader:
            inputs, labels = inputs.to(device), labels.to(device)
            optimizer.zero_grad()
            outputs = model(inputs)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
        print(f"Epoch {epoch+1}/{epochs}, Loss: {running_loss / len(train_loader)}")


def test(model, test_loader, device):
    model.to(device)
    model.eval()
    correct = 0
    total = 0
    with torch.no_grad():
        for inputs, labels in test_loader:
            inputs, labels = inputs.to(device), labels.to(device)
            outputs = model(inputs)
            _, predicted = torch.max(outputs.data, 1)
            total += labels.size(0)
            correct += (predicted == labels).sum().item()
    accuracy = 100 * correct / total
    print(f"Test Accuracy: {accuracy:.2f}%")
    return accuracy


torch.manual_seed(42)
nn_deep = DeepNN(num_classes=10).to(device)
train(nn_deep, train_loader, epochs=3, learning_rate=0.002, device=device)
test_accuracy_deep = test(nn_deep, test_loader, device)
torch.manual_seed(42)
nn_light = LightNN(num_classes=10).to(device)
torch.manual_seed(42)
new_nn_light = LightNN(num_classes=10).to(device)
print("Norm of 1st layer of nn_light:", torch.norm(nn_light.features[0].weight).item())
print("Norm of 1st layer of new_nn_light:", torch.norm(new_nn_light.features[0].weight).item())
total_params_deep = "{:,}".format(sum(p.numel() for p in nn_deep.parameters()))
print(f"DeepNN parameters: {total_params_deep}")
total_params_light = "{:,}".format(sum(p.numel() for p in nn_light.parameters()))
print(f"LightNN parameters: {total_params_light}")
train(nn_light, train_loader, epochs=3, learning_rate=0.002, device=device)
test_accuracy_light_ce = test(nn_light, test_loader, device)


def train_knowledge_distillation(teacher, student, train_loader, epochs, learning_rate, T,
                                 soft_target_loss_weight, ce_loss_weight, device):
    ce_loss = nn.CrossEntropyLoss()
    optimizer = optim.Adam(student.parameters(), lr=learning_rate)
    teacher.eval()
    student.train()
    for epoch in range(epochs):
        running_loss = 0.0
        for inputs, labels in train_loader:
            inputs, labels = inputs.to(device), labels.to(device)
            optimizer.zero_grad()
            with torch.no_grad():
                teacher_logits = teacher(inputs)
            student_logits = student(inputs)
            soft_targets = nn.functional.softmax(teacher_logits / T, dim=-1)
            soft_prob = nn.functional.log_softmax(student_logits / T, dim=-1)
            soft_targets_loss = torch.sum(soft_targets * (soft_targets.log() - soft_prob)) / \
                soft_prob.size()[0] * (T**2)
            label_loss = ce_loss(student_logits, labels)
            loss = soft_target_loss_weight * soft_targets_loss + ce_loss_weight * label_loss
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
        print(f"Epoch {epoch+1}/{epochs}, Loss: {running_loss / len(train_loader)}")


train_knowledge_distillation(teacher=nn_deep, student=new_nn_light, train_loader=train_loader,
                             epochs=3, learning_rate=0.002, T=2, soft_target_loss_weight=0.25,
                             ce_loss_weight=0.75, device=device)
test_accuracy_light_ce_and_kd = test(new_nn_light, test_loader, device)
print(f"Teacher accuracy: {test_accuracy_deep:.2f}%")
print(f"Student accuracy without teacher: {test_accuracy_light_ce:.2f}%")
print(f"Student accuracy with CE + KD: {test_accuracy_light_ce_and_kd:.2f}%")


class ModifiedDeepNNCosine(DeepNN):
    def forward(self, x):
        x = self.features(x)
        flattened_conv_output = torch.flatten(x, 1)
        x = self.classifier(flattened_conv_output)
        flattened_conv_output_after_pooling = torch.nn.functional.avg_pool1d(
            flattened_conv_output, 2)
        return x, flattened_conv_output_after_pooling


class ModifiedLightNNCosine(LightNN):
    def forward(self, x):
        x = self.features(x)
        flattened_conv_output = torch.flatten(x, 1)
        x = self.classifier(flattened_conv_output)
        return x, flattened_conv_output[:, :8]


torch.manual_seed(42)
modified_nn_deep = ModifiedDeepNNCosine(num_classes=10).to(device)
modified_nn_deep.load_state_dict(nn_deep.state_dict())
print("Norm of 1st layer for deep_nn:", torch.norm(nn_deep.features[0].weight).item())
print("Norm of 1st layer for modified_deep_nn:",
      torch.norm(modified_nn_deep.features[0].weight).item())
torch.manual_seed(42)
modified_nn_light = ModifiedLightNNCosine(num_classes=10).to(device)
sample_input = torch.randn(128, 3, 8, 8).to(device)
logits, hidden_representation = modified_nn_light(sample_input)
print("Student logits shape:", logits.shape)
print("Student hidden representation shape:", hidden_representation.shape)
logits, hidden_representation = modified_nn_deep(sample_input)
print("Teacher logits shape:", logits.shape)
print("Teacher hidden representation shape:", hidden_representation.shape)


def train_cosine_loss(teacher, student, train_loader, epochs, learning_rate,
                      hidden_rep_loss_weight, ce_loss_weight, device):
    ce_loss = nn.CrossEntropyLoss()
    cosine_loss = nn.CosineEmbeddingLoss()
    optimizer = optim.Adam(student.parameters(), lr=learning_rate)
    teacher.to(device)
    student.to(device)
    teacher.eval()
    student.train()
    for epoch in range(epochs):
        running_loss = 0.0
        for inputs, labels in train_loader:
            inputs, labels = inputs.to(device), labels.to(device)
            optimizer.zero_grad()
            with torch.no_grad():
                _, teacher_hidden_representation = teacher(inputs)
            student_logits, student_hidden_representation = student(inputs)
            hidden_rep_loss = cosine_loss(student_hidden_representation,
                                          teacher_hidden_representation,
                                          target=torch.ones(inputs.size(0)).to(device))
            label_loss = ce_loss(student_logits, labels)
            loss = hidden_rep_loss_weight * hidden_rep_loss + ce_loss_weight * label_loss
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
        print(f"Epoch {epoch+1}/{epochs}, Loss: {running_loss / len(train_loader)}")


train_cosine_loss(teacher=modified_nn_deep, student=modified_nn_light,
                  train_loader=train_loader, epochs=2, learning_rate=0.002,
                  hidden_rep_loss_weight=0.25, ce_loss_weight=0.75, device=device)


class ModifiedDeepNNRegressor(DeepNN):
    def forward(self, x):
        x = self.features(x)
        conv_feature_map = x
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x, conv_feature_map


class ModifiedLightNNRegressor(LightNN):
    def __init__(self, num_classes=10):
        super().__init__(num_classes)
        self.regressor = nn.Sequential(nn.Conv2d(4, 4, kernel_size=3, padding=1))

    def forward(self, x):
        x = self.features(x)
        regressor_output = self.regressor(x)
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x, regressor_output


def train_mse_loss(teacher, student, train_loader, epochs, learning_rate, feature_map_weight,
                   ce_loss_weight, device):
    ce_loss = nn.CrossEntropyLoss()
    mse_loss = nn.MSELoss()
    optimizer = optim.Adam(student.parameters(), lr=learning_rate)
    teacher.eval()
    student.train()
    for epoch in range(epochs):
        running_loss = 0.0
        for inputs, labels in train_loader:
            optimizer.zero_grad()
            with torch.no_grad():
                _, teacher_feature_map = teacher(inputs)
            student_logits, regressor_feature_map = student(inputs)
            hidden_rep_loss = mse_loss(regressor_feature_map, teacher_feature_map)
            label_loss = ce_loss(student_logits, labels)
            loss = feature_map_weight * hidden_rep_loss + ce_loss_weight * label_loss
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
        print(f"Epoch {epoch+1}/{epochs}, Loss: {running_loss / len(train_loader)}")


torch.manual_seed(42)
modified_nn_light_reg = ModifiedLightNNRegressor(num_classes=10).to(device)
modified_nn_deep_reg = ModifiedDeepNNRegressor(num_classes=10).to(device)
modified_nn_deep_reg.load_state_dict(nn_deep.state_dict())
train_mse_loss(teacher=modified_nn_deep_reg, student=modified_nn_light_reg,
               train_loader=train_loader, epochs=2, learning_rate=0.002,
               feature_map_weight=0.25, ce_loss_weight=0.75, device=device)
print(modified_nn_light_reg.regressor)

# --- transfer learning: the teacher's features as a "pretrained" backbone
torch.save(nn_deep.state_dict(), "pretrained.pth")


class ShardedStream(IterableDataset):
    """Samples from a tensor, each worker streaming every n-th one."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        for i in range(start, len(self.x), step):
            yield self.x[i], self.y[i]


xa, ya = xtr[:96], (ytr[:96] % 2)
dataloaders = {
    "train": DataLoader(ShardedStream(xa[:64], ya[:64]), batch_size=16, num_workers=2),
    "val": DataLoader(ShardedStream(xa[64:], ya[64:]), batch_size=16, num_workers=2)}
dataset_sizes = {"train": 64, "val": 32}
for phase in ("train", "val"):
    seen = torch.cat([lab for _, lab in dataloaders[phase]])
    print(phase, "stream labels", seen.tolist()[:12], len(seen))


def train_model(model, criterion, optimizer, scheduler, num_epochs=3):
    since = time.time()
    best_model_wts = copy.deepcopy(model.state_dict())
    best_acc = 0.0
    for epoch in range(num_epochs):
        print(f"Epoch {epoch}/{num_epochs - 1}")
        print("-" * 10)
        for phase in ["train", "val"]:
            if phase == "train":
                model.train()
            else:
                model.eval()
            running_loss = 0.0
            running_corrects = 0
            for inputs, labels in dataloaders[phase]:
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    outputs = model(inputs)
                    _, preds = torch.max(outputs, 1)
                    loss = criterion(outputs, labels)
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels.data)
            if phase == "train":
                scheduler.step()
            epoch_loss = running_loss / dataset_sizes[phase]
            epoch_acc = running_corrects.double() / dataset_sizes[phase]
            print(f"{phase} Loss: {epoch_loss:.4f} Acc: {epoch_acc:.4f}")
            if phase == "val" and epoch_acc > best_acc:
                best_acc = epoch_acc
                best_model_wts = copy.deepcopy(model.state_dict())
        print()
    time_elapsed = time.time() - since
    assert time_elapsed >= 0
    print(f"Best val Acc: {best_acc:4f}")
    model.load_state_dict(best_model_wts)
    return model


torch.manual_seed(7)
model_ft = DeepNN()
model_ft.load_state_dict(torch.load("pretrained.pth", weights_only=True))
num_ftrs = model_ft.classifier[3].in_features
model_ft.classifier[3] = nn.Linear(num_ftrs, 2)
criterion = nn.CrossEntropyLoss()
optimizer_ft = optim.SGD(model_ft.parameters(), lr=0.01, momentum=0.9)
exp_lr_scheduler = lr_scheduler.StepLR(optimizer_ft, step_size=2, gamma=0.1)
model_ft = train_model(model_ft, criterion, optimizer_ft, exp_lr_scheduler, num_epochs=3)

model_conv = DeepNN()
model_conv.load_state_dict(torch.load("pretrained.pth", weights_only=True))
for param in model_conv.parameters():
    param.requires_grad = False
model_conv.classifier[3] = nn.Linear(num_ftrs, 2)
optimizer_conv = optim.SGD(model_conv.classifier[3].parameters(), lr=0.01, momentum=0.9)
exp_lr_scheduler = lr_scheduler.StepLR(optimizer_conv, step_size=2, gamma=0.1)
print("trainable", [n for n, p in model_conv.named_parameters() if p.requires_grad])
model_conv = train_model(model_conv, criterion, optimizer_conv, exp_lr_scheduler, num_epochs=2)
print("frozen conv unchanged", torch.equal(model_conv.features[0].weight,
                                           nn_deep.features[0].weight))
