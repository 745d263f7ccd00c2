"""Losses with ignore_index / class weights / label smoothing / every reduction, ctc_loss,
inference and training (grads of the inputs against eager's)."""
import torch
import torch.nn.functional as F

from probe2 import scenario
from probes7._util import each


def _grad(C, R, fn, *xs):
    g = C(fn)
    ins = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in xs]
    try:
        out = g(*ins)
        out.float().sum().backward() if out.requires_grad else None
    except Exception as e:   # noqa: BLE001
        R(type(e).__name__)
        return
    R(out)
    R([x.grad for x in ins])


def _logits(n=4, c=5):
    return torch.arange(float(n * c)).reshape(n, c).mul(0.61).sin() * 2


@scenario(rtol=1e-5, atol=1e-5)
def nll_cross_entropy_variants(C, R):
    w = torch.tensor([1.0, 0.5, 2.0, 0.0, 1.5])
    tgt = torch.tensor([1, -100, 3, 0])
    tgt2 = torch.tensor([2, 2, 4, 4])
    cases = []
    for red in ("mean", "sum", "none"):
        cases += [lambda x, red=red: F.cross_entropy(x, tgt, reduction=red),
                  lambda x, red=red: F.cross_entropy(x, tgt, weight=w, reduction=red),
                  lambda x, red=red: F.cross_entropy(x, tgt2, weight=w, ignore_index=4, reduction=red),
                  lambda x, red=red: F.cross_entropy(x, tgt, label_smoothing=0.2, reduction=red),
                  lambda x, red=red: F.cross_entropy(x, tgt2, weight=w, label_smoothing=0.1, ignore_index=2, reduction=red),
                  lambda x, red=red: F.cross_entropy(x, x.flip(0).softmax(1), reduction=red),
                  lambda x, red=red: F.cross_entropy(x, x.flip(0).softmax(1), label_smoothing=0.3, weight=w, reduction=red),
                  lambda x, red=red: F.nll_loss(x.log_softmax(1), tgt, weight=w, reduction=red),
                  lambda x, red=red: F.nll_loss(x.log_softmax(1), torch.full((4,), -100), reduction=red),   # all ignored: nan mean
                  lambda x, red=red: F.nll_loss(x.reshape(2, 5, 2).log_softmax(1), torch.tensor([[1, -100], [4, 0]]), reduction=red),
                  lambda x, red=red: F.cross_entropy(x.T.reshape(1, 5, 4), tgt.reshape(1, 4), reduction=red)]
    cases += [lambda x: F.cross_entropy(x, torch.tensor([1, 5, 0, 0])),   # target out of range raises
              lambda x: F.cross_entropy(x[0], torch.tensor(2)), lambda x: F.cross_entropy(x[0], x[1].softmax(0)),
              lambda x: F.nll_loss(x, tgt.float()), lambda x: F.cross_entropy(x, tgt.int())]
    for f in cases:
        _grad(C, R, f, _logits())


@scenario(rtol=1e-5, atol=1e-5)
def elementwise_losses(C, R):
    y = torch.tensor([[0.0, 1.0, 1.0, 0.0, 0.5], [1.0, 0.0, 0.25, 1.0, 0.0], [0.0, 0.0, 1.0, 1.0, 1.0], [0.5, 0.5, 0.0, 1.0, 0.0]])
    pw = torch.tensor([1.0, 2.0, 0.5, 3.0, 1.0])
    cases = []
    for red in ("mean", "sum", "none"):
        cases += [lambda x, red=red: F.binary_cross_entropy_with_logits(x, y, pos_weight=pw, reduction=red),
                  lambda x, red=red: F.binary_cross_entropy_with_logits(x, y, weight=pw[:1], reduction=red),
                  lambda x, red=red: F.binary_cross_entropy(x.sigmoid(), y, reduction=red),
                  lambda x, red=red: F.kl_div(x.log_softmax(1), y, reduction=red),
                  lambda x, red=red: F.kl_div(x.log_softmax(1), y.clamp_min(1e-3).log(), reduction=red, log_target=True),
                  lambda x, red=red: F.huber_loss(x, y, reduction=red, delta=0.3),
                  lambda x, red=red: F.smooth_l1_loss(x, y, reduction=red, beta=0.0),
                  lambda x, red=red: F.smooth_l1_loss(x, y, reduction=red, beta=2.0),
                  lambda x, red=red: F.poisson_nll_loss(x, y, reduction=red), lambda x, red=red: F.poisson_nll_loss(x.exp(), y, log_input=False, full=True, reduction=red),
                  lambda x, red=red: F.gaussian_nll_loss(x, y, x.abs() + 0.1, reduction=red),
                  lambda x, red=red: F.gaussian_nll_loss(x, y, torch.ones(4, 1), full=True, reduction=red),
                  lambda x, red=red: F.soft_margin_loss(x, y * 2 - 1, reduction=red),
                  lambda x, red=red: F.multilabel_soft_margin_loss(x, y.round(), reduction=red),
                  lambda x, red=red: F.hinge_embedding_loss(x, (y.round() * 2 - 1), margin=0.5, reduction=red),
                  lambda x, red=red: F.l1_loss(x, y, reduction=red), lambda x, red=red: F.mse_loss(x, y[:1], reduction=red)]
    cases += [lambda x: F.binary_cross_entropy(x.sigmoid(), y * 2),   # target > 1 is fine, input outside [0,1] raises
              lambda x: F.binary_cross_entropy(x, y), lambda x: F.mse_loss(x, y[:, :2]),
              lambda x: F.binary_cross_entropy(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.0])) + x.sum() * 0]
    for f in cases:
        _grad(C, R, f, _logits())


