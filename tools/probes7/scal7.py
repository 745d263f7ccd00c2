"""Python numbers out of a small integer tensor's range: eager's checked conversion raises for
some ops and wraps or promotes for others."""
import torch

from probe2 import scenario
from probes7._util import each


@scenario(exact=True)
def out_of_range_scalars(C, R):
    fns = [lambda x: x + 300, lambda x: x - 300, lambda x: x * 1000, lambda x: x + (-1), lambda x: x & 0x1F0, lambda x: x | 256,
           lambda x: x ^ -129, lambda x: x < 300, lambda x: x == -200, lambda x: torch.where(x > 0, x, 300), lambda x: torch.where(x > 0, 300, x),
           lambda x: x.clamp(-300, 300), lambda x: x.clamp(max=1000), lambda x: x.masked_fill(x > 0, 300), lambda x: x.fill_(300) if False else x.clone().fill_(-129),
           lambda x: torch.full_like(x, 300), lambda x: x.new_full((2,), 256), lambda x: x.clone().add_(300), lambda x: x.clone().mul_(2 ** 40),
           lambda x: x.clone().index_fill_(0, torch.tensor([0]), 300), lambda x: torch.add(x, 1, alpha=300), lambda x: x.sub(2, alpha=200),
           lambda x: x.remainder(300), lambda x: x // 300, lambda x: x ** 300, lambda x: x.pow(2 ** 40), lambda x: torch.maximum(x, torch.tensor(300)),
           lambda x: x + 1.5, lambda x: x + 1e40, lambda x: x * float("inf"), lambda x: x.clone().add_(1.5),
           lambda x: x.div(300, rounding_mode="floor"), lambda x: x.fmod(-300), lambda x: x.bitwise_left_shift(300),
           lambda x: torch.where(x > 0, x, 2 ** 70) if False else torch.where(x > 0, x, -2 ** 63)]
    xs = [torch.tensor([1, -2, 3], dtype=torch.int8), torch.tensor([1, 2, 250], dtype=torch.uint8), torch.tensor([1, -2, 3], dtype=torch.int16),
          torch.tensor([True, False, True]), torch.tensor([1, -2, 3], dtype=torch.int32)]
    each(C, R, fns, xs)
