"""Gradient sweep (float64): binary ops, losses and reductions at special values, eager vs
torchc.compile. Run: PYTHONPATH=. python tools/probes4/_gradsweep_binary.py"""
import torch, torchc, torch.nn.functional as F, warnings, math
exec(open(__file__.replace('_gradsweep_binary', '_gradsweep_unary')).read().split("S = torch.tensor")[0])
inf, nan = math.inf, math.nan
A = torch.tensor([0.0, 0.0, 1.0, -1.0, 2.0, inf, -inf, inf, nan, 0.0, 3.0, -0.0])
B = torch.tensor([0.0, 1.0, 0.0, 0.0, 2.0, inf, inf, 1.0, 1.0, -2.0, -3.0, 5.0])
binary = {
 "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "pow": torch.pow, "atan2": torch.atan2, "maximum": torch.maximum,
 "minimum": torch.minimum, "fmax": torch.fmax, "fmin": torch.fmin, "hypot": torch.hypot, "xlogy": torch.xlogy, "logaddexp": torch.logaddexp,
 "logaddexp2": torch.logaddexp2, "copysign": torch.copysign, "fmod": torch.fmod, "remainder": torch.remainder, "floor_divide": torch.floor_divide,
 "where_gt": lambda a, b: torch.where(a > b, a, b), "lerp": lambda a, b: torch.lerp(a, b, 0.25), "lerp_t": lambda a, b: torch.lerp(a, b, a.sigmoid()),
 "addcmul": lambda a, b: torch.addcmul(a, a, b, value=0.5), "addcdiv": lambda a, b: torch.addcdiv(a, a, b, value=0.5), "dist_like": lambda a, b: (a - b).abs() ** 2,
 "true_div_floor": lambda a, b: torch.div(a, b, rounding_mode="floor"), "trunc_div": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
 "mse": lambda a, b: F.mse_loss(a, b, reduction="none"), "l1": lambda a, b: F.l1_loss(a, b, reduction="none"), "smoothl1": lambda a, b: F.smooth_l1_loss(a, b, reduction="none"),
 "huber": lambda a, b: F.huber_loss(a, b, reduction="none", delta=2.0), "bce_logits": lambda a, b: F.binary_cross_entropy_with_logits(a, b.sigmoid(), reduction="none"),
 "soft_margin": lambda a, b: F.soft_margin_loss(a, b.sign(), reduction="none"), "poisson": lambda a, b: F.poisson_nll_loss(a, b.abs(), reduction="none"),
 "kl": lambda a, b: F.kl_div(a, b.abs(), reduction="none"), "kl_log": lambda a, b: F.kl_div(a, b, reduction="none", log_target=True),
 "gauss_nll": lambda a, b: F.gaussian_nll_loss(a, b, torch.ones_like(a), reduction="none"),
}
for nm, f in binary.items():
    chk(nm, lambda a, b, f=f: f(a, b) * 1, A, B)
R2 = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [0.0, 0.0, -1.0, 5.0], [-inf, 1.0, inf, 0.0], [nan, 1.0, 2.0, 3.0]])
red = {
 "sum": lambda x: x.sum(1), "mean": lambda x: x.mean(1), "prod": lambda x: x.prod(1), "amax": lambda x: x.amax(1), "amin": lambda x: x.amin(1),
 "max": lambda x: x.max(), "logsumexp": lambda x: x.logsumexp(1), "softmax": lambda x: x.softmax(1), "log_softmax": lambda x: x.log_softmax(1),
 "norm2": lambda x: x.norm(dim=1), "norm1": lambda x: x.norm(p=1, dim=1), "norm3": lambda x: x.norm(p=3, dim=1), "norm0": lambda x: x.norm(p=0, dim=1),
 "norminf": lambda x: x.norm(p=inf, dim=1), "normninf": lambda x: x.norm(p=-inf, dim=1), "vecnorm": lambda x: torch.linalg.vector_norm(x, 2, dim=1),
 "std": lambda x: x.std(1), "var": lambda x: x.var(1), "var0": lambda x: x.var(1, correction=0), "std_mean": lambda x: torch.std_mean(x, 1)[0],
 "cumsum": lambda x: x.cumsum(1), "cumprod": lambda x: x.cumprod(1), "cummax": lambda x: x.cummax(1)[0], "cummin": lambda x: x.cummin(1)[0],
 "logcumsumexp": lambda x: x.logcumsumexp(1), "median": lambda x: x.median(1)[0], "nanmedian": lambda x: x.nanmedian(1)[0], "nansum": lambda x: x.nansum(1),
 "nanmean": lambda x: x.nanmean(1), "kth": lambda x: x.kthvalue(2, 1)[0], "sort": lambda x: x.sort(1)[0], "topk": lambda x: x.topk(2, 1)[0],
 "msort": lambda x: x.msort(), "layer_norm": lambda x: F.layer_norm(x, (4,)), "rms_norm": lambda x: F.rms_norm(x, (4,)), "normalize": lambda x: F.normalize(x, dim=1),
 "max_dim": lambda x: x.max(1)[0], "min_dim": lambda x: x.min(1)[0], "aminmax": lambda x: torch.aminmax(x, dim=1)[0], "quantile": lambda x: x.quantile(0.5, 1),
 "dist": lambda x: torch.cdist(x[:, :2], x[:, 2:]), "cos_sim": lambda x: F.cosine_similarity(x[:, :2], x[:, 2:]), "trace": lambda x: x[:4].trace(),
 "diff": lambda x: x.diff(dim=1), "softmin": lambda x: F.softmin(x, 1), "glu": lambda x: F.glu(x, 1), "renorm": lambda x: x.renorm(2, 0, 1.0),
 "count_nz": lambda x: x * x.count_nonzero(1)[:, None],
}
for nm, f in red.items():
    chk(nm, lambda x, f=f: f(x) * 1, R2)
    chk(nm + "_fin", lambda x, f=f: f(x) * 1, R2[:3])
print("bad", bad, "compiles", ncomp)
