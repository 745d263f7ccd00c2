"""Indexing: advanced + basic mixes, negative indices, bool masks, index_put_ accumulate,
index_add/copy/fill, scatter_reduce, gather/take_along_dim, masked ops, out-of-range raises."""
import torch

from probe2 import scenario
from probes7._util import each


def _x(shape=(3, 4, 5), dt=torch.float32):
    n = 1
    for s in shape:
        n *= s
    return torch.arange(n, dtype=torch.float64).reshape(shape).to(dt)


@scenario(exact=True)
def advanced_basic_mixes(C, R):
    i = torch.tensor([2, 0, -1])
    j = torch.tensor([[1], [-2]])
    m = torch.tensor([True, False, True, True])
    fns = [lambda x: x[i], lambda x: x[:, i], lambda x: x[..., i], lambda x: x[i, :, 1:3], lambda x: x[i, 1],
           lambda x: x[1, :, i], lambda x: x[i, :, i], lambda x: x[j, :, i], lambda x: x[:, m], lambda x: x[:, m, 0],
           lambda x: x[0, m], lambda x: x[None, i, ..., None], lambda x: x[i, None, j.flatten()[:1]],
           lambda x: x[-1, -1, -1], lambda x: x[::2, ::-1 if False else 2, i], lambda x: x[x > 30],
           lambda x: x[(x > 30)[:, 0]], lambda x: x[torch.tensor(1)], lambda x: x[torch.tensor([True])],
           lambda x: x[torch.tensor(False)], lambda x: x[[0, 2]], lambda x: x[[[0, 2], [1, 1]]],
           lambda x: x[:, [0, -1], [1, -2]], lambda x: x[i.to(torch.int32)], lambda x: x[i.to(torch.uint8)],
           lambda x: x[torch.tensor([], dtype=torch.int64)], lambda x: x[:, torch.zeros(4, dtype=torch.bool)],
           lambda x: x[torch.tensor([3])], lambda x: x[:, :, torch.tensor([-6])], lambda x: x[5]]
    xs = [_x(), _x().transpose(0, 2).contiguous().transpose(0, 2), _x(dt=torch.int8), _x()[:, :, ::-1] if False else _x().flip(2)]
    each(C, R, fns, xs)


@scenario(exact=True)
def setitem_mixes(C, R):
    def f1(x):
        x = x.clone()
        x[torch.tensor([0, -1]), 1:3] = 7
        return x
    def f2(x):
        x = x.clone()
        x[:, torch.tensor([True, False, True, False])] += 1
        return x
    def f3(x):
        x = x.clone()
        x[x > 10] = x[x > 10] * -1
        return x
    def f4(x):
        x = x.clone()
        x[..., 0] = torch.tensor([1.5, 2.5, 3.5, 4.5]).to(x.dtype)
        return x
    def f5(x):
        x = x.clone()
        x[[0, 0, 1], [1, 1, 2]] = torch.tensor([9.0, 8.0, 7.0]).to(x.dtype)   # duplicate: last wins
        return x
    def f6(x):
        x = x.clone()
        x[1] = 2.7                               # float into int truncates
        return x
    def f7(x):
        x = x.clone()
        x[torch.tensor([[0], [2]]), torch.tensor([1, 3])] = 0
        return x
    def f8(x):
        x = x.clone()
        x[:, 5] = 1                              # raises
        return x
    def f9(x):
        x = x.clone()
        x[torch.tensor([0, 2])] = torch.ones(3, 5)   # shape mismatch raises
        return x
    fns = [f1, f2, f3, f4, f5, f6, f7, f8, f9]
    each(C, R, fns, [_x((3, 4, 5)), _x((3, 4, 5), torch.int32), _x((3, 4, 5)).permute(1, 0, 2).contiguous().permute(1, 0, 2)])


@scenario(exact=True)
def index_put_accumulate(C, R):
    fns = [lambda x, i, v: x.clone().index_put_((i,), v, accumulate=True),
           lambda x, i, v: x.clone().index_put_((i,), v, accumulate=False) if i.dtype == torch.bool or i.unique().numel() == i.numel() else x,
           lambda x, i, v: torch.index_put(x, (i,), v, True),
           lambda x, i, v: x.clone().index_put_((i, i.clamp(max=1) if i.dtype != torch.bool else i), v, accumulate=True)]
    xs = [(_x((4, 2)), torch.tensor([0, 0, 3, -1]), torch.tensor([1.0, 2.0, 3.0, 4.0]).unsqueeze(1)),
          (_x((4, 2), torch.int64), torch.tensor([1, 1, 1]), torch.tensor(5)),
          (_x((4, 2), torch.float16), torch.tensor([2, 2]), torch.tensor([[0.1, 0.2], [0.3, 0.4]], dtype=torch.float16)),
          (_x((4, 2)), torch.tensor([True, False, True, True]), torch.tensor(2.0)),
          (_x((4, 2), torch.bool), torch.tensor([0, 0]), torch.tensor(True)),
          (_x((4, 2)), torch.tensor([0, 5]), torch.tensor(1.0)),      # out of range raises
          (_x((4, 2)), torch.tensor([0, 1]), torch.tensor([1.0, 2.0, 3.0]))]  # bad shape raises
    each(C, R, fns, xs, star=True)


