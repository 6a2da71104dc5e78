# A local lm-eval task: 40 three-way multiple-choice questions "which value goes with key K" over a
# short list of key-value facts (the answer is the first choice; lm-eval scores choices by log-likelihood).
# Writes data.jsonl and task.yaml (task `kv_choice`) into the current folder.
import random

from lpes_framework.commands.lm_eval import write_choice_task

rng = random.Random(0)
rows = []
for i in range(40):
    facts = [(rng.randrange(100, 999), rng.randrange(1000, 9999)) for _ in range(8)]
    k, v = facts[rng.randrange(8)]
    text = " ".join(f"Key {a} has value {b}." for a, b in facts) + f" Key {k} has value"
    others = [b for _, b in facts if b != v][:2]
    rows.append({"question": text, "choices": [f" {v}", f" {others[0]}", f" {others[1]}"], "answer": 0})
write_choice_task(".", "kv_choice", rows)
