"""The neural style transfer loop without VGG (gram matrix, Content/Style loss modules, LBFGS closure), autocast bf16 + GradScaler + checkpoint + torch.compile, yunjey's GAN, whole-model torch.save/load, random_split by fractions and a DataLoader with persistent workers."""
import math, os, copy, tempfile
TMP = tempfile.mkdtemp()
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.checkpoint import checkpoint, checkpoint_sequential
from torch.utils.data import Dataset, DataLoader, random_split, get_worker_info
torch.manual_seed(0)
# neural style transfer core (no VGG): gram matrix, ContentLoss/StyleLoss modules, LBFGS closure
def gram_matrix(input):
    a, b, c, d = input.size(); features = input.view(a * b, c * d); G = torch.mm(features, features.t()); return G.div(a * b * c * d)
class ContentLoss(nn.Module):
    def __init__(self, target,):
        super(ContentLoss, self).__init__(); self.target = target.detach()
    def forward(self, input):
        self.loss = F.mse_loss(input, self.target); return input
class StyleLoss(nn.Module):
    def __init__(self, target_feature):
        super(StyleLoss, self).__init__(); self.target = gram_matrix(target_feature).detach()
    def forward(self, input):
        G = gram_matrix(input); self.loss = F.mse_loss(G, self.target); return input
cnn = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(inplace=False), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(inplace=False)).eval()
cnn_normalization_mean = torch.tensor([0.485, 0.456, 0.406]); cnn_normalization_std = torch.tensor([0.229, 0.224, 0.225])
class Normalization(nn.Module):
    def __init__(self, mean, std):
        super(Normalization, self).__init__(); self.mean = torch.tensor(mean).view(-1, 1, 1); self.std = torch.tensor(std).view(-1, 1, 1)
    def forward(self, img): return (img - self.mean) / self.std
style_img = torch.rand(1, 3, 16, 16); content_img = torch.rand(1, 3, 16, 16)
normalization = Normalization(cnn_normalization_mean, cnn_normalization_std)
model = nn.Sequential(normalization); content_losses = []; style_losses = []; i = 0
for layer in cnn.children():
    if isinstance(layer, nn.Conv2d): i += 1; name = 'conv_{}'.format(i)
    elif isinstance(layer, nn.ReLU): name = 'relu_{}'.format(i); layer = nn.ReLU(inplace=False)
    model.add_module(name, layer)
    if name == 'conv_2':
        target = model(content_img).detach(); cl = ContentLoss(target); model.add_module("content_loss_{}".format(i), cl); content_losses.append(cl)
    if name in ('conv_1', 'conv_2'):
        tf = model(style_img).detach(); sl = StyleLoss(tf); model.add_module("style_loss_{}".format(i), sl); style_losses.append(sl)
print(model)
input_img = content_img.clone(); input_img.requires_grad_(True); model.eval(); model.requires_grad_(False)
optimizer = optim.LBFGS([input_img]); run = [0]; first = []
while run[0] <= 20:
    def closure():
        with torch.no_grad(): input_img.clamp_(0, 1)
        optimizer.zero_grad(); model(input_img)
        style_score = sum(sl.loss for sl in style_losses) * 1000000; content_score = sum(cl.loss for cl in content_losses)
        loss = style_score + content_score; loss.backward(); run[0] += 1
        if not first: first.append(loss.item())
        return style_score + content_score
    last = optimizer.step(closure)
with torch.no_grad(): input_img.clamp_(0, 1)
print('style loss went down', last.item() <= first[0], input_img.requires_grad)
# autocast + GradScaler + checkpoint + compile
class Block(nn.Module):
    def __init__(self): super().__init__(); self.l = nn.Linear(16, 16)
    def forward(self, x): return F.gelu(self.l(x))
class Net(nn.Module):
    def __init__(self):
        super().__init__(); self.blocks = nn.ModuleList([Block() for _ in range(3)]); self.head = nn.Linear(16, 4)
    def forward(self, x):
        for b in self.blocks: x = checkpoint(b, x, use_reentrant=False)
        return self.head(x)
