"""Eager NCHW vs channels_last for the conv models of the suite (bf16, batch 32, H200):
how much the memory format alone is worth.  python benchmarks/eager_layout.py"""
import torch, torchvision.models as tvm
from models import cuda_bench
for name in ["resnet18", "resnet50", "mobilenet_v3_large", "convnext_tiny"]:
    m = getattr(tvm, name)().to("cuda", torch.bfloat16).eval()
    x = torch.randn(32, 3, 224, 224, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        a = cuda_bench(m, x)
        m = m.to(memory_format=torch.channels_last)
        b = cuda_bench(m, x.to(memory_format=torch.channels_last))
    print(f"{name:20s} eager nchw {a:7.3f} ms  channels_last {b:7.3f} ms  ratio {a / b:5.2f}")
