"""VQ-VAE the way the zalandoresearch / rosinality implementations write it: a conv encoder,
a VectorQuantizer with distances expanded as |z|^2 + |e|^2 - 2 z.e, argmin encodings one-hot
encoded with scatter_, the commitment loss, the straight-through estimator
(inputs + (quantized - inputs).detach()), perplexity from average code usage, and the EMA
variant updating cluster sizes and embedding sums under no_grad with Laplace smoothing."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class VectorQuantizer(nn.Module):
    def __init__(self, num_embeddings, embedding_dim, commitment_cost):
        super().__init__()
        self._embedding_dim = embedding_dim
        self._num_embeddings = num_embeddings
        self._embedding = nn.Embedding(num_embeddings, embedding_dim)
        self._embedding.weight.data.uniform_(-1 / num_embeddings, 1 / num_embeddings)
        self._commitment_cost = commitment_cost

    def forward(self, inputs):
        inputs = inputs.permute(0, 2, 3, 1).contiguous()
        input_shape = inputs.shape
        flat_input = inputs.view(-1, self._embedding_dim)
        distances = (torch.sum(flat_input ** 2, dim=1, keepdim=True)
                     + torch.sum(self._embedding.weight ** 2, dim=1)
                     - 2 * torch.matmul(flat_input, self._embedding.weight.t()))
        encoding_indices = torch.argmin(distances, dim=1).unsqueeze(1)
        encodings = torch.zeros(encoding_indices.shape[0], self._num_embeddings)
        encodings.scatter_(1, encoding_indices, 1)
        quantized = torch.matmul(encodings, self._embedding.weight).view(input_shape)
        e_latent_loss = F.mse_loss(quantized.detach(), inputs)
        q_latent_loss = F.mse_loss(quantized, inputs.detach())
        loss = q_latent_loss + self._commitment_cost * e_latent_loss
        quantized = inputs + (quantized - inputs).detach()
        avg_probs = torch.mean(encodings, dim=0)
        perplexity = torch.exp(-torch.sum(avg_probs * torch.log(avg_probs + 1e-10)))
        return loss, quantized.permute(0, 3, 1, 2).contiguous(), perplexity, encodings


class VectorQuantizerEMA(nn.Module):
    def __init__(self, num_embeddings, embedding_dim, commitment_cost, decay, epsilon=1e-5):
        super().__init__()
        self._embedding_dim = embedding_dim
        self._num_embeddings = num_embeddings
        self._embedding = nn.Embedding(num_embeddings, embedding_dim)
        self._embedding.weight.data.normal_()
        self._commitment_cost = commitment_cost
        self.register_buffer("_ema_cluster_size", torch.zeros(num_embeddings))
        self._ema_w = nn.Parameter(torch.Tensor(num_embeddings, embedding_dim))
        self._ema_w.data.normal_()
        self._decay, self._epsilon = decay, epsilon

    def forward(self, inputs):
        inputs = inputs.permute(0, 2, 3, 1).contiguous()
        input_shape = inputs.shape
        flat_input = inputs.view(-1, self._embedding_dim)
        distances = torch.cdist(flat_input, self._embedding.weight) ** 2
        encoding_indices = torch.argmin(distances, dim=1).unsqueeze(1)
        encodings = torch.zeros(encoding_indices.shape[0], self._num_embeddings)
        encodings.scatter_(1, encoding_indices, 1)
        quantized = F.embedding(encoding_indices.squeeze(1), self._embedding.weight)
        quantized = quantized.view(input_shape)
        if self.training:
            self._ema_cluster_size = (self._ema_cluster_size * self._decay
                                      + (1 - self._decay) * torch.sum(encodings, 0))
            n = torch.sum(self._ema_cluster_size.data)
            self._ema_cluster_size = ((self._ema_cluster_size + self._epsilon)
                                      / (n + self._num_embeddings * self._epsilon) * n)
            dw = torch.matmul(encodings.t(), flat_input)
            self._ema_w = nn.Parameter(self._ema_w * self._decay + (1 - self._decay) * dw)
            self._embedding.weight = nn.Parameter(
                self._ema_w / self._ema_cluster_size.unsqueeze(1))
        e_latent_loss = F.mse_loss(quantized.detach(), inputs)
        loss = self._commitment_cost * e_latent_loss
        quantized = inputs + (quantized - inputs).detach()
        avg_probs = torch.mean(encodings, dim=0)
        perplexity = torch.exp(-torch.sum(avg_probs * torch.log(avg_probs + 1e-10)))
        return loss, quantized.permute(0, 3, 1, 2).contiguous(), perplexity, encodings


class Model(nn.Module):
    def __init__(self, vq):
        super().__init__()
        self._encoder = nn.Sequential(nn.Conv2d(1, 16, 4, 2, 1), nn.ReLU(),
                                      nn.Conv2d(16, 8, 3, 1, 1))
        self._vq_vae = vq
        self._decoder = nn.Sequential(nn.Conv2d(8, 16, 3, 1, 1), nn.ReLU(),
                                      nn.ConvTranspose2d(16, 1, 4, 2, 1))

    def forward(self, x):
        z = self._encoder(x)
        loss, quantized, perplexity, _ = self._vq_vae(z)
        return loss, self._decoder(quantized), perplexity


data = torch.rand(16, 1, 8, 8)
data_variance = data.var()
for name, vq in (("vq", VectorQuantizer(32, 8, 0.25)),
                 ("ema", VectorQuantizerEMA(32, 8, 0.25, decay=0.9))):
    model = Model(vq)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, amsgrad=False)
    model.train()
    for i in range(12):
        optimizer.zero_grad()
        vq_loss, data_recon, perplexity = model(data)
        recon_error = F.mse_loss(data_recon, data) / data_variance
        loss = recon_error + vq_loss
        loss.backward()
        optimizer.step()
        if i % 4 == 3:
            print(f"{name} {i + 1} recon_error: {recon_error.item():.5f} "
                  f"vq: {vq_loss.item():.6f} perplexity: {perplexity.item():.4f}")
    model.eval()
    with torch.no_grad():
        _, _, _, enc = model._vq_vae(model._encoder(data[:2]))
    print(name, "codes", enc.argmax(1)[:8].tolist(), "used", int((enc.sum(0) > 0).sum()))
