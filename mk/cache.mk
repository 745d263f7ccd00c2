# mk/cache.mk — the on-disk cache (inductor_c/runtime/diskcache.c): its C unit test, one of the
# C_TESTS of `make test` (links all of inductor_c: the cache's settings are rows of config.c).
build/c/test_diskcache: tests/c/test_diskcache.c tests/c/harness.h $(IC_SRCS) $(wildcard inductor_c/*.h inductor_c/*/*.h)
	@mkdir -p build/c
	$(CC) $(CFLAGS_C) $(EXTRA_CFLAGS) -Iinductor_c -Ilayouts -I$(LLVM_INCLUDE) tests/c/test_diskcache.c $(IC_SRCS) $(LL_SRCS) $(LLVM_LINK) -lpthread -lm -ldl -o $@

# Code sharing and object caching through ic_compile (links all of inductor_c).
build/c/test_codecache: tests/c/test_codecache.c tests/c/harness.h $(IC_SRCS) $(wildcard inductor_c/*.h inductor_c/*/*.h)
	@mkdir -p build/c
	$(CC) $(CFLAGS_C) $(EXTRA_CFLAGS) -Iinductor_c -Ilayouts -I$(LLVM_INCLUDE) tests/c/test_codecache.c $(IC_SRCS) $(LL_SRCS) $(LLVM_LINK) -lpthread -lm -ldl -o $@
