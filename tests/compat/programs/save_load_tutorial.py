"""The "Saving and loading models" tutorial: state_dict printing, whole-model save/load,
general checkpoints, warm starting with ``strict=False``, every ``map_location`` form, and
the TorchScript export (``torch.jit.script(model).save(path)``, ``torch.jit.load``, tracing)
with the script modules' printed forms."""
import os, tempfile
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

class TheModelClass(nn.Module):
    def __init__(self):
        super(TheModelClass, self).__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 5 * 5)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x

model = TheModelClass()
optimizer = optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
print("Model's state_dict:")
for param_tensor in model.state_dict():
    print(param_tensor, "\t", model.state_dict()[param_tensor].size())
print("Optimizer's state_dict:")
for var_name in optimizer.state_dict():
    print(var_name, "\t", optimizer.state_dict()[var_name])

x = torch.ones(2, 3, 32, 32)
model(x).sum().backward()
optimizer.step()
d = tempfile.mkdtemp()
PATH = os.path.join(d, "m.pt")
torch.save(model.state_dict(), PATH)
model2 = TheModelClass()
print(model2.load_state_dict(torch.load(PATH, weights_only=True)))
model2.eval()
print(torch.equal(model(x), model2(x)))
torch.save(model, PATH)
model3 = torch.load(PATH, weights_only=False)
model3.eval()
print(type(model3).__name__, torch.equal(model(x), model3(x)))
epoch, loss = 5, torch.tensor(0.25)
torch.save({
    'epoch': epoch,
    'model_state_dict': model.state_dict(),
    'optimizer_state_dict': optimizer.state_dict(),
    'loss': loss,
}, PATH)
model4 = TheModelClass()
optimizer4 = optim.SGD(model4.parameters(), lr=0.001, momentum=0.9)
checkpoint = torch.load(PATH, weights_only=True)
model4.load_state_dict(checkpoint['model_state_dict'])
optimizer4.load_state_dict(checkpoint['optimizer_state_dict'])
print(checkpoint['epoch'], checkpoint['loss'], optimizer4.state_dict()['param_groups'][0]['lr'])
print(sorted(optimizer4.state_dict()['state'].keys()))
model4.train()
# warmstarting with strict=False
class Bigger(TheModelClass):
    def __init__(self):
        super().__init__()
        self.extra = nn.Linear(10, 2)
res = Bigger().load_state_dict(torch.load(PATH, weights_only=True)['model_state_dict'], strict=False)
print(res)
print(res.missing_keys, res.unexpected_keys)
try:
    Bigger().load_state_dict(torch.load(PATH, weights_only=True)['model_state_dict'])
except RuntimeError as e:
    print(str(e))
# map_location
sd = torch.load(PATH, map_location=torch.device('cpu'), weights_only=True)
sd = torch.load(PATH, map_location='cpu', weights_only=True)
sd = torch.load(PATH, map_location=lambda storage, loc: storage, weights_only=True)
sd = torch.load(PATH, map_location={'cuda:0': 'cpu'}, weights_only=True)
print(sorted(sd))
# TorchScript
model_scripted = torch.jit.script(model)
model_scripted.save(os.path.join(d, 'model_scripted.pt'))
model5 = torch.jit.load(os.path.join(d, 'model_scripted.pt'))
model5.eval()
print(torch.allclose(model5(x), model(x)))
traced = torch.jit.trace(model, x)
traced.save(os.path.join(d, 'traced.pt'))
print(torch.allclose(torch.jit.load(os.path.join(d, 'traced.pt'))(x), model(x)))
print(isinstance(traced, torch.jit.ScriptModule), isinstance(model_scripted, torch.jit.ScriptModule))
print(type(traced).__name__, type(model_scripted).__name__, type(model5).__name__)
print(traced)
print(model_scripted)
print(traced.original_name if hasattr(traced, 'original_name') else None)
print([n for n, _ in traced.named_parameters()][:2], traced.training)
print(sorted(traced.state_dict())[:2])
