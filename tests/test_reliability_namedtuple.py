"""Named-tuple op results (torch.return_types.*: linalg.qr, eigh, slogdet, svd, max(dim), sort,
kthvalue, topk) across a graph break: the frame resumes with eager's values and types.

A graph break right after such a call (the result in a local, on the value stack mid-expression,
inside a container, returned by an inlined helper, used again in a loop) must hand the resumed
code the same object eager has: torch.return_types.X with the same fields, so attribute access,
indexing, slicing, unpacking, len, isinstance and the type's name all agree afterwards.
"""
import pytest
import torch

import torchc

pytestmark = pytest.mark.allow_fallback  # linalg ops may run eagerly: the resume is the subject


def _spd():
    a = torch.randn(4, 4, generator=torch.Generator().manual_seed(0))
    return a @ a.T + 4 * torch.eye(4)


def _inner(y):
    q, r = torch.linalg.qr(y)
    return q + 1, r


def p_qr_unpack(x):
    q, r = torch.linalg.qr(x)
    print("brk")
    return q * 2, r + 1


def p_eigh_fields(x):
    res = torch.linalg.eigh(x)
    print("brk")
    return res.eigenvalues * 2, res[1], res


def p_max_dim(x):
    res = torch.max(x, dim=1)
    print("brk")
    return res.values + res.indices, res


def p_slogdet(x):
    y = x + 1
    res = torch.linalg.slogdet(y)
    print("brk")
    return res.sign * res.logabsdet, res, type(res).__name__


def p_sort_kept(x):
    res = torch.sort(x, dim=0)
    v = res.values
    print("brk")
    return v + 1, res.indices, res, len(res), isinstance(res, tuple)


def p_svd(x):
    u, s, vh = torch.linalg.svd(x)
    print("brk")
    return (u @ torch.diag(s) @ vh), s + 1


def p_kthvalue(x):
    res = torch.kthvalue(x, 2, 0)
    print("brk")
    return res.values, res[1], res[-1], res[0:1], type(res).__name__


def p_inlined(x):
    y = x * 2
    q, r = _inner(y)
    z = q.sum()
    print("brk")
    return z + r.sum(), y


def p_loop(x):
    out = []
    for i in range(3):
        res = torch.linalg.eigh(x + i)
        out.append(res.eigenvalues)
        print("brk", i)
    return torch.stack(out)


def p_live_tensor(x):
    y = x.exp()
    res = torch.linalg.qr(y)
    w = y + 1
    print("brk")
    return res.Q @ w, res.R, w


def p_in_dict(x):
    y = x.sin()
    d = {"qr": torch.linalg.qr(y), "k": y}
    print("brk")
    return d["qr"][0] + d["k"], d["qr"].R, d


def p_on_stack(x):
    y = x.cos()
    return torch.linalg.qr(y) if print("brk") is None else None


def p_tuple_of(x):
    y = x.cos()
    t = torch.linalg.eigh(y), y * 3
    print("brk")
    return t[0].eigenvectors.abs() + t[1], t[0].eigenvalues


def p_inplace_after(x):
    y = x.cos()
    vals, vecs = torch.linalg.eigh(y)
    vals.add_(1)
    print("brk")
    vecs.mul_(2)
    return vals, vecs, y


def p_star(x):
    r = torch.topk(x * 1, 2)
    print("brk")
    a, b = (*r,)
    return a, b, r.n_fields, r.indices.sum()


def p_item_break(x):
    r = torch.max(x, 0)
    n = r.indices.sum().item()  # a data-dependent break
    return r.values * n, r


PROGRAMS = [v for k, v in sorted(globals().items()) if k.startswith("p_")]


def _same(a, b):
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape, (a, b)
        # eigen/qr vectors: the same LAPACK call either way, so the same signs
        torch.testing.assert_close(b, a, atol=1e-4, rtol=1e-4)
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, dict):
        assert type(a) is type(b) and list(a) == list(b), (a, b)
        for k in a:
            _same(a[k], b[k])
    else:
        assert a == b, (a, b)


@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda f: f.__name__)
def test_resume_after_named_tuple_result(prog, capsys):
    x = _spd()
    want = prog(x.clone())
    eager_out = capsys.readouterr().out
    torchc.reset()
    fn = torchc.compile(prog)
    for _ in range(2):  # the first call compiles, the second runs the cached code
        got = fn(x.clone())
        assert capsys.readouterr().out == eager_out
        _same(want, got)
    ex = torchc.explain(prog)(x.clone())
    assert ex.graph_count >= 1, ex
