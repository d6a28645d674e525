# From https://github.com/lucidrains/mixture-of-experts (mixture_of_experts/__init__.py), commit 0fb459faf558c8e77b0e018685c64d00571d4fd9, MIT License.
from mixture_of_experts.mixture_of_experts import MoE, HeirarchicalMoE, Experts
