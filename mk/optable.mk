# mk/optable.mk — tests/c/test_optable.c (one of the C_TESTS of `make test`): the op table's
# flag columns (inductor_c/ic_ops.h) agree with its kinds and with each other.
# Built by the Makefile's rule for C tests ($(CBIN)/test_%).
