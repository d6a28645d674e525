"""A DDPM on 2-D points (annotated-diffusion's schedules, extract, q_sample, p_sample) and the NLP-from-scratch char-RNN name classifier (unicodeToAscii, lineToTensor, manual SGD, confusion matrix)."""
import math, string, unicodedata, glob, os, random
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0); random.seed(0)
# DDPM on 2-D points
T = 50
betas = torch.linspace(1e-4, 0.02, T); alphas = 1. - betas; alphas_cumprod = torch.cumprod(alphas, axis=0)
alphas_cumprod_prev = F.pad(alphas_cumprod[:-1], (1, 0), value=1.0)
sqrt_recip_alphas = torch.sqrt(1.0 / alphas); sqrt_alphas_cumprod = torch.sqrt(alphas_cumprod); sqrt_one_minus_alphas_cumprod = torch.sqrt(1. - alphas_cumprod)
posterior_variance = betas * (1. - alphas_cumprod_prev) / (1. - alphas_cumprod)
def extract(a, t, x_shape):
    batch_size = t.shape[0]; out = a.gather(-1, t.cpu()); return out.reshape(batch_size, *((1,) * (len(x_shape) - 1))).to(t.device)
def q_sample(x_start, t, noise=None):
    if noise is None: noise = torch.randn_like(x_start)
    return extract(sqrt_alphas_cumprod, t, x_start.shape) * x_start + extract(sqrt_one_minus_alphas_cumprod, t, x_start.shape) * noise
class SinusoidalPositionEmbeddings(nn.Module):
    def __init__(self, dim): super().__init__(); self.dim = dim
    def forward(self, time):
        half_dim = self.dim // 2; embeddings = math.log(10000) / (half_dim - 1)
        embeddings = torch.exp(torch.arange(half_dim, device=time.device) * -embeddings)
        embeddings = time[:, None] * embeddings[None, :]; return torch.cat((embeddings.sin(), embeddings.cos()), dim=-1)
class Denoiser(nn.Module):
    def __init__(self):
        super().__init__(); self.temb = nn.Sequential(SinusoidalPositionEmbeddings(16), nn.Linear(16, 32), nn.SiLU())
        self.net = nn.Sequential(nn.Linear(2 + 32, 64), nn.Mish(), nn.Linear(64, 64), nn.Mish(), nn.Linear(64, 2))
    def forward(self, x, t): return self.net(torch.cat([x, self.temb(t.float())], dim=-1))
model = Denoiser(); opt = torch.optim.Adam(model.parameters(), lr=1e-3)
theta = torch.rand(512) * 2 * math.pi; data = torch.stack([torch.cos(theta), torch.sin(theta)], 1) + 0.05 * torch.randn(512, 2)
losses = []
for step in range(60):
    x0 = data[torch.randint(0, 512, (64,))]; t = torch.randint(0, T, (64,), device=x0.device).long()
    noise = torch.randn_like(x0); x_noisy = q_sample(x0, t, noise); loss = F.smooth_l1_loss(noise, model(x_noisy, t))
    opt.zero_grad(); loss.backward(); opt.step(); losses.append(loss.item())
print('ddpm', sum(losses[-10:]) < sum(losses[:10]))
@torch.no_grad()
def p_sample(model, x, t, t_index):
    betas_t = extract(betas, t, x.shape); sqrt_one_minus_alphas_cumprod_t = extract(sqrt_one_minus_alphas_cumprod, t, x.shape)
    sqrt_recip_alphas_t = extract(sqrt_recip_alphas, t, x.shape)
    model_mean = sqrt_recip_alphas_t * (x - betas_t * model(x, t) / sqrt_one_minus_alphas_cumprod_t)
    if t_index == 0: return model_mean
    posterior_variance_t = extract(posterior_variance, t, x.shape); noise = torch.randn_like(x)
    return model_mean + torch.sqrt(posterior_variance_t) * noise
