# mk/cache.mk — the on-disk cache (inductor_c/runtime/diskcache.c): its C unit test, one of the
# C_TESTS of `make test` (links all of inductor_c: the cache's settings are rows of config.c).
# tests/c/test_codecache.c: code sharing and object caching through ic_compile (links all of inductor_c).
# Both are built by the Makefile's rule for C tests ($(CBIN)/test_%).
