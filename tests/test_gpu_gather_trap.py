"""CUDA index checks (inductor_c/codegen/gpu_mem.c gather_off): a gather whose index is read
from data traps when it is out of range (eager's device assert); one computed from positions
only (bilinear interpolation's source rows) is clamped, never trapped: a lane a fused where
masks off (the rows of cat(interpolate(t), u) that come from u) computes it out of range, and
trapping there failed beit's relative position bias (cat of the interpolated table and its 3
extra rows) with 'unspecified launch failure' on the first kernel."""
import re

import pytest
import torch
import torch.nn.functional as F

import torchc


def bias_table(table, n_old, n_new):
    """beit's relative position bias table, interpolated to another window and the 3 extra
    rows put back (transformers BeitRelativePositionBias.forward)"""
    sub = table[: n_old * n_old].reshape(1, n_old, n_old, -1).permute(0, 3, 1, 2)
    sub = F.interpolate(sub, size=(n_new, n_new), mode="bilinear")
    sub = sub.permute(0, 2, 3, 1).reshape(n_new * n_new, -1)
    return torch.cat([sub, table[n_old * n_old:]])


def kernels_with_trap(ptx):
    out = []
    for m in re.finditer(r"\.entry (\w+)\((.*?)\n}\n", ptx, re.S):
        if "trap;" in m.group(2):
            out.append(m.group(1))
    return out


@pytest.mark.parametrize("n_new", [5, 7])
def test_position_only_gather_under_a_cat_has_no_trap(monkeypatch, capfd, tmp_path, n_new):
    monkeypatch.setenv("TORCHC_PTX_PROBE", str(tmp_path))
    table = torch.randn(5 * 5 + 3, 4)
    torchc.reset()
    ex = torchc.explain(bias_table)(table, 5, n_new)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    torch.testing.assert_close(ex.result, bias_table(table, 5, n_new))
    err = capfd.readouterr().err
    assert "torchc ptx probe: ok" in err, err[-2000:]
    ptx = "".join(p.read_text() for p in tmp_path.glob("*.ptx"))
    assert ".entry" in ptx
    assert kernels_with_trap(ptx) == []


def test_gather_by_data_index_keeps_its_trap(monkeypatch, capfd, tmp_path):
    """an index tensor the caller gives is checked in the kernel (eager's device assert)"""
    monkeypatch.setenv("TORCHC_PTX_PROBE", str(tmp_path))
    f = lambda t, i: torch.cat([t[i], t[:2]]) * 2
    t, i = torch.randn(6, 3), torch.tensor([5, 0, 3])
    torchc.reset()
    ex = torchc.explain(f)(t, i)
    assert ex.graph_count == 1, ex.break_reasons
    torch.testing.assert_close(ex.result, f(t, i))
    assert "torchc ptx probe: ok" in capfd.readouterr().err
    ptx = "".join(p.read_text() for p in tmp_path.glob("*.ptx"))
    assert kernels_with_trap(ptx) != []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("n_old,n_new", [(27, 27), (5, 9), (9, 5)])
def test_cuda_interpolated_table_cat(dtype, n_old, n_new):
    table = torch.randn(n_old * n_old + 3, 12, device="cuda", dtype=dtype)
    torchc.reset()
    ex = torchc.explain(bias_table)(table, n_old, n_new)
    torch.cuda.synchronize()
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    torch.testing.assert_close(ex.result, bias_table(table, n_old, n_new))
