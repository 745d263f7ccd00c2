"""TORCHC_DEBUG dumps (graph, loops, kernels, llvm, ptx) come out whole when compiles run on
several threads at once (a training graph's backward compiles beside its forward, GPU parts on
compile threads): each dump is formatted first and written under one lock. glibc's fprintf to
unbuffered stderr writes a text past 8 KiB in unlocked chunks, so two dumps used to interleave
mid-line (CI stop 42: a graph text read back from stderr had a cut line, 'unknown dtype ''').

Four Python threads compile the same large graph text through torchc._C.graph_to_ptx (which
drops the GIL) with debug=graph,ptx: every graph dump read back equals the text given, and every
PTX dump is one whole module set."""
import re
import threading

import torch

import torchc


def _big_graph_text(monkeypatch, capfd):
    monkeypatch.setenv("TORCHC_DEBUG", "graph")
    capfd.readouterr()

    def f(x, y):
        for i in range(100):  # a long elementwise chain: a graph text well past 8 KiB
            x = torch.sin(x * (i + 1)) + y.cos() * 0.5 - x.exp().clamp(max=3.0)
        return x.sum(-1), x
    torchc.compile(f)(torch.randn(64, 48), torch.randn(48))
    err = capfd.readouterr().err
    monkeypatch.delenv("TORCHC_DEBUG")
    chunks = err.split("=== torchc graph ===\n")
    assert len(chunks) == 2, err[:500]
    text = "".join(ln + "\n" for ln in chunks[1].splitlines() if re.match(r"^(%\d+ = |output \d+ = )", ln))
    assert len(text) > 2 * 8192, len(text)
    return text


def test_concurrent_dumps_are_whole(monkeypatch, capfd):
    text = _big_graph_text(monkeypatch, capfd)
    saved = torchc.config.debug
    torchc.config.debug = "graph,ptx"
    try:
        capfd.readouterr()
        errs, go = [], threading.Barrier(4)

        def work():
            try:
                go.wait()
                for _ in range(3):
                    torchc._C.graph_to_ptx(text, 90)
            except Exception as e:  # noqa: BLE001 -- reported below
                errs.append(e)
        ts = [threading.Thread(target=work) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        err = capfd.readouterr().err
    finally:
        torchc.config.debug = saved
    assert not errs, errs
    pieces = re.split(r"^=== torchc (\w+) ===\n", err, flags=re.M)
    kinds = pieces[1::2]
    assert kinds.count("graph") == 12 and kinds.count("ptx") == 12, kinds
    for kind, body in zip(kinds, pieces[2::2]):
        if kind == "graph":
            assert body == text, (len(body), len(text))
        else:
            assert body.count(".version") >= 1 and body.rstrip().endswith("}"), body[-300:]