img = torch.randn(16, 2); imgs = []
for i in reversed(range(0, T)):
    img = p_sample(model, img, torch.full((16,), i, dtype=torch.long), i); imgs.append(img.cpu().numpy())
print(len(imgs), imgs[-1].shape, imgs[-1].dtype, bool(torch.isfinite(img).all()))
# NLP from scratch: char-RNN classification
all_letters = string.ascii_letters + " .,;'"; n_letters = len(all_letters)
def unicodeToAscii(s):
    return ''.join(c for c in unicodedata.normalize('NFD', s) if unicodedata.category(c) != 'Mn' and c in all_letters)
print(unicodeToAscii('Ślusàrski'))
category_lines = {'French': ['Bernard', 'Blanc'], 'Polish': ['Nowak', 'Kowalski'], 'Greek': ['Papadopoulos']}
all_categories = list(category_lines.keys()); n_categories = len(all_categories)
def letterToIndex(letter): return all_letters.find(letter)
def letterToTensor(letter):
    tensor = torch.zeros(1, n_letters); tensor[0][letterToIndex(letter)] = 1; return tensor
def lineToTensor(line):
    tensor = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line): tensor[li][0][letterToIndex(letter)] = 1
    return tensor
print(letterToTensor('J')); print(lineToTensor('Jones').size())
class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(RNN, self).__init__(); self.hidden_size = hidden_size
        self.i2h = nn.Linear(input_size, hidden_size); self.h2h = nn.Linear(hidden_size, hidden_size); self.h2o = nn.Linear(hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)
    def forward(self, input, hidden):
        hidden = F.tanh(self.i2h(input) + self.h2h(hidden)); output = self.h2o(hidden); output = self.softmax(output); return output, hidden
    def initHidden(self): return torch.zeros(1, self.hidden_size)
n_hidden = 128; rnn = RNN(n_letters, n_hidden, n_categories)
input = letterToTensor('A'); hidden = torch.zeros(1, n_hidden); output, next_hidden = rnn(input, hidden); print(output.shape)
def categoryFromOutput(output):
    top_n, top_i = output.topk(1); category_i = top_i[0].item(); return all_categories[category_i], category_i
print(type(categoryFromOutput(output)[1]))
def randomChoice(l): return l[random.randint(0, len(l) - 1)]
def randomTrainingExample():
    category = randomChoice(all_categories); line = randomChoice(category_lines[category])
    category_tensor = torch.tensor([all_categories.index(category)], dtype=torch.long); line_tensor = lineToTensor(line); return category, line, category_tensor, line_tensor
criterion = nn.NLLLoss(); learning_rate = 0.005
def train(category_tensor, line_tensor):
    hidden = rnn.initHidden(); rnn.zero_grad()
    for i in range(line_tensor.size()[0]): output, hidden = rnn(line_tensor[i], hidden)
    loss = criterion(output, category_tensor); loss.backward()
    for p in rnn.parameters(): p.data.add_(p.grad.data, alpha=-learning_rate)
    return output, loss.item()
for it in range(1, 51):
    category, line, category_tensor, line_tensor = randomTrainingExample(); output, loss = train(category_tensor, line_tensor)
confusion = torch.zeros(n_categories, n_categories)
for i in range(10):
    category, line, category_tensor, line_tensor = randomTrainingExample()
    hidden = rnn.initHidden()
    for k in range(line_tensor.size()[0]): output, hidden = rnn(line_tensor[k], hidden)
    guess, guess_i = categoryFromOutput(output); confusion[all_categories.index(category)][guess_i] += 1
for i in range(n_categories): confusion[i] = confusion[i] / confusion[i].sum()
print(confusion.shape, float(confusion.sum()) <= 3.0 + 1e-6 or torch.isnan(confusion).any().item())
with torch.no_grad():
    topv, topi = output.topk(3, 1, True); print(topv.shape, topi.dtype)
