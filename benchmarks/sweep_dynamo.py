"""Dynamo's graph and break counts for tiny transformers configs, beside sweep_tiny.py's torchc
counts: the same tiny config and inputs (sweep_tiny.tiny_config / make_inputs), eval, no_grad,
`torch._dynamo.explain(model)(**inputs)` with Dynamo's default config (backend eager).

    python benchmarks/sweep_dynamo.py openai_privacy_filter,jetmoe   # exact model_type names
"""
import json
import sys
import warnings

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import sweep_tiny  # noqa: E402


def model_and_inputs(name):
    """sweep_tiny's tiny config of model_type name, eval, and inputs eager runs under
    no_grad (None when none does)."""
    from transformers import AutoModel
    cfg = sweep_tiny.tiny_config(name)
    torch.manual_seed(0)
    model = AutoModel.from_config(cfg).eval()
    for extra in (False, True):
        inputs, _ = sweep_tiny.make_inputs(model, cfg, extra)
        if inputs is None:
            continue
        try:
            with torch.no_grad():
                model(**inputs)
            return model, inputs
        except Exception:
            pass
    return model, None


def one(name):
    model, inputs = model_and_inputs(name)
    if inputs is None:
        return {"model": name, "error": "no inputs"}
    torch._dynamo.reset()
    with torch.no_grad():
        ex = torch._dynamo.explain(model)(**inputs)
    return {"model": name, "graphs": ex.graph_count, "breaks": ex.graph_break_count,
            "reasons": [str(b.reason)[:160] for b in ex.break_reasons][:6]}


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    import transformers
    transformers.logging.set_verbosity_error()
    for n in sys.argv[1].split(","):
        print(json.dumps(one(n)), flush=True)
