"""The gradient search's answer minus each method scored in this folder (unpatched, the shipped preset of
the free GA, uniform NTK 1.5), on the haystacks they share: exact-match points per middle position and
for the middle mean, with paired bootstrap intervals over haystacks; and the gold log-prob change.

    python docs/runs/qwen-gradient-heldout/versus.py
"""

from pathlib import Path

from lpes_framework.evaluate import file_method_names, logged_rows
from lpes_framework.stats import middle_positions, paired_bootstrap

here = Path(__file__).parent
found_file = str(here.parent / "qwen-gradient-pi" / "best_factors.json")
rows = {method: per["kv_retrieval"] for method, per in logged_rows(here).items()}
name = file_method_names([found_file])[found_file]
found = rows[name]
haystacks = {r.context for r in found}
for method, theirs in rows.items():
    theirs = [r for r in theirs if r.context in haystacks]
    if method == name or [(r.context, r.position) for r in theirs] != [(r.context, r.position) for r in found]:
        continue
    interval = paired_bootstrap(found, theirs)
    positions = [p for p in interval if p != "middle"]
    middle = "  ".join(f"{p}: {interval[p].delta:+.1f}" for p in middle_positions(positions))
    logprob = sum(a.logprob - b.logprob for a, b in zip(found, theirs)) / len(found)
    print(f"gradient - {method} ({len(haystacks)} haystacks): middle {interval['middle']}  ends "
          f"{interval[positions[0]].delta:+.1f} / {interval[positions[-1]].delta:+.1f}  mean gold log-prob "
          f"{logprob:+.4f}\n  {middle}")
