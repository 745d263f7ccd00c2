# mk/gpu.mk — targets of the GPU backend (codegen/gpu_nvptx.c, runtime/cuda.c); included by the
# top Makefile. ptx-check: PTX of a graph corpus through ic_graph_to_ptx, assembled with
# `ptxas -arch=sm_90` when ptxas exists, plus a GPU-vs-CPU differential run where libcuda works.
# tests/c/test_ptx.c is also one of the C_TESTS of `make test`.
.PHONY: ptx-check

# tests/c/test_gemm.c: the GEMM template (codegen/gpu_gemm.c): layout maps, a CPU simulation of
# one block against the ISA's ldmatrix/mma, PTX of GEMM graphs through ptxas.
# Both are built by the Makefile's rule for C tests ($(CBIN)/test_%).
ptx-check: build/c/test_ptx build/c/test_gemm
	build/c/test_ptx
	build/c/test_gemm