@scenario(exact=True)
def index_add_copy_fill(C, R):
    fns = [lambda x, i: x.index_add(0, i, torch.ones(len(i), x.shape[1], dtype=x.dtype)),
           lambda x, i: x.index_add(-1, i, torch.ones(x.shape[0], len(i), dtype=x.dtype), alpha=2),
           lambda x, i: x.index_copy(0, i.unique(), torch.zeros(i.unique().numel(), x.shape[1], dtype=x.dtype)),
           lambda x, i: x.index_fill(1, i, -3), lambda x, i: x.index_fill(-2, i, 1.5),
           lambda x, i: x.index_fill(0, i, torch.tensor(4)), lambda x, i: x.index_select(1, i),
           lambda x, i: x.index_select(-2, i.flip(0)), lambda x, i: x.index_reduce(0, i, torch.full((len(i), x.shape[1]), 2, dtype=x.dtype), "prod"),
           lambda x, i: x.index_reduce(0, i, torch.full((len(i), x.shape[1]), 2, dtype=x.dtype), "amax", include_self=False),
           lambda x, i: x.index_reduce(0, i, torch.full((len(i), x.shape[1]), 2, dtype=x.dtype), "mean"),
           lambda x, i: x.index_add(0, i, torch.ones(len(i), x.shape[1] + 1, dtype=x.dtype))]  # raises
    xs = [(_x((4, 4)), torch.tensor([0, 2, 2])), (_x((4, 4), torch.int64), torch.tensor([3, -1])),
          (_x((4, 4)).T, torch.tensor([1, 1, 1])), (_x((4, 4), torch.bfloat16), torch.tensor([0, 3])),
          (_x((4, 4)), torch.tensor([], dtype=torch.int64)), (_x((4, 4)), torch.tensor([0, 7]))]
    each(C, R, fns, xs, star=True)


@scenario(exact=True)
def scatter_reduce_modes(C, R):
    fns = []
    for red in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            fns.append(lambda x, i, s, red=red, inc=inc: x.scatter_reduce(1, i, s, red, include_self=inc))
    fns += [lambda x, i, s: x.scatter(1, i, s), lambda x, i, s: x.scatter(1, i, 2.0), lambda x, i, s: x.scatter_add(-1, i, s),
            lambda x, i, s: x.scatter(1, i, s, reduce="multiply"), lambda x, i, s: x.scatter(1, i, s, reduce="add"),
            lambda x, i, s: torch.gather(x, 1, i), lambda x, i, s: torch.take_along_dim(x, i, 1),
            lambda x, i, s: torch.take_along_dim(x, i.flatten()[:1]), lambda x, i, s: x.take(i)]
    xs = [(_x((2, 4)), torch.tensor([[0, 0, 3], [1, 1, 1]]), torch.tensor([[1.0, -2.0, 3.0], [float("nan"), 5.0, -6.0]])),
          (_x((2, 4), torch.int64), torch.tensor([[0, 0, 3], [1, 1, 1]]), torch.tensor([[1, -2, 3], [4, 5, -6]])),
          (_x((2, 4)), torch.tensor([[2], [3]]), torch.ones(2, 5)),       # src bigger than index: fine
          (_x((2, 4)), torch.tensor([[4], [0]]), torch.ones(2, 1)),       # out of range raises
          (_x((2, 4), torch.float16), torch.tensor([[1, 1]]), torch.tensor([[0.3, 0.7]], dtype=torch.float16)),
          (_x((2, 4)), torch.tensor([[1, 0]], dtype=torch.int32), torch.ones(1, 2))]   # int32 index raises
    each(C, R, fns, xs, star=True)


@scenario(exact=True)
def masked_ops(C, R):
    fns = [lambda x, m: x.masked_fill(m, -1), lambda x, m: x.masked_fill(m, float("nan")) if x.is_floating_point() else x,
           lambda x, m: x.masked_fill(m, torch.tensor(3)), lambda x, m: x.masked_select(m),
           lambda x, m: x.masked_scatter(m, torch.arange(100, 100 + x.numel()).to(x.dtype).reshape(x.shape)),
           lambda x, m: torch.where(m, x, 0.5), lambda x, m: torch.where(m), lambda x, m: m.nonzero(),
           lambda x, m: m.nonzero(as_tuple=True), lambda x, m: torch.argwhere(m), lambda x, m: x[m].sum(),
           lambda x, m: x.masked_fill(m, 2.5), lambda x, m: x.masked_fill(m.to(torch.uint8), 1)]
    xs = [(_x((3, 4)), torch.tensor([[True, False, True, False]])), (_x((3, 4), torch.int16), torch.tensor([[True, False, True, False]])),
          (_x((3, 4)).T, torch.ones(4, 3, dtype=torch.bool).tril()), (_x((3, 4)), torch.zeros(3, 4, dtype=torch.bool)),
          (_x((3, 4)), torch.tensor(True)), (_x((3, 4)), torch.ones(2, 4, dtype=torch.bool))]   # bad shape raises
    each(C, R, fns, xs, star=True)


@scenario(exact=True)
def select_narrow_negative(C, R):
    fns = [lambda x: x.select(-1, -1), lambda x: x.narrow(1, -2, 2), lambda x: x.narrow(0, 1, 0),
           lambda x: x.select(0, -4), lambda x: x.narrow(1, 3, 2), lambda x: x[-5:], lambda x: x[:, -100:100],
           lambda x: x[:, 3:1], lambda x: x.diagonal(-1), lambda x: x.diagonal(1, -1, -2), lambda x: x.movedim(-1, 0),
           lambda x: x.unbind(-1), lambda x: x.tensor_split(3, 1), lambda x: x.tensor_split(torch.tensor([1, 3]), -1),
           lambda x: x.tensor_split([0, 0, 4], 1), lambda x: x.split([1, 3], 1), lambda x: x.split([1, 1], 1)]
    each(C, R, fns, [_x((3, 4)), _x((3, 4)).T.contiguous().T, _x((1, 4)).expand(3, 4)])
