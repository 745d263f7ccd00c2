# mk/pipeline.mk — C tests of the compile pipeline's IR tools (issue 24): the graph text parser
# (inductor_c/graph/parse.c) and the loop-IR verifier. Both are C_TESTS of `make test`.
# Built by the Makefile's rule for C tests ($(CBIN)/test_%).
