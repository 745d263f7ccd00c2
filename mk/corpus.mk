# mk/corpus.mk — the codegen corpus (tools/codegen_corpus.py): LLVM IR (CPU) and PTX (sm_90,
# sm_80, no GPU needed) of a fixed corpus, to show a refactor changes no generated code.
#   make codegen-corpus CORPUS_OUT=/tmp/cg_before            (prints the corpus hash)
#   make codegen-corpus CORPUS_OUT=/tmp/cg_after CORPUS_REF=/tmp/cg_before   (diff -r, fails on a difference)
.PHONY: codegen-corpus
CORPUS_OUT ?= build/codegen_corpus
codegen-corpus: build build/c/test_ptx
	rm -rf $(CORPUS_OUT)
	$(PYTHON) tools/codegen_corpus.py $(CORPUS_OUT) $(if $(CORPUS_REF),--ref $(CORPUS_REF))
