"""Programs where eager raises: the compiled call must raise the same type."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from probe2 import scenario


@scenario
def inplace_casting_and_broadcast_errors(C, R):
    R.call(C(lambda x: x.add_(1.5)), torch.tensor([1, 2]))
    R.call(C(lambda x: x.mul_(torch.ones(3, 2))), torch.ones(2))
    R.call(C(lambda x: x.copy_(torch.ones(3))), torch.ones(2))
    R.call(C(lambda x: x.clamp_(0.5)), torch.tensor([1, 2]))
    R.call(C(lambda x: x.div_(2)), torch.tensor([1, 2]))
    R.call(C(lambda x: x.sigmoid_()), torch.tensor([1, 2]))
    R.call(C(lambda x: x.masked_fill_(x > 0, 2.5)), torch.tensor([1, 2]))
    R.call(C(lambda x: x.bool().add_(1)), torch.tensor([1, 2]))
    R.call(C(lambda x: x.index_fill_(0, torch.tensor([0]), 1.5)), torch.tensor([1, 2]))


@scenario
def shape_errors(C, R):
    R.call(C(lambda x: x.view(3, 3)), torch.ones(8))
    R.call(C(lambda x: x.t().view(-1)), torch.ones(2, 3))
    R.call(C(lambda x: x.reshape(-1, -1)), torch.ones(4))
    R.call(C(lambda x: torch.cat([x, x.t()])), torch.ones(2, 3))
    R.call(C(lambda x: x @ x), torch.ones(2, 3))
    R.call(C(lambda x: x.expand(2, 3)), torch.ones(2, 2))
    R.call(C(lambda x: x.squeeze(5)), torch.ones(2, 2))
    R.call(C(lambda x: x.permute(0, 0)), torch.ones(2, 2))
    R.call(C(lambda x: x[3]), torch.ones(2, 2))
    R.call(C(lambda x: x[:, torch.tensor([5])]), torch.ones(2, 2))
    R.call(C(lambda x: x.gather(0, torch.tensor([[3]]))), torch.ones(2, 2))
    R.call(C(lambda x: F.linear(x, torch.ones(3, 4))), torch.ones(2, 3))
    R.call(C(lambda x: F.embedding(torch.tensor([5]), x)), torch.ones(2, 2))
    R.call(C(lambda x: F.cross_entropy(x, torch.tensor([3, 0]))), torch.ones(2, 3))
    R.call(C(lambda x: x.split(0)), torch.ones(2, 2))
    R.call(C(lambda x: x.chunk(0)), torch.ones(2, 2))
    R.call(C(lambda x: torch.stack([x, x[:1]])), torch.ones(2, 2))
    R.call(C(lambda x: x.sum(dim=2)), torch.ones(2, 2))
    R.call(C(lambda x: x.softmax(3)), torch.ones(2, 2))
    R.call(C(lambda x: x.topk(3)), torch.ones(2, 2))
    R.call(C(lambda x: x.unflatten(1, (3, -1))), torch.ones(2, 4))
    R.call(C(lambda x: F.pad(x, (5, 5), mode="reflect")), torch.ones(1, 2, 3))
    R.call(C(lambda x: x.narrow(1, 1, 5)), torch.ones(2, 2))
    R.call(C(lambda x: torch.where(x > 0, x, torch.ones(3))), torch.ones(2, 2))


@scenario
def module_call_errors(C, R):
    lin = nn.Linear(3, 2)
    m = C(lin)
    R.call(m, torch.ones(2, 4))
    R.call(m, torch.ones(2, 3, dtype=torch.float64))
    R.call(m, torch.ones(2, 3), torch.ones(1))
    R.call(m)
    conv = C(nn.Conv2d(3, 4, 3))
    R.call(conv, torch.ones(1, 2, 5, 5))
    R.call(conv, torch.ones(1, 3, 2, 2))
    bn = C(nn.BatchNorm1d(3))
    R.call(bn, torch.ones(1, 3))
    lstm = C(nn.LSTM(3, 4))
    R.call(lstm, torch.ones(2, 1, 5))


@scenario
def python_errors(C, R):
    R.call(C(lambda x, d: x + d["missing"]), torch.ones(1), {})
    R.call(C(lambda x, l: x + l[5]), torch.ones(1), [1])
    R.call(C(lambda x: x + None), torch.ones(1))
    R.call(C(lambda x: x + "a"), torch.ones(1))
    R.call(C(lambda x: x.not_a_method()), torch.ones(1))
    R.call(C(lambda x: int(x)), torch.ones(2))
    R.call(C(lambda x: x.item()), torch.ones(2))
    R.call(C(lambda x: 1 / (x.shape[0] - 2)), torch.ones(2))
    R.call(C(lambda x: torch.ones(x.shape[0] - 3)), torch.ones(2))
    R.call(C(lambda x: x.to("nodevice")), torch.ones(2))
    R.call(C(lambda x: x.to(torch.float32, torch.float64)), torch.ones(2))
