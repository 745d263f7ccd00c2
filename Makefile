# torchc — two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON      ?= python3
# llvm-config-16 when installed; a plain llvm-config only if it is LLVM 16 (an older one beside it must not win).
LLVM_CONFIG ?= $(shell command -v llvm-config-16 2>/dev/null || { llvm-config --version 2>/dev/null | grep -q "^16\." && echo llvm-config; } || echo llvm-config-16)
LLVM_INCLUDE ?= $(shell $(LLVM_CONFIG) --includedir 2>/dev/null)
LLVM_LIB    ?= $(shell $(LLVM_CONFIG) --libdir 2>/dev/null)
LLVM_LINK    = $(if $(filter %.so %.so.1,$(LLVM_LIB)),$(LLVM_LIB),-L$(LLVM_LIB) -Wl,-rpath,$(LLVM_LIB) -lLLVM-16)
CC          ?= cc
CFLAGS_C     = -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
ASAN         = -fsanitize=address,undefined -fno-omit-frame-pointer
IC_SRCS      = $(wildcard inductor_c/*.c inductor_c/*/*.c)
LL_SRCS      = $(wildcard layouts/*.c)
C_SRCS       = $(wildcard csrc/*.c csrc/*.cpp csrc/*.h dynamo_hook/*.c dynamo_hook/*.h inductor_c/*.h inductor_c/*/*.h layouts/*.h) $(IC_SRCS) $(LL_SRCS)
PYTAG       := $(shell $(PYTHON) -c "import sys; print('%d%d' % sys.version_info[:2])" 2>/dev/null)
STAMP        = build/.deps-ok-$(PYTAG)

export LLVM_INCLUDE LLVM_LIB

.PHONY: deps build test test-py test-py312 test-c test-asan test-tsan stress demo bench ptx-check clean

# Installs what the build needs: torch (CPU build), pytest, numpy, LLVM 16 headers.
deps: $(STAMP)
$(STAMP):
	@mkdir -p build
	$(PYTHON) -c "import torch, pytest, numpy" 2>/dev/null || $(PYTHON) -m pip install -q torch==2.13.0 pytest numpy
	$(PYTHON) -c "import transformers" 2>/dev/null || $(PYTHON) -m pip install -q transformers==5.25.0
	@if ! command -v llvm-config-16 >/dev/null 2>&1 && \
	    ! grep -qs 'LLVM_VERSION_MAJOR 16' "$(LLVM_INCLUDE)/llvm/Config/llvm-config.h"; then \
	  SUDO=$$(command -v sudo >/dev/null 2>&1 && [ $$(id -u) -ne 0 ] && echo sudo); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq llvm-16-dev; fi
	@touch $@

# The stamps are per Python version: `make PYTHON=python3.12 test` builds and tests that
# interpreter's extension next to the default one (the GPU machine runs 3.12, CI 3.11).
build: deps build/.ext-ok-$(PYTAG)
build/.ext-ok-$(PYTAG): $(C_SRCS) setup.py
	$(PYTHON) setup.py -q build_ext --inplace
	@touch $@

test: build test-c test-py

test-py: build
	$(PYTHON) -m pytest -q -x --durations=25 tests

# Python 3.12 (the GPU machine's interpreter; CI and `make test` use the default python3): a
# venv in build/venv312 made from PY312, `make deps` and `make build` with it (its own stamps
# and a _C.cpython-312 extension beside the default one), then the whole suite without -x so
# every failure is counted. PY312: a python3.12 (default: one on PATH, else pyenv's); without
# one the target says so and does nothing.
PY312   ?= $(firstword $(shell command -v python3.12 2>/dev/null) $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12))
VENV312  = build/venv312
test-py312:
	@if [ -z "$(PY312)" ]; then echo "test-py312: no python3.12 found (set PY312=/path/to/python3.12); skipped"; \
	else test -x $(VENV312)/bin/python || $(PY312) -m venv $(VENV312); \
	  $(MAKE) PYTHON=$(CURDIR)/$(VENV312)/bin/python build && \
	  $(VENV312)/bin/python -m pytest -q tests; fi

# The C tests link objects compiled once each (CBIN/obj/<source path>.o) instead of compiling
# all of inductor_c into every test: an object is rebuilt when its source or a header it
# includes changes (the compiler's -MMD -MP dependency files, included below), and every
# object when the compile command changes (CBIN/obj/.flags: compiler, CFLAGS_C, EXTRA_CFLAGS,
# include paths). test-asan uses the same rules with CBIN=build-asan/c and the ASan flags.
CBIN        ?= build/c
COBJ         = $(CBIN)/obj
C_TEST_FLAGS = $(CFLAGS_C) $(EXTRA_CFLAGS) -Iinductor_c -Ilayouts -I$(LLVM_INCLUDE)
IC_OBJS      = $(patsubst %.c,$(COBJ)/%.o,$(IC_SRCS))
LL_OBJS      = $(patsubst %.c,$(COBJ)/%.o,$(LL_SRCS))
C_TEST_SRCS  = $(wildcard tests/c/test_*.c)
C_TESTS      = $(patsubst tests/c/%.c,$(CBIN)/%,$(C_TEST_SRCS))

.PHONY: FORCE
$(COBJ)/.flags: FORCE
	@mkdir -p $(@D)
	@echo '$(CC) $(C_TEST_FLAGS)' | cmp -s - $@ || echo '$(CC) $(C_TEST_FLAGS)' > $@

$(COBJ)/%.o: %.c $(COBJ)/.flags
	@mkdir -p $(@D)
	$(CC) $(C_TEST_FLAGS) -MMD -MP -c $< -o $@

-include $(wildcard $(COBJ)/*/*.d $(COBJ)/*/*/*.d $(COBJ)/*/*/*/*.d)
# made by a pattern rule only, the objects would be intermediate files, deleted after each link
.SECONDARY: $(IC_OBJS) $(LL_OBJS) $(patsubst %.c,$(COBJ)/%.o,$(C_TEST_SRCS))

# test_layouts needs layouts/ only; every other C test links all of inductor_c and layouts/
$(CBIN)/test_layouts: $(COBJ)/tests/c/test_layouts.o $(LL_OBJS)
	$(CC) $(CFLAGS_C) $(EXTRA_CFLAGS) $^ -lm -o $@

$(CBIN)/test_%: $(COBJ)/tests/c/test_%.o $(IC_OBJS) $(LL_OBJS)
	$(CC) $(CFLAGS_C) $(EXTRA_CFLAGS) $^ $(LLVM_LINK) -lpthread -lm -ldl -o $@

test-c: deps $(C_TESTS)
	@set -e; for t in $(C_TESTS); do echo "== $$t"; $$t; done

# C libraries and their tests under ASan+UBSan, then the Python tests against an ASan build
# of the extension (in build-asan/, the normal in-place build is left alone).
ASAN_ENV = ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
test-asan: deps
	$(MAKE) CBIN=build-asan/c EXTRA_CFLAGS='$(ASAN)' $(patsubst %,build-asan/c/%,test_layouts test_inductor test_dyn test_decomp test_scan_kernel)
	$(ASAN_ENV) build-asan/c/test_layouts
	$(ASAN_ENV) build-asan/c/test_inductor
	$(ASAN_ENV) build-asan/c/test_dyn
	$(ASAN_ENV) build-asan/c/test_decomp
	$(ASAN_ENV) build-asan/c/test_scan_kernel
	TORCHC_ASAN=1 $(PYTHON) setup.py -q build --build-base build-asan/py --build-lib build-asan/lib
	cd build-asan && $(ASAN_ENV) \
	  LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)" \
	  PYTHONPATH=$(CURDIR)/build-asan/lib:$(CURDIR)/tests $(PYTHON) -m pytest -q -x -p no:cacheprovider \
	  --rootdir=$(CURDIR)/build-asan $(CURDIR)/tests
	# the re-entrancy tests again with Python's allocator off (pymalloc reuses a freed object's
	# slot, where ASan would not see the use after free)
	cd build-asan && $(ASAN_ENV) PYTHONMALLOC=malloc \
	  LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)" \
	  PYTHONPATH=$(CURDIR)/build-asan/lib:$(CURDIR)/tests $(PYTHON) -m pytest -q -x -p no:cacheprovider \
	  --rootdir=$(CURDIR)/build-asan $(CURDIR)/tests/test_reliability_reentrancy.py $(CURDIR)/tests/test_reset_in_guards.py

# ThreadSanitizer: the extension built with -fsanitize=thread in build-tsan/, the thread and
# reset() race tests run against it (libtsan preloaded into the real interpreter, not a shim).
PY_EXE       = $(shell $(PYTHON) -c "import sys; print(sys.executable)")
TSAN_ENV     = TSAN_OPTIONS="halt_on_error=1 report_signal_unsafe=0 suppressions=$(CURDIR)/tests/tsan.supp"
test-tsan: deps
	TORCHC_TSAN=1 $(PYTHON) setup.py -q build --build-base build-tsan/py --build-lib build-tsan/lib
	cd build-tsan && $(TSAN_ENV) LD_PRELOAD="$$($(CC) -print-file-name=libtsan.so)" \
	  PYTHONPATH=$(CURDIR)/build-tsan/lib:$(CURDIR)/tests timeout 900 $(PY_EXE) -m pytest -q -x -p no:cacheprovider \
	  --rootdir=$(CURDIR)/build-tsan $(CURDIR)/tests/test_reliability.py -k "reset or recursion"

# Randomized reliability runs, bounded in time: the fuzzers (programs, hostile programs,
# gradients) over a fresh seed (printed; set TORCHC_STRESS_SEED to repeat one), thread/reset
# races, recursion, a hostile cache directory, huge graphs (tests/stress_reliability.py).
stress: build
	@seed=$${TORCHC_STRESS_SEED:-$$(od -An -N3 -tu4 /dev/urandom | tr -d ' ')}; \
	echo "make stress: seed $$seed (TORCHC_STRESS_SEED=$$seed make stress repeats it)"; \
	TORCHC_STRESS_SEED=$$seed TORCHC_FUZZ_SEED=$$seed TORCHC_FUZZ_N=$${TORCHC_FUZZ_N:-400} \
	  TORCHC_HFUZZ_SEED=$${TORCHC_HFUZZ_SEED:-$$seed} TORCHC_HFUZZ_N=$${TORCHC_HFUZZ_N:-400} \
	  TORCHC_GFUZZ_SEED=$${TORCHC_GFUZZ_SEED:-$$seed} TORCHC_GFUZZ_N=$${TORCHC_GFUZZ_N:-240} \
	  timeout 1800 $(PYTHON) -m pytest -q -x tests/test_fuzz.py tests/test_fuzz_hostile.py tests/test_fuzz_grad.py \
	  tests/stress_reliability.py

# the scripts import the in-place build of torchc from the checkout
demo: build
	PYTHONPATH=$(CURDIR)$${PYTHONPATH:+:$$PYTHONPATH} $(PYTHON) benchmarks/demo.py

bench: build
	PYTHONPATH=$(CURDIR)$${PYTHONPATH:+:$$PYTHONPATH} $(PYTHON) benchmarks/run.py

clean:
	rm -rf build build-asan build-tsan torchc/*.so

# Helper makefiles (targets owned by their subsystems), e.g. mk/gpu.mk: ptx-check
-include mk/*.mk
