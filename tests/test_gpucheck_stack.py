"""The guard value and data pointer slots of hooked frames come from a per-thread stack of
chunks (dynamo_hook/frame_slots.c), not the C stack: nested and recursive compiled frames,
frames with more sources than the default, crossing chunk boundaries, and threads."""
import threading

import torch

import torchc

W = [torch.randn(3) for _ in range(70)]  # 70 global tensors: more sources than the 48 default


def wide(x, n):
    """reads all of W (70 sources) at each level, a graph break per level"""
    if n == 0:
        return x
    for w in W:
        x = x + w * 0.01
    print(end="")  # a graph break: the next level is a frame of its own
    return wide(x, n - 1)


def test_recursion_of_wide_frames_across_chunks():
    torchc.reset()
    cw = torchc.compile(wide)
    x = torch.randn(3)
    for n in (1, 40, 120):  # 120 levels x (70 + 70) slots: several chunks of 2048 slots
        torch.testing.assert_close(cw(x, n), wide(x, n), rtol=1e-5, atol=1e-5)
    ex = torchc.explain(cw)(x, 50)
    torch.testing.assert_close(ex.result, wide(x, 50), rtol=1e-5, atol=1e-5)
    assert ex.graph_count >= 1 and ex.internal_faults == 0


def test_threads_recursing_at_once():
    torchc.reset()
    cw = torchc.compile(wide)
    x = torch.randn(3)
    want = {n: wide(x, n) for n in (5, 30, 90)}
    bad = []

    def work():
        for _ in range(3):
            for n, w in want.items():
                if not torch.allclose(cw(x, n), w, rtol=1e-5, atol=1e-5):
                    bad.append(n)

    ts = [threading.Thread(target=work) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not bad
