"""What the vLLM plugin's tests and ``bench/serving.py`` compare: exported model folders (``lpes export``), the
project's key-value haystacks as token ids, greedy generations with the log-prob of each generated token
from vLLM and from transformers + lpes, and how far two engines' outputs agree."""

from __future__ import annotations

from pathlib import Path

# CPU: vLLM reserves this share of RAM for its KV cache (its default 0.92 is refused there); eager mode
# keeps the comparison free of graph capture
ENGINE = {"dtype": "float32", "enforce_eager": True, "gpu_memory_utilization": 0.1, "seed": 0}


def folders(model: str, factors: str, out: Path) -> dict[str, Path]:
    """The patched and all-ones exports (vLLM serves their tables, transformers their modeling file) and the stock
    folder of ``model`` (made once, then reused)."""
    names = {"patched": out / "patched", "ones": out / "ones", "stock": out / "stock"}
    if all((p / "config.json").is_file() for p in names.values()) and (names["ones"] / "lpes_tables.py").is_file():
        return names
    import torch

    from lpes_framework import apply_layer_scaling, build_scheme
    from lpes_framework.config import compose_config
    from lpes_framework.model.factors_file import load_checked
    from lpes_framework.model.load import identify, load_model, load_tokenizer
    from lpes_framework.model.cache import save_dequantised
    from lpes_framework.report.export import save_self_contained

    cfg = compose_config("config", [f"model={model}"]).model
    record = load_checked(factors, identify(cfg))
    tokenizer = load_tokenizer(cfg)
    hf, _, _ = load_model(cfg, tokenizer)
    scheme = build_scheme(record["scheme"])
    with torch.no_grad():
        with apply_layer_scaling(hf, record["factors"], scheme) as handle:
            save_self_contained(hf, handle, names["patched"], tokenizer, evidence=record.get("metrics"))
        ones = [[1.0] * len(f) if isinstance(f, list) else 1.0 for f in record["factors"]]
        with apply_layer_scaling(hf, ones, scheme) as handle:
            save_self_contained(hf, handle, names["ones"], tokenizer)
    save_dequantised(hf, names["stock"])
    tokenizer.save_pretrained(names["stock"])
    return names


def prompts(folder: Path, pairs: int, depths: list[int], haystacks: int) -> list[list[int]]:
    """Token ids of key-value haystacks (8-hex keys, as the shipped preset was searched on) up to where the
    answer starts, by the model's own tokenizer."""
    from transformers import AutoTokenizer

    from lpes_framework.tasks import TASKS

    task = TASKS.build({"name": "kv_retrieval", "pairs": pairs, "key_kind": "hex", "hex_len": 8, "layout": "queries",
                        "gold_positions": depths, "samples_per_position": haystacks})
    tokenizer = AutoTokenizer.from_pretrained(folder)
    return [e.ids[: e.answer_start] for e in task.encode("test", tokenizer)]


def transformers_outputs(folder: Path, ids: list[list[int]], new_tokens: int) -> list[dict]:
    import torch

    from lpes_framework import load_patched

    model, handle = load_patched(folder, dtype=torch.float32)
    outputs = []
    with torch.no_grad():
        for prompt in ids:
            out = model.generate(torch.tensor([prompt]), max_new_tokens=new_tokens, do_sample=False,
                                 output_scores=True, return_dict_in_generate=True, pad_token_id=0)
            tokens = out.sequences[0, len(prompt):].tolist()
            outputs.append({"tokens": tokens, "logprobs": [torch.log_softmax(s[0].float(), -1)[t].item()
                                                           for s, t in zip(out.scores, tokens)]})
    if handle is not None:
        handle.remove()
    return outputs


_REMOTE = """
import json, sys, torch
sys.modules["lpes_framework"] = None  # nothing of the project can be imported: the folder must carry what it needs
from transformers import AutoModelForCausalLM
folder, ids, new_tokens = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
model = AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True, dtype=torch.float32).eval()
with torch.no_grad():
    print(json.dumps([model.generate(torch.tensor([p]), max_new_tokens=new_tokens, do_sample=False,
                                     pad_token_id=0)[0, len(p):].tolist() for p in ids]))
"""


def remote_code_tokens(folder: Path, ids: list[list[int]], new_tokens: int) -> list[list[int]]:
    """Greedy tokens of an exported folder loaded with ``trust_remote_code`` in an interpreter where
    lpes_framework cannot be imported."""
    import json
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _REMOTE, str(folder), json.dumps(ids), str(new_tokens)],
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def vllm_outputs(llm, ids: list[list[int]], new_tokens: int) -> list[dict]:
    from vllm import SamplingParams, TokensPrompt

    params = SamplingParams(temperature=0, max_tokens=new_tokens, logprobs=0)
    results = llm.generate([TokensPrompt(prompt_token_ids=p) for p in ids], params, use_tqdm=False)
    return [{"tokens": list(r.outputs[0].token_ids),
             "logprobs": [step[t].logprob for step, t in zip(r.outputs[0].logprobs, r.outputs[0].token_ids)]}
            for r in results]


