import atexit
import os
import random
import shutil
import tempfile

import pytest
import torch

import torchc

# A private on-disk code cache for this test session (runs never see each other's entries).
if "TORCHC_CACHE_DIR" not in os.environ:
    os.environ["TORCHC_CACHE_DIR"] = tempfile.mkdtemp(prefix="torchc-test-cache-")
    atexit.register(shutil.rmtree, os.environ["TORCHC_CACHE_DIR"], True)


@pytest.fixture(autouse=True)
def _fresh():
    torchc.reset()
    # differential tests sweep many shapes through one function: allow the recompiles
    torchc.config.recompile_limit = 1000
    torch.manual_seed(0)
    random.seed(0)
    yield


def assert_same(got, want, rtol=None, atol=None):
    """compiled == eager, recursively, with dtype/shape equality."""
    if isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor), f"expected a tensor, got {type(got)}"
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        assert got.shape == want.shape, (got.shape, want.shape)
        kw = {}
        if rtol is not None:
            kw = dict(rtol=rtol, atol=atol)
        elif want.dtype == torch.float32:
            kw = dict(rtol=2e-5, atol=2e-5)
        torch.testing.assert_close(got, want, equal_nan=True, **kw)
    elif isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w, rtol, atol)
    else:
        assert got == want


def explain_of(fn, *args):
    return torchc.explain(fn)(*args)
