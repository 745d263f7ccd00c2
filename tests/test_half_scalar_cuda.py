"""float16/bfloat16 CUDA ops with a Python number or a 0-d tensor: bit-equal to eager. CUDA's
opmath kernels read a Python number of add/sub/mul/div/floor_divide unrounded, and cast a 0-d
CUDA tensor to the half type (measured on an H100, torch 2.11: before the fix in
loops/lower.c half_operand, add/sub/rsub with a number and mul with a 0-d tensor differed in
56-1398 of 4099 elements by 1 ulp; the CPU rounds differently, test_reliability_probes5)."""
import pytest
import torch

import torchc

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

CASES = {
    "mul": lambda x, i: x * 0.1, "rmul": lambda x, i: 0.1 * x, "div": lambda x, i: x / 0.3,
    "rdiv": lambda x, i: 0.3 / x, "add": lambda x, i: x + 0.1, "sub": lambda x, i: x - 0.1,
    "rsub": lambda x, i: 0.1 - x, "eq": lambda x, i: x == 0.1, "mod": lambda x, i: x % 0.1,
    "pow": lambda x, i: x.abs() ** 2.3, "floordiv": lambda x, i: x // 0.3,
    "mul0d": lambda x, i: x * torch.tensor(0.1, device="cuda"),
    "add0d": lambda x, i: x + torch.tensor(0.1, device="cuda"),
    "addint": lambda x, i: x + i, "mulint": lambda x, i: x * i,
    "atan2": lambda x, i: torch.atan2(x, torch.tensor(0.7, device="cuda")),
}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name", sorted(CASES))
def test_half_with_scalar_bit_equal(name, dtype):
    torch.manual_seed(0)
    x = (torch.randn(4099, device="cuda") * 3).to(dtype)
    i = torch.randint(-5, 5, (4099,), device="cuda")
    fn = CASES[name]
    torchc.reset()
    ex = torchc.explain(fn)(x, i)
    want = fn(x, i)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    got = ex.result
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype == torch.bool:
        assert torch.equal(got, want)
    else:
        assert torch.equal(got.nan_to_num(7.0), want.nan_to_num(7.0)), (got.float() - want.float()).abs().max()
