"""CUDA check of the pyobj round (issue 21): automatic dynamic ints as 0-d int64 CUDA inputs
(a module step counter, a global counter, an int argument), a raise after a CUDA graph, and
gen.send, each against eager. Prints one line per case and exits 1 on any mismatch.

    python tools/pyobj_cuda_check.py
"""
import copy
import sys

import torch

import torchc

dev = "cuda"
bad = 0


def report(name, ok, extra=""):
    global bad
    bad += not ok
    s = torchc._C.stats()
    print(f"{name}: {'ok' if ok else 'MISMATCH'} compiles={s.get('compiles')} "
          f"fallbacks={s.get('fallbacks', 0) + s.get('limit_fallbacks', 0)} {extra}")


class Stepper(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 8)
        self.step = 0

    def forward(self, x):
        self.step += 1
        return self.lin(x) * self.step - self.step // 3


COUNTER = 0


def bump(x):
    global COUNTER
    COUNTER += 1
    return x + COUNTER * 2


def scale(x, k):
    return x * k + (k - 1) % 4


def main():
    global COUNTER
    torchc.reset()
    m = Stepper().to(dev)
    ref = copy.deepcopy(m)
    cm = torchc.compile(m)
    x = torch.randn(4, 16, device=dev)
    ok = all(torch.allclose(cm(x), ref(x), atol=1e-5) for _ in range(10)) and m.step == ref.step
    report("module step counter (expect compiles=2)", ok)

    torchc.reset()
    COUNTER = 0
    cf = torchc.compile(bump)
    ok = all(torch.equal(cf(x), x + (i + 1) * 2) for i in range(10)) and COUNTER == 10
    report("global counter (expect compiles=2)", ok)

    torchc.reset()
    cf = torchc.compile(scale)
    ok = all(torch.equal(cf(x, k), scale(x, k)) for k in (2, 3, 9, -5, 0, 1 << 40))
    report("int argument (expect compiles=2)", ok)

    torchc.reset()
    xi = torch.arange(8, device=dev, dtype=torch.int32)
    cf = torchc.compile(scale)
    outs = [(cf(xi, k), scale(xi, k)) for k in (2, 3, 4)]
    report("int32 tensor * dynamic int", all(a.dtype == b.dtype and torch.equal(a, b) for a, b in outs))

    torchc.reset()
    log_e, log_c = [], []

    def raising(x, log):
        y = x.sin() + 1
        log.append(float(y.sum()))
        if x.shape[0] == 4:
            raise ValueError("bad rows: %d" % x.shape[0])
        return y

    try:
        raising(x, log_e)
    except ValueError as e:
        want = str(e)
    got = None
    try:
        torchc.compile(raising)(x, log_c)
    except ValueError as e:
        got = str(e)
    report("raise after a CUDA graph", got == want and len(log_c) == 1 and abs(log_c[0] - log_e[0]) < 1e-3)

    torchc.reset()

    def acc():
        total = 0
        while True:
            v = yield total
            total = total + v

    def send(x):
        g = acc()
        next(g)
        a = g.send(x)
        return a + g.send(x * 2)

    report("gen.send", torch.allclose(torchc.compile(send)(x), send(x)))
    return 1 if bad else 0


if __name__ == "__main__":
    if not torch.cuda.is_available():
        print("no CUDA")
        sys.exit(0)
    sys.exit(main())
