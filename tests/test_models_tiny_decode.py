"""One generation step of tiny transformers decoders (benchmarks/sweep_tiny.py --decode): a new
token a row, the prefill's Cache passed as cache=/past_key_values= and updated in place. The
step is compiled under torchc.explain in a child process: one graph, no break, the outputs and
the Cache's tensors after the step equal to eager's."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("transformers")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["llama"]


@pytest.fixture(scope="module")
def results():
    code = ("import sys; sys.path.insert(0, %r); import sweep_tiny; sweep_tiny.DECODE = True; "
            "sweep_tiny.PADDED = True; sweep_tiny.worker(%r, 300)" % (os.path.join(ROOT, "benchmarks"), MODELS))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    got = {}
    for ln in r.stdout.splitlines():
        if ln.startswith("RESULT "):
            row = json.loads(ln[7:])
            got[row["model"]] = row
    return got, r.returncode, r.stderr[-3000:]


@pytest.mark.parametrize("model", MODELS)
def test_decode_step_whole(results, model):
    got, rc, err = results
    assert model in got, f"no result for {model} (child rc {rc}):\n{err}"
    row = got[model]
    assert row["status"] == "whole", (row["status"], row.get("why") or row.get("error"), row.get("reasons", [])[:6])
    assert "attention_mask" in row["inputs"], row  # the padded mask, one longer in the step
