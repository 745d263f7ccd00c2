"""torchc.explain's counts of a tiny transformers config, with the pieces they leave out, for
comparing with Dynamo's (benchmarks/sweep_dynamo.py): graphs and breaks are counted as
Dynamo's explain counts them (a graph once however often it ran, only with tensor ops);
hits (a second layer running the first one's entry), pieces with no tensor op (a wrapper
frame's code around a break) and frames run eagerly are reported beside them. Same tiny
config and inputs as sweep_tiny.py.

    PYTHONPATH=<dir holding torchc> python benchmarks/sweep_graph_kinds.py jetmoe,led
"""
import json
import sys
import warnings

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import sweep_dynamo  # noqa: E402


def one(name):
    import torchc
    model, inputs = sweep_dynamo.model_and_inputs(name)
    if inputs is None:
        return {"model": name, "error": "no inputs"}
    torchc.reset()
    with torch.no_grad():
        ex = torchc.explain(model)(**inputs)
    # graphs/breaks as Dynamo counts them; the pieces they leave out (torchc/_api.py ExplainOutput)
    return {"model": name, "graphs": ex.graph_count, "breaks": ex.graph_break_count,
            "hits": ex.cache_hits, "no_ops": ex.empty_pieces, "pieces_run": ex.pieces_run,
            "frames_eager": len(ex.eager_frames)}


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    import transformers
    transformers.logging.set_verbosity_error()
    for n in sys.argv[1].split(","):
        print(json.dumps(one(n)), flush=True)
