"""Where the time of one --train row of benchmarks/sweep_tiny.py goes (issue 22): the model's
build, eager steps (float32, float64), torchc's compiled step (its explain() compile-time
breakdown), the backward's share, and a second compiled step (cache hit).

    python tools/train_phases.py pixtral [--skip-f64] [--skip-eager] [--one (compiled step)]
    TRAIN_PHASES_DUMP=graphs.txt: the forward and backward graphs' text written there
"""
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


def main():
    import torch
    import torchc
    import sweep_tiny as st
    st.TRAIN = True
    name = sys.argv[1]
    t = time.perf_counter()
    cfg = st.tiny_config(name)
    st.no_dropout(cfg)
    torch.manual_seed(0)
    from transformers import AutoModel
    model = AutoModel.from_config(cfg).train()
    inputs, _ = st.make_inputs(model, cfg, False)
    print(f"build {time.perf_counter() - t:.2f} s; inputs " +
          ", ".join(f"{k}{tuple(v.shape)}" for k, v in inputs.items()), flush=True)
    for i in range(0 if "--skip-eager" in sys.argv else 2):
        t = time.perf_counter()
        st.train_step(model, model, inputs)
        print(f"eager step {i}: {time.perf_counter() - t:.2f} s", flush=True)
    if "--skip-f64" not in sys.argv and "--skip-eager" not in sys.argv:
        import copy
        m64 = copy.deepcopy(model).double()
        i64 = {k: v.double() if v.is_floating_point() else v for k, v in inputs.items()}
        t = time.perf_counter()
        try:
            st.train_step(m64, m64, i64)
            print(f"eager f64 step: {time.perf_counter() - t:.2f} s", flush=True)
        except Exception as e:
            print(f"eager f64 step: {type(e).__name__}: {str(e)[:100]}", flush=True)
    for i in range(1 if "--one" in sys.argv else 2):
        torchc.reset() if i == 0 else None
        for p in model.parameters():
            p.grad = None
        torch.manual_seed(1)
        t = time.perf_counter()
        ex = torchc.explain(model)(**inputs)
        t1 = time.perf_counter()
        loss = st.train_loss(ex.result)
        loss.backward()
        t2 = time.perf_counter()
        print(f"torchc step {i}: forward {t1 - t:.2f} s, backward {t2 - t1:.2f} s; "
              f"graphs/breaks/bwd {ex.graph_count}/{ex.graph_break_count}/{ex.backward_graph_count} "
              f"ops {ex.op_count} bwd ops {ex.backward_op_count}", flush=True)
        if i == 0:
            print("\n".join(l for l in str(ex).splitlines() if "Compile Time" in l), flush=True)
            dump = os.environ.get("TRAIN_PHASES_DUMP")
            if dump:
                with open(dump, "w") as f:
                    f.write("\n\n".join(ex.graphs) + "\n\n# backward\n" + "\n\n".join(ex.backward_graphs))


if __name__ == "__main__":
    main()
