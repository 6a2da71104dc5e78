"""The shipped preset (the free GA's answer, docs/runs/qwen-free-ga-heldout) minus each baseline scored
here, on the 100 haystacks both folders share (the free GA's re-test scored 200; its first 100 are these:
the unpatched rows of both folders are checked to be the same samples with the same scores). Exact match
points per middle position and for the middle mean, with paired bootstrap intervals over haystacks.

    python docs/runs/qwen-baselines100/versus_found.py
"""

from pathlib import Path

from lpes_framework.evaluate import file_method_names, logged_rows
from lpes_framework.stats import middle_positions, paired_bootstrap

here = Path(__file__).parent
found_dir = here.parent / "qwen-free-ga-heldout"
found_file = str(found_dir / "best_factors.json")


def retrieval(folder: Path) -> dict:
    return {method: per["kv_retrieval"] for method, per in logged_rows(folder).items()}


baselines = retrieval(here / "test")
haystacks = {r.context for r in baselines["unpatched"]}
theirs = {method: [r for r in rows if r.context in haystacks] for method, rows in retrieval(found_dir).items()}
if theirs["unpatched"] != baselines["unpatched"]:
    raise SystemExit("the two folders' unpatched rows differ: not the same haystacks")
found = theirs[file_method_names([found_file])[found_file]]
for method, rows in baselines.items():
    interval = paired_bootstrap(found, rows)
    positions = [p for p in interval if p != "middle"]
    middle = "  ".join(f"{p}: {interval[p].delta:+.1f}" for p in middle_positions(positions))
    print(f"found - {method} ({len(haystacks)} haystacks): middle {interval['middle']}  ends "
          f"{interval[positions[0]].delta:+.1f} / {interval[positions[-1]].delta:+.1f}\n  {middle}")
