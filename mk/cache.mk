# mk/cache.mk — the on-disk cache (inductor_c/runtime/diskcache.c): its C unit test, one of the
# C_TESTS of `make test`.
build/c/test_diskcache: tests/c/test_diskcache.c inductor_c/runtime/diskcache.c inductor_c/ic_diskcache.h
	@mkdir -p build/c
	$(CC) $(CFLAGS_C) $(EXTRA_CFLAGS) -Iinductor_c tests/c/test_diskcache.c inductor_c/runtime/diskcache.c -ldl -o $@