def close(llm) -> None:
    """Stop an engine's processes now (and free the RAM its KV cache holds), not when it is collected."""
    llm.llm_engine.engine_core.shutdown()


def agreement(a: list[dict], b: list[dict]) -> tuple[float, float]:
    """(share of positions with the same token after the same tokens, largest log-prob difference there)."""
    same = total = 0
    worst = 0.0
    for x, y in zip(a, b):
        total += max(len(x["tokens"]), len(y["tokens"]))
        for tx, ty, lx, ly in zip(x["tokens"], y["tokens"], x["logprobs"], y["logprobs"]):
            if tx != ty:
                break
            same += 1
            worst = max(worst, abs(lx - ly))
    return same / total, worst


def ramp_file(model: str, out: Path) -> Path:
    """A factors file of the model's identity: NTK factors rising linearly from 1 to 1.5 over the layers."""
    from lpes_framework.config import compose_config
    from lpes_framework.model.factors_file import factors_record
    from lpes_framework.io.atomic import write_json_atomic
    from lpes_framework.model.load import identify

    info = identify(compose_config("config", [f"model={model}"]).model)
    path = out / "ramp.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    n = info.n_layers
    write_json_atomic(path, factors_record(model=info.as_dict(), scheme={"name": "ntk"},
                                           factors=[1.0 + 0.5 * layer / max(n - 1, 1) for layer in range(n)]))
    return path


# tiny random models of the architectures the plugin serves, in shapes vLLM's CPU attention takes (head size 64);
# Gemma3 alternates sliding (local theta) and full layers, Phi3 rotates half of each head
ARCHITECTURES = {
    "llama": {}, "qwen2": {}, "mistral": {"sliding_window": None},
    "phi3": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}},
    "gemma3_text": {"sliding_window": 64, "layer_types": ["sliding_attention", "full_attention"] * 2,
                    "query_pre_attn_scalar": 64},
}
TINY_WINDOW = 512


def architecture_folders(out: Path) -> dict[str, Path]:
    """An export of each tiny random architecture under NTK factors rising from 1 to 2 over its layers."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from lpes_framework import apply_layer_scaling, build_scheme
    from lpes_framework.report.export import save_self_contained

    folders = {}
    for arch, extra in ARCHITECTURES.items():
        config = AutoConfig.for_model(arch, **{
            "vocab_size": 512, "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 4,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64, "max_position_embeddings": TINY_WINDOW,
            "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "tie_word_embeddings": False, **extra})
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(config).eval()
        with torch.no_grad(), apply_layer_scaling(model, [1.0, 1.3, 1.6, 2.0], build_scheme({"name": "ntk"})) as handle:
            folders[arch] = save_self_contained(model, handle, out / arch)
    return folders


def prompt_logprobs(ids: list[int], logits) -> list[float]:
    """Log-prob of each prompt token after the first, from the logits of one forward over the prompt."""
    import torch

    logprobs = torch.log_softmax(logits[0, :-1].float(), -1)
    return logprobs.gather(-1, torch.tensor(ids[1:])[:, None])[:, 0].tolist()


def transformers_prompt_logprobs(folder: Path, ids: list[int], patched: bool) -> list[float]:
    """The prompt's log-probs in transformers: the export's schedule applied (``load_patched``), or the same
    weights as the stock model."""
    import json

    import torch
    import transformers

    from lpes_framework import load_patched

    if patched:
        model, handle = load_patched(folder, dtype=torch.float32)
    else:
        arch = json.loads((folder / "config.json").read_text())["architectures"][0]
        model, handle = getattr(transformers, arch).from_pretrained(folder, dtype=torch.float32).eval(), None
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits
    if handle is not None:
        handle.remove()
    return prompt_logprobs(ids, logits)


VLLM_PROMPT_LOGPROBS = """
import json, sys
from vllm import LLM, SamplingParams, TokensPrompt
folders, ids = json.loads(sys.argv[1]), json.loads(sys.argv[2])
served = {}
for folder in folders:
    llm = LLM(model=folder, max_model_len=len(ids) + 8, skip_tokenizer_init=True, dtype="float32", enforce_eager=True,
              gpu_memory_utilization=0.1, seed=0)
    out = llm.generate([TokensPrompt(prompt_token_ids=ids)],
                       SamplingParams(max_tokens=1, prompt_logprobs=0, detokenize=False), use_tqdm=False)[0]
    served[folder] = [step[t].logprob for step, t in zip(out.prompt_logprobs[1:], ids[1:])]
    llm.llm_engine.engine_core.shutdown()
print("LOGPROBS " + json.dumps(served))
"""


def vllm_prompt_logprobs(folders: list[Path], ids: list[int], env: dict) -> dict[str, list[float]]:
    """The prompt's log-probs served by vLLM from each folder (by its path), in one fresh interpreter with the
    environment ``env``."""
    import json
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", VLLM_PROMPT_LOGPROBS, json.dumps([str(f) for f in folders]),
                           json.dumps(ids)], env=env, capture_output=True, text=True, timeout=1200)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("LOGPROBS ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"vLLM failed: {proc.stderr[-3000:]}")
    return json.loads(lines[-1].removeprefix("LOGPROBS "))
