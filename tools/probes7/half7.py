"""16-bit (bf16/f16) results against eager, exactly: ops whose ATen kernels accumulate in
float32 and round once, or keep some step in the 16-bit type. Run directly:
    python tools/probes7/half7.py       (prints each op's mismatch count and max diff)"""
import torch
import torch.nn.functional as F

import torchc


def _img(shape, dt):
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(float(n)).reshape(shape).mul(0.37).sin() * 3).to(dt)


OPS = {
    "linear1d": lambda x: F.interpolate(x.flatten(2), size=11, mode="linear"),
    "linear1d_ac": lambda x: F.interpolate(x.flatten(2), size=11, mode="linear", align_corners=True),
    "nearest": lambda x: F.interpolate(x, scale_factor=2, mode="nearest"),
    "adaptive_avg": lambda x: F.adaptive_avg_pool2d(x, (2, 3)), "adaptive_max": lambda x: F.adaptive_max_pool2d(x, (2, 3)),
    "avg1d": lambda x: F.avg_pool1d(x.flatten(2), 3, 2, 1), "max2d": lambda x: F.max_pool2d(x, 2),
    "lp_pool": lambda x: F.lp_pool2d(x, 2, 2), "layer_norm": lambda x: F.layer_norm(x, x.shape[-1:]),
    "softmax": lambda x: x.softmax(-1), "log_softmax": lambda x: x.log_softmax(1), "logsumexp": lambda x: x.logsumexp(-1),
    "mean": lambda x: x.mean((1, 2)), "var": lambda x: x.var(-1), "std": lambda x: x.std((0, 2)), "sum": lambda x: x.sum(-2),
    "cumsum": lambda x: x.cumsum(-1), "cumprod": lambda x: (x * 0.3).cumprod(-1), "mse": lambda x: F.mse_loss(x, x.flip(-1)),
    "l1": lambda x: F.l1_loss(x, x.flip(-1)), "smooth_l1": lambda x: F.smooth_l1_loss(x, x.flip(-1)),
    "huber": lambda x: F.huber_loss(x, x.flip(-1), delta=0.5), "ce": lambda x: F.cross_entropy(x.flatten(2), torch.zeros(x.shape[0], x.shape[2] * x.shape[3], dtype=torch.long)),
    "nll": lambda x: F.nll_loss(x.log_softmax(1).flatten(2), torch.ones(x.shape[0], x.shape[2] * x.shape[3], dtype=torch.long)),
    "kl": lambda x: F.kl_div(x.log_softmax(-1), x.softmax(-1), reduction="batchmean"), "bce": lambda x: F.binary_cross_entropy(x.sigmoid(), x.flip(-1).sigmoid()),
    "bce_logits": lambda x: F.binary_cross_entropy_with_logits(x, x.flip(-1).sigmoid()), "gelu": lambda x: F.gelu(x),
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": lambda x: F.silu(x), "mish": lambda x: F.mish(x),
    "softplus": lambda x: F.softplus(x, 2.0), "elu": lambda x: F.elu(x), "hardswish": lambda x: F.hardswish(x),
    "logsigmoid": lambda x: F.logsigmoid(x), "dist": lambda x: torch.dist(x, x.flip(-1), 3), "addcdiv": lambda x: torch.addcdiv(x, x, x.flip(-1) + 4, value=0.5),
    "norm_fro": lambda x: x.norm(), "renorm": lambda x: x.renorm(2, 1, 1.0), "batch_norm_eval": lambda x: F.batch_norm(x, torch.zeros(x.shape[1]), torch.ones(x.shape[1]) * 2),
    "instance_norm": lambda x: F.instance_norm(x), "group_norm": lambda x: F.group_norm(x, 1), "local_response": lambda x: F.local_response_norm(x, 2),
    "glu": lambda x: F.glu(x, -1) if x.shape[-1] % 2 == 0 else F.glu(x[..., 1:], -1), "embedding_bag_mean": lambda x: F.embedding_bag(torch.tensor([0, 1, 2, 1]), x.flatten(0, 2), torch.tensor([0, 2]), mode="mean"),
    "prod": lambda x: (x * 0.5 + 1).prod(-1), "trapz": lambda x: torch.trapezoid(x, dim=-1), "logcumsumexp": lambda x: x.logcumsumexp(-1),
    "sdpa": lambda x: F.scaled_dot_product_attention(x, x, x), "lerp_t": lambda x: torch.lerp(x, x.flip(-1), x.sigmoid()),
    "polar_abs": lambda x: torch.hypot(x, x.flip(-1)), "atan2": lambda x: torch.atan2(x, x.flip(-1)), "pow_t": lambda x: x.abs().pow(x.flip(-1)),
}


def main():
    nbad = 0
    for dt in (torch.bfloat16, torch.float16):
        for nm, x in (("contig", _img((2, 3, 4, 6), dt)), ("slice", _img((2, 3, 4, 7), dt)[..., 1:])):
            for k, f in OPS.items():
                torchc.reset()
                try:
                    e = f(x)
                except Exception as ex:   # noqa: BLE001
                    try:
                        torchc.compile(f)(x)
                        print(f"{k:18s} {str(dt)[6:]:8s} {nm}: eager raised {type(ex).__name__}, compiled returned")
                        nbad += 1
                    except Exception:   # noqa: BLE001
                        pass
                    continue
                c = torchc.compile(f)(x)
                ee = e if isinstance(e, tuple) else (e,)
                cc = c if isinstance(c, tuple) else (c,)
                for a, b in zip(ee, cc):
                    if a.dtype != b.dtype or a.shape != b.shape:
                        print(f"{k:18s} {str(dt)[6:]:8s} {nm}: {a.dtype}{tuple(a.shape)} vs {b.dtype}{tuple(b.shape)}")
                        nbad += 1
                        continue
                    d = (a.float() - b.float()).abs()
                    n = int((~((a == b) | (a.isnan() & b.isnan()))).sum())
                    if n:
                        nbad += 1
                        print(f"{k:18s} {str(dt)[6:]:8s} {nm}: {n}/{a.numel()} differ, max {d[d == d].max().item():.3g}")
    print(nbad, "mismatching")


if __name__ == "__main__":
    main()
