# mk/optable.mk — tests/c/test_optable.c (one of the C_TESTS of `make test`): the op table's
# flag columns (inductor_c/ic_ops.h) agree with its kinds and with each other.
build/c/test_optable: tests/c/test_optable.c tests/c/harness.h $(IC_SRCS) $(wildcard inductor_c/*.h inductor_c/*/*.h)
	@mkdir -p build/c
	$(CC) $(CFLAGS_C) $(EXTRA_CFLAGS) -Iinductor_c -Ilayouts -I$(LLVM_INCLUDE) tests/c/test_optable.c $(IC_SRCS) $(LL_SRCS) $(LLVM_LINK) -lpthread -lm -ldl -o $@
