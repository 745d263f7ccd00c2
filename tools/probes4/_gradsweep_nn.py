"""Gradient sweep (float64): norms, distances, normalizations, pools at zero rows and ties, eager vs
torchc.compile. Run: PYTHONPATH=. python tools/probes4/_gradsweep_nn.py"""
import torch, torchc, torch.nn.functional as F, warnings, math
exec(open('tools/probes4/_gradsweep_unary.py').read().split("S = torch.tensor")[0])
Z = torch.tensor([[0.0, 0.0, 0.0], [1.0, 2.0, 2.0], [3.0, 3.0, 3.0], [1.0, 2.0, 2.0]])
cases = {
 "norm2_zero_row": lambda x: x.norm(dim=1), "norm_all_zero": lambda x: (x[:1]).norm(), "vecnorm3": lambda x: torch.linalg.vector_norm(x, 3, dim=1),
 "normalize": lambda x: F.normalize(x, dim=1), "cos_sim_zero": lambda x: F.cosine_similarity(x[:2], x[2:]), "cos_sim_self": lambda x: F.cosine_similarity(x, x),
 "pairwise": lambda x: F.pairwise_distance(x[:2], x[2:]), "pairwise_same": lambda x: F.pairwise_distance(x[1:2], x[3:4]), "cdist": lambda x: torch.cdist(x, x),
 "cdist1": lambda x: torch.cdist(x, x, p=1), "pdist": lambda x: F.pdist(x), "layer_norm_const": lambda x: F.layer_norm(x, (3,)), "rms_zero": lambda x: F.rms_norm(x, (3,)),
 "group_norm": lambda x: F.group_norm(x.reshape(1, 4, 3), 2), "instance_norm": lambda x: F.instance_norm(x.reshape(1, 4, 3)),
 "batch_norm_train": lambda x: F.batch_norm(x.t(), None, None, training=True), "std_const": lambda x: x.std(1), "var_mean": lambda x: torch.var_mean(x, 1)[0],
 "softmax_T": lambda x: (x / 0.01).softmax(1), "ce_big": lambda x: F.cross_entropy(x * 1e3, torch.tensor([0, 1, 2, 0]), reduction="none"),
 "logsumexp_big": lambda x: (x * 1e4).logsumexp(1), "sqrt_sum": lambda x: (x ** 2).sum(1).sqrt(), "dist": lambda x: torch.dist(x[1], x[3]),
 "angle": lambda x: torch.angle(x), "hypot0": lambda x: torch.hypot(x, x), "x_over_norm": lambda x: x / x.norm(dim=1, keepdim=True).clamp_min(1e-12),
 "erfinv_edge": lambda x: torch.erfinv(x / 3.0000001), "logit_edge": lambda x: torch.logit(x / 3.0, eps=1e-6), "embedding_renorm": lambda x: F.embedding(torch.tensor([1, 3]), x, max_norm=1.0),
 "cumprod_zero": lambda x: x.cumprod(1), "prod_zero": lambda x: x.prod(1), "prod_two_zero": lambda x: torch.cat([x, torch.zeros(4, 1)], 1).prod(1),
 "silu_T": lambda x: F.silu(x * 100), "interp": lambda x: F.interpolate(x[None], scale_factor=2, mode="linear"), "pad_reflect": lambda x: F.pad(x[None], (2, 2), mode="reflect"),
 "lp_pool": lambda x: F.lp_pool1d(x[None], 2, 3), "avg_pool": lambda x: F.avg_pool1d(x[None], 2), "max_pool": lambda x: F.max_pool1d(x[None], 2, 1),
 "adaptive_max": lambda x: F.adaptive_max_pool1d(x[None], 2), "glu": lambda x: F.glu(torch.cat([x, x], 1), 1),
}
for nm, f in cases.items():
    chk(nm, lambda x, f=f: f(x) * 1, Z)
print("bad", bad, "compiles", ncomp)
