# mk/pipeline.mk — C tests of the compile pipeline's IR tools (issue 24): the graph text parser
# (inductor_c/graph/parse.c) and the loop-IR verifier. Both are C_TESTS of `make test`.
build/c/test_parse: tests/c/test_parse.c tests/c/harness.h $(IC_SRCS) $(LL_SRCS) $(wildcard inductor_c/*.h inductor_c/*/*.h)
	@mkdir -p build/c
	$(CC) $(CFLAGS_C) $(EXTRA_CFLAGS) -Iinductor_c -Ilayouts -I$(LLVM_INCLUDE) tests/c/test_parse.c $(IC_SRCS) $(LL_SRCS) $(LLVM_LINK) -lpthread -lm -ldl -o $@
