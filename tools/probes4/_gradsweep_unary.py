"""Gradient sweep (float64): unary ops at special values (+-inf, NaN, +-0, kinks), eager vs
torchc.compile, values and gradients. Run: PYTHONPATH=. python tools/probes4/_gradsweep_unary.py"""
import torch, torchc, torch.nn.functional as F, warnings, math
warnings.simplefilter("ignore")
torch.set_default_dtype(torch.float64)
bad = 0
ncomp = 0
def chk(name, fn, *xs):
    global bad
    a = [x.clone().requires_grad_(True) for x in xs]
    b = [x.clone().requires_grad_(True) for x in xs]
    try:
        ya = fn(*a); w = torch.linspace(0.5, 1.5, ya.numel()).reshape(ya.shape); (ya * w).sum().backward()
    except Exception as e:
        print("eager raised", name, e); return
    torchc.reset()
    try:
        yb = torchc.compile(fn)(*b); (yb * w).sum().backward()
    except Exception as e:
        print("RAISE", name, type(e).__name__, str(e)[:200]); bad += 1; return
    def same(p, q):
        if p is None or q is None: return p is None and q is None
        return torch.allclose(p, q, rtol=1e-7, atol=1e-12, equal_nan=True)
    global ncomp; ncomp += torchc._C.stats()["compiles"]
    ok = same(ya, yb) and all(same(p.grad, q.grad) for p, q in zip(a, b))
    if not ok:
        bad += 1
        print("DIFF", name, "\n   x", [x.tolist() for x in xs], "\n   eager", ya.tolist(), [p.grad.tolist() if p.grad is not None else None for p in a], "\n   torchc", yb.tolist(), [q.grad.tolist() if q.grad is not None else None for q in b], torchc._C.stats()["compiles"])
S = torch.tensor([-math.inf, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, math.inf, math.nan])
P = torch.tensor([0.0, 1e-300, 0.5, 1.0, 2.0, math.inf, math.nan])
U = torch.tensor([-1.0, -0.5, 0.0, 0.5, 1.0, math.nan])
unary = {
 "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "reciprocal": torch.reciprocal,
 "sigmoid": torch.sigmoid, "tanh": torch.tanh, "relu": torch.relu, "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
 "silu": F.silu, "sin": torch.sin, "cos": torch.cos, "abs": torch.abs, "neg": torch.neg, "sign": torch.sign, "sgn": torch.sgn,
 "floor": torch.floor, "ceil": torch.ceil, "round": torch.round, "trunc": torch.trunc, "frac": torch.frac,
 "erf": torch.erf, "erfc": torch.erfc, "erfinv": torch.erfinv, "log1p": torch.log1p, "expm1": torch.expm1, "log2": torch.log2, "log10": torch.log10, "exp2": torch.exp2,
 "tan": torch.tan, "atan": torch.atan, "asin": torch.asin, "acos": torch.acos, "asinh": torch.asinh, "acosh": torch.acosh, "atanh": torch.atanh,
 "sinh": torch.sinh, "cosh": torch.cosh, "softplus": F.softplus, "mish": F.mish, "logsigmoid": F.logsigmoid, "softsign": F.softsign,
 "tanhshrink": F.tanhshrink, "square": torch.square, "pow2": lambda x: x ** 2, "pow3": lambda x: x ** 3, "pow05": lambda x: x ** 0.5, "powm1": lambda x: x ** -1,
 "powm2": lambda x: x ** -2, "pow0": lambda x: x ** 0, "pow15": lambda x: x ** 1.5, "rpow2": lambda x: 2 ** x, "rpow0": lambda x: 0.0 ** x,
 "xlogy": lambda x: torch.xlogy(x, x), "sinc": torch.sinc, "logit": torch.logit, "logit_eps": lambda x: torch.logit(x, 1e-6),
 "nan_to_num": torch.nan_to_num, "deg2rad": torch.deg2rad, "lgamma": torch.lgamma, "digamma": torch.digamma, "i0": torch.i0,
 "sigmoid2": lambda x: torch.sigmoid(x) * torch.sigmoid(-x), "celu": F.celu, "softshrink": F.softshrink, "hardshrink": F.hardshrink,
 "threshold": lambda x: F.threshold(x, 0.5, -3.0), "leaky": lambda x: F.leaky_relu(x, 0.2), "rrelu": lambda x: F.rrelu(x, training=False), "prelu": lambda x: F.prelu(x, torch.tensor([0.25])),
 "glu": lambda x: F.glu(torch.stack([x, x.flip(0)], -1)), "clamp_inf": lambda x: x.clamp(min=-math.inf, max=math.inf), "fmod": lambda x: torch.fmod(x, 1.5), "remainder": lambda x: torch.remainder(x, 1.5),
 "float_power": lambda x: torch.float_power(x, 2), "erfcx": torch.special.erfcx, "logaddexp": lambda x: torch.logaddexp(x, x), "logaddexp0": lambda x: torch.logaddexp(x, torch.zeros(())),
 "hypot": lambda x: torch.hypot(x, x), "copysign": lambda x: torch.copysign(x, -x), "nextafter?": lambda x: x * 1, "lerp": lambda x: torch.lerp(x, torch.ones(()), 0.3),
}
for nm, f in unary.items():
    for dom, X in (("S", S), ("P", P), ("U", U)):
        chk(f"{nm}[{dom}]", lambda x, f=f: f(x) * 1, X)
print("bad", bad, "compiles", ncomp)
