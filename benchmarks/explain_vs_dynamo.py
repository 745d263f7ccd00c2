"""torchc.explain's graph and break counts beside torch._dynamo.explain's on tiny transformers
configs (sweep_tiny.py's configs and inputs, eval, no_grad), and the counts torchc reported
before they were made to mean Dynamo's (issue 21: every piece run, cache hits and pieces
without tensor ops included), computed from the same call's records.

    PYTHONPATH=. python benchmarks/explain_vs_dynamo.py bert,gpt2,led   # exact model_type names
"""
import sys
import warnings

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import sweep_dynamo  # noqa: E402


def old_counts(records):
    """The counts of torchc.explain before issue 21's change (torchc/_api.py at 36de7ea)."""
    pieces = [r for r in records if r["event"] in ("compiled", "hit") and not r.get("fallback")]
    fallbacks = [r for r in records if r["event"] == "fallback"]
    rows = [(r, r.get("reason") if r["event"] == "fallback" else r.get("break_reason"), r.get("where") or "")
            for r in fallbacks + [p for p in pieces if p.get("break_reason")]]
    rows.sort(key=lambda t: next(i for i, r in enumerate(records) if r is t[0]))
    dup, used = set(), set()
    for i, (r, why, where) in enumerate(rows):
        if not why or "; " not in where:
            continue
        for j in range(i + 1, len(rows)):
            s, swhy, swhere = rows[j]
            if j not in used and swhy == why and swhere and where.startswith(swhere + "; "):
                dup.add(id(r))
                used.add(j)
                break
    return len(pieces), sum(id(r) not in dup for r, _, _ in rows)


def one(name):
    import torchc
    model, inputs = sweep_dynamo.model_and_inputs(name)
    if inputs is None:
        return {"model": name, "error": "no inputs"}
    torchc.reset()
    with torch.no_grad():
        ex = torchc.explain(model)(**inputs)
    row = {"model": name, "before": old_counts(ex.records), "after": (ex.graph_count, ex.graph_break_count),
           "hits": ex.cache_hits, "empty": ex.empty_pieces, "eager_frames": len(ex.eager_frames)}
    d = sweep_dynamo.one(name)
    row["dynamo"] = (d.get("graphs"), d.get("breaks"))
    return row


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    import transformers
    transformers.logging.set_verbosity_error()
    print("| model | torchc before (graphs, breaks) | torchc after | Dynamo | hits | empty pieces | eager frames |")
    print("|---|---|---|---|---|---|---|")
    for n in sys.argv[1].split(","):
        try:
            r = one(n)
        except Exception as e:
            r = {"model": n, "error": f"{type(e).__name__}: {str(e)[:100]}"}
        if "error" in r:
            print(f"| {n} | {r['error']} |", flush=True)
            continue
        print(f"| {n} | {r['before']} | {r['after']} | {r['dynamo']} | {r['hits']} | {r['empty']} | "
              f"{r['eager_frames']} |", flush=True)
