"""Tiny transformers configs (benchmarks/suite.py's transformers table at --tiny sizes) as
differential tests on the CPU: compiled == eager by the dynamo harness rule (allclose, else
RMSE against a float64 reference), and torchc's graph count within what was measured.
Every model here is captured whole (one graph, no break): that is asserted exactly.

Each model runs in a fresh process (transformers keeps process-wide state that a compiled call
changes, e.g. CompileableContextVar, so counts would depend on test order). Models not yet
captured whole carry the count measured with the transformers version in MEASURED_WITH; a
regression (more graphs or breaks) fails, an improvement passes and the count should be
lowered. 0 graphs (a silent fallback) always fails.

    TORCHC_TINY_MEASURE=1 python -m pytest -q -s tests/test_models_tiny.py   # print counts
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

tf = pytest.importorskip("transformers")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MEASURED_WITH = "5.25"
# model -> (graphs, breaks) measured; (1, 0) is whole
EXPECTED = {
    "hf_bart": (1, 0),
    "hf_bert": (1, 0),
    "hf_bloom": (1, 0),
    "hf_gemma": (1, 0),
    "hf_gpt2": (1, 0),
    "hf_gpt_neo": (1, 0),
    "hf_llama": (1, 0),
    "hf_mistral": (1, 0),
    "hf_opt": (1, 0),
    "hf_phi": (1, 0),
    "hf_qwen2": (1, 0),
    "hf_t5": (1, 0),
    "hf_vit": (1, 0),
    "hf_whisper": (1, 0),
}

RUN = textwrap.dedent("""
    import copy, json, sys, torch
    sys.path.insert(0, {bench!r})
    import torchc, suite
    build, make_inputs = suite.hf_models(suite.Scale(tiny=True, batch=2))[{name!r}]
    torch.manual_seed(0)
    model = build().eval()
    inputs = make_inputs("cpu")
    with torch.no_grad():
        fp64 = suite.tensors_of(copy.deepcopy(model).double()(**suite.cast_inputs(inputs, torch.float64)))
        ref = [t.clone() for t in suite.tensors_of(model(**inputs))]
        cm = torchc.compile(model)
        ok1, why1 = suite.same(ref, suite.tensors_of(cm(**inputs)), fp64, 1e-4)
        ex = torchc.explain(cm)(**inputs)
        ok2, why2 = suite.same(ref, suite.tensors_of(ex.result), fp64, 1e-4)
    print("RESULT " + json.dumps(dict(ok=ok1 and ok2, why=why1 or why2, graphs=ex.graph_count,
                                      breaks=ex.graph_break_count, ops=ex.op_count,
                                      reasons=ex.break_reasons[:12])))
""")


def run_tiny(name):
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", RUN.format(bench=os.path.join(ROOT, "benchmarks"), name=name)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_tiny_transformers(name):
    res = run_tiny(name)
    if os.environ.get("TORCHC_TINY_MEASURE"):
        print(f'\n    "{name}": ({res["graphs"]}, {res["breaks"]}),')
    assert res["ok"], res["why"]
    assert res["graphs"] >= 1 and res["ops"] > 0, "nothing compiled"
    graphs, breaks = EXPECTED[name]
    if tf.__version__.startswith(MEASURED_WITH) and not os.environ.get("TORCHC_TINY_MEASURE"):
        assert res["graphs"] <= graphs and res["breaks"] <= breaks, (
            f"{name}: {res['graphs']} graphs / {res['breaks']} breaks, expected at most "
            f"{graphs} / {breaks}:\n" + "\n".join(res["reasons"]))