net = Net(); compiled = torch.compile(net, mode="reduce-overhead")
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
scaler = torch.amp.GradScaler("cpu", enabled=True)
x = torch.randn(32, 16); y = torch.randint(0, 4, (32,)); ls = []
for step in range(10):
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        out = compiled(x); loss = F.cross_entropy(out, y)
    print(out.dtype, loss.dtype) if step == 0 else None
    opt.zero_grad(set_to_none=True); scaler.scale(loss).backward(); scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0); scaler.step(opt); scaler.update(); ls.append(loss.item())
print('amp loss down', ls[-1] < ls[0], scaler.get_scale(), sorted(scaler.state_dict().keys()))
seq = nn.Sequential(*[nn.Linear(8, 8) for _ in range(4)]); inp = torch.randn(2, 8, requires_grad=True)
o = checkpoint_sequential(seq, 2, inp, use_reentrant=False); o.sum().backward(); print(inp.grad.shape)
# GAN (yunjey)
latent_size, hidden_size, image_size = 8, 32, 16
D = nn.Sequential(nn.Linear(image_size, hidden_size), nn.LeakyReLU(0.2), nn.Linear(hidden_size, hidden_size), nn.LeakyReLU(0.2), nn.Linear(hidden_size, 1), nn.Sigmoid())
G = nn.Sequential(nn.Linear(latent_size, hidden_size), nn.ReLU(), nn.Linear(hidden_size, hidden_size), nn.ReLU(), nn.Linear(hidden_size, image_size), nn.Tanh())
criterion = nn.BCELoss(); d_optimizer = torch.optim.Adam(D.parameters(), lr=0.0002); g_optimizer = torch.optim.Adam(G.parameters(), lr=0.0002)
def denorm(x): out = (x + 1) / 2; return out.clamp(0, 1)
def reset_grad(): d_optimizer.zero_grad(); g_optimizer.zero_grad()
for i in range(3):
    images = torch.rand(8, image_size) * 2 - 1; real_labels = torch.ones(8, 1); fake_labels = torch.zeros(8, 1)
    outputs = D(images); d_loss_real = criterion(outputs, real_labels); real_score = outputs
    z = torch.randn(8, latent_size); fake_images = G(z); outputs = D(fake_images); d_loss_fake = criterion(outputs, fake_labels)
    d_loss = d_loss_real + d_loss_fake; reset_grad(); d_loss.backward(); d_optimizer.step()
    z = torch.randn(8, latent_size); fake_images = G(z); outputs = D(fake_images); g_loss = criterion(outputs, real_labels)
    reset_grad(); g_loss.backward(); g_optimizer.step()
print('D(x): {:.2f}'.format(real_score.mean().item())[:5], denorm(fake_images).shape)
torch.save(G.state_dict(), os.path.join(TMP, 'G.ckpt')); G.load_state_dict(torch.load(os.path.join(TMP, 'G.ckpt'), weights_only=True))
torch.save(G, os.path.join(TMP, 'G_full.pt')); G2 = torch.load(os.path.join(TMP, 'G_full.pt'), weights_only=False); print(type(G2).__name__, len(G2))
# Dataset with workers
class Squares(Dataset):
    def __len__(self): return 20
    def __getitem__(self, i):
        info = get_worker_info(); return {'x': torch.tensor([float(i)]), 'y': i * i, 'w': -1 if info is None else info.id}
train, val = random_split(Squares(), [0.8, 0.2], generator=torch.Generator().manual_seed(42)); print(len(train), len(val))
if __name__ == '__main__':
    dl = DataLoader(train, batch_size=4, shuffle=True, num_workers=2, persistent_workers=True, worker_init_fn=lambda wid: None)
    tot = 0; ws = set()
    for batch in dl: tot += batch['y'].sum().item(); ws.update(batch['w'].tolist())
    print(sorted(batch.keys()), batch['x'].shape, batch['y'].dtype, sorted(ws), tot == sum(i * i for i in train.indices))
