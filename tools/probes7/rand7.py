"""Random ops under torch.manual_seed: eager's values expected (the same generator draws)."""
import torch
import torch.nn.functional as F

from probe2 import scenario


@scenario(exact=True)
def random_ops_seeded(C, R):
    fns = [lambda x: torch.rand_like(x), lambda x: torch.randn_like(x), lambda x: torch.rand(3, 2), lambda x: torch.randn(2, 3, dtype=torch.float64),
           lambda x: torch.randint(0, 10, (5,)), lambda x: torch.randint_like(x, 3, 7), lambda x: torch.randperm(6),
           lambda x: torch.bernoulli(x.sigmoid()), lambda x: x.clone().bernoulli_(0.3), lambda x: torch.multinomial(x.softmax(-1), 2),
           lambda x: torch.multinomial(x.softmax(-1), 5, replacement=True), lambda x: F.dropout(x, 0.5), lambda x: F.dropout(x, 0.5, training=False),
           lambda x: x.clone().uniform_(-2, 2), lambda x: x.clone().normal_(1, 3), lambda x: x.clone().exponential_(),
           lambda x: x.clone().random_(0, 5), lambda x: torch.normal(x, 1.0), lambda x: torch.normal(0.0, x.abs() + 1),
           lambda x: F.dropout2d(x.unsqueeze(0), 0.5), lambda x: F.alpha_dropout(x, 0.3, True), lambda x: x + torch.rand(()),
           lambda x: torch.rand(2, generator=torch.Generator().manual_seed(5)), lambda x: torch.poisson(x.abs()),
           lambda x: x.clone().geometric_(0.3), lambda x: x.clone().log_normal_(), lambda x: x.clone().cauchy_(),
           lambda x: F.gumbel_softmax(x, tau=0.5), lambda x: F.rrelu(x, training=True), lambda x: torch.rand(0), lambda x: F.dropout(x, 1.0),
           lambda x: F.dropout(x, 0.0)]
    for fn in fns:
        g = C(fn)
        torch.manual_seed(3)
        x = torch.linspace(-2, 2, 12).reshape(3, 4)
        R.call(g, x)
        R.call(g, x)   # the generator advanced as in eager
        R(torch.rand(2))


@scenario(exact=True)
def seed_inside_and_state(C, R):
    def f1(x):
        torch.manual_seed(7)
        a = torch.rand(3)
        torch.manual_seed(7)
        return a, torch.rand(3), x + torch.randn(3)
    def f2(x):
        s = torch.get_rng_state()
        a = torch.rand(3)
        torch.set_rng_state(s)
        return a, torch.rand(3)
    def f3(x):
        a = F.dropout(x, 0.5)
        b = F.dropout(x, 0.5)
        return a, b, (a == b).all()
    for fn in (f1, f2, f3):
        g = C(fn)
        R.call(g, torch.ones(3))
        R(torch.rand(2))
