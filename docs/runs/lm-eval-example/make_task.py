# A local lm-eval task: 40 three-way multiple-choice questions "which value goes with key K" over a
# short list of key-value facts (the answer is the first choice; lm-eval scores choices by log-likelihood).
import json, random
rng = random.Random(0)
rows = []
for i in range(40):
    facts = [(rng.randrange(100, 999), rng.randrange(1000, 9999)) for _ in range(8)]
    k, v = facts[rng.randrange(8)]
    text = " ".join(f"Key {a} has value {b}." for a, b in facts) + f" Key {k} has value"
    others = [b for _, b in facts if b != v][:2]
    rows.append({"question": text, "choices": [f" {v}", f" {others[0]}", f" {others[1]}"], "answer": 0})
open("data.jsonl", "w").write("\n".join(json.dumps(r) for r in rows) + "\n")
open("task.yaml", "w").write(f"""task: kv_choice
dataset_path: json
dataset_kwargs:
  data_files:
    test: {__import__('os').path.abspath('data.jsonl')}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{question}}}}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: "{{{{answer}}}}"
metric_list:
  - metric: acc
""")
