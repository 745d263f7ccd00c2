"""torchc.explain's graph count of a tiny transformers config split by kind, for comparing with
Dynamo's (benchmarks/sweep_dynamo.py): explain counts every compiled piece run in the call,
a cache hit (a second layer running the first one's entry) and a piece with no tensor op
(a wrapper frame's code around a break) included, where Dynamo's explain counts the graphs it
compiled with ops in them. Same tiny config and inputs as sweep_tiny.py.

    PYTHONPATH=<dir holding torchc> python benchmarks/sweep_graph_kinds.py jetmoe,led
"""
import json
import sys
import warnings

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import sweep_tiny  # noqa: E402


def one(name):
    import torchc
    from transformers import AutoModel
    cfg = sweep_tiny.tiny_config(name)
    torch.manual_seed(0)
    model = AutoModel.from_config(cfg).eval()
    for extra in (False, True):
        inputs, _ = sweep_tiny.make_inputs(model, cfg, extra)
        if inputs is not None:
            try:
                with torch.no_grad():
                    model(**inputs)
                break
            except Exception:
                inputs = None
    torchc.reset()
    with torch.no_grad():
        ex = torchc.explain(model)(**inputs)
    pieces = [r for r in ex.records if r["event"] in ("compiled", "hit") and not r.get("fallback")]
    return {"model": name, "graphs": ex.graph_count, "breaks": ex.graph_break_count,
            "hits": sum(r["event"] == "hit" for r in pieces),
            "no_ops": sum(r["event"] == "compiled" and r["op_count"] == 0 for r in pieces),
            "compiled_with_ops": sum(r["event"] == "compiled" and r["op_count"] > 0 for r in pieces),
            "frames_eager": sum(r["event"] == "fallback" for r in ex.records)}


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    import transformers
    transformers.logging.set_verbosity_error()
    for n in sys.argv[1].split(","):
        print(json.dumps(one(n)), flush=True)
