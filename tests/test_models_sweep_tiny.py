"""Transformers architectures that benchmarks/sweep_tiny.py builds generically (default config
shrunk by attribute name, inputs by the forward's parameter names) and that this branch made
whole: compiled under torchc.explain in one child process, in this order, each one graph with
no break and outputs equal to eager's (sweep_tiny.run_one's 'whole'). roc_bert after roberta
segfaulted (an index_select on an untaken side of cat read outside its table); xlnet needed
torch.eye and x.to(tensor); aya_vision a ModelOutput passed as **kwargs."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("transformers")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["roberta", "roc_bert", "xlnet", "aya_vision"]


@pytest.fixture(scope="module")
def results():
    code = ("import sys, json; sys.path.insert(0, %r); import sweep_tiny; sweep_tiny.worker(%r, 300)"
            % (os.path.join(ROOT, "benchmarks"), MODELS))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1500,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    got = {}
    for ln in r.stdout.splitlines():
        if ln.startswith("RESULT "):
            row = json.loads(ln[7:])
            got[row["model"]] = row
    return got, r.returncode, r.stderr[-3000:]


@pytest.mark.parametrize("model", MODELS)
def test_sweep_model_whole(results, model):
    got, rc, err = results
    assert model in got, f"no result for {model} (child rc {rc}):\n{err}"
    row = got[model]
    assert row["status"] == "whole", (row["status"], row.get("why") or row.get("error"), row.get("reasons", [])[:6])
    assert row["ops"] > 50, row