@scenario(rtol=1e-5, atol=1e-5)
def margin_and_pair_losses(C, R):
    t = torch.tensor([1, 0, 4, 2])
    cases = []
    for red in ("mean", "sum", "none"):
        cases += [lambda x, red=red: F.multi_margin_loss(x, t, reduction=red),
                  lambda x, red=red: F.multi_margin_loss(x, t, p=2, margin=0.5, weight=torch.arange(1.0, 6.0), reduction=red),
                  lambda x, red=red: F.multilabel_margin_loss(x, torch.tensor([[1, 3, -1, 0, 0], [0, -1, 2, 2, 2], [4, 3, 2, 1, 0], [-1, 0, 0, 0, 0]]), reduction=red),
                  lambda x, red=red: F.margin_ranking_loss(x[0], x[1], torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0]), margin=0.2, reduction=red),
                  lambda x, red=red: F.cosine_embedding_loss(x[:2], x[2:], torch.tensor([1, -1]), margin=0.1, reduction=red),
                  lambda x, red=red: F.triplet_margin_loss(x[:1], x[1:2], x[2:3], margin=0.5, p=1, swap=True, reduction=red),
                  lambda x, red=red: F.triplet_margin_with_distance_loss(x[:2], x[1:3], x[2:], reduction=red,
                                                                         distance_function=lambda a, b: (a - b).abs().sum(-1)),
                  lambda x, red=red: F.ctc_loss(x.reshape(4, 1, 5).log_softmax(2), torch.tensor([[1, 2]]), torch.tensor([4]), torch.tensor([2]), reduction=red),
                  lambda x, red=red: F.ctc_loss(x.reshape(4, 1, 5).log_softmax(2), torch.tensor([[1, 1, 1]]), torch.tensor([4]), torch.tensor([3]),
                                                reduction=red, zero_infinity=True),
                  lambda x, red=red: F.ctc_loss(x.reshape(4, 1, 5).log_softmax(2), torch.tensor([[1, 1, 1]]), torch.tensor([4]), torch.tensor([3]), reduction=red),
                  lambda x, red=red: F.ctc_loss(x.reshape(2, 2, 5).log_softmax(2), torch.tensor([3, 3, 2]), torch.tensor([2, 1]), torch.tensor([2, 1]),
                                                blank=4, reduction=red)]
    for f in cases:
        _grad(C, R, f, _logits())


@scenario(rtol=1e-5, atol=1e-5)
def loss_modules_in_training_loop(C, R):
    torch.manual_seed(0)
    for crit in (torch.nn.CrossEntropyLoss(ignore_index=2, label_smoothing=0.1), torch.nn.NLLLoss(weight=torch.tensor([1.0, 2.0, 0.5])),
                 torch.nn.MultiMarginLoss(), torch.nn.CrossEntropyLoss(reduction="sum")):
        m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
        if isinstance(crit, torch.nn.NLLLoss):
            m.append(torch.nn.LogSoftmax(1))
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = crit(m(x), y)
            loss.backward()
            opt.step()
            return loss.detach()
        cs = C(step)
        x = torch.linspace(-1, 1, 24).reshape(6, 4)
        y = torch.tensor([0, 1, 2, 2, 1, 0])
        for i in range(3):
            R.call(cs, x * (i + 1), y)
        R(m)
