"""The search's noise floor, from the held-out rows in this folder: the fitness of each method
against unpatched (the search's own formula) with its 95% paired bootstrap interval, on all haystacks
and on 10 (the search's and validation's sample size), and its spread over random 10-haystack subsets;
then, under other fitness weights, how far a real effect (uniform 0.8's middle loss) stands above that
spread: the weights that separate it best are the ones a search at 10 haystacks can use.

    python docs/runs/qwen-lowfreq-heldout/noise_floor.py
"""

import functools
import json
import random
import statistics
from pathlib import Path

from lpes_framework.evaluate import logged_rows
from lpes_framework.fitness import FitnessWeights, fitness_interval
from lpes_framework.tasks import TASKS

here = Path(__file__).parent
results = json.loads((here / "results.json").read_text())
tasks = {"kv_retrieval": TASKS.build({"name": "kv_retrieval", **results["tasks"]["kv_retrieval"]})}
rows = {method: {"kv_retrieval": per["kv_retrieval"]}  # the retrieval fitness only: no perplexity windows resampled
        for method, per in logged_rows(here).items()}
haystacks = len({r.context for r in rows["unpatched"]["kv_retrieval"]})


def on(method: str, contexts) -> dict:
    keep = set(contexts)
    return {task: [r for r in per if r.context in keep] for task, per in rows[method].items()}


@functools.cache  # the default weights' spread is printed twice: computed once
def spread(name: str, weights: FitnessWeights) -> list[float]:
    rng = random.Random(0)
    return [fitness_interval(on(name, s), on("unpatched", s), tasks, weights, resamples=1)[0]  # observed only
            for s in (rng.sample(range(haystacks), 10) for _ in range(500))]


methods = [m for m in rows if m != "unpatched"]
for name in methods:
    whole = fitness_interval(rows[name], rows["unpatched"], tasks, FitnessWeights())
    ten = fitness_interval(on(name, range(10)), on("unpatched", range(10)), tasks, FitnessWeights())
    subsets = spread(name, FitnessWeights())
    print(f"{name}: {haystacks} haystacks {whole[0]:+.4f} [{whole[1]:+.4f}, {whole[2]:+.4f}]; first 10 {ten[0]:+.4f} "
          f"[{ten[1]:+.4f}, {ten[2]:+.4f}]; 500 random 10-haystack subsets: sd {statistics.stdev(subsets):.4f}, "
          f"range {min(subsets):+.4f} to {max(subsets):+.4f}")
# Noise alone does not rank weights: what matters is how far a real effect stands above it. Uniform 0.8
# is one (-2.8 [-4.4, -1.0] middle points on the 100 held-out haystacks), so each weighting's separation
# is its all-haystack fitness over its sd across 10-haystack sets (a z score at the search's sample size).
for end_penalty in (2.0, 0.5, 0.0):
    for logprob_weight in (0.1, 1.0, 10.0, 100.0):
        weights = FitnessWeights(end_penalty=end_penalty, logprob_weight=logprob_weight)
        cells = []
        for name in methods:
            full = fitness_interval(rows[name], rows["unpatched"], tasks, weights, resamples=1)[0]
            sd = statistics.stdev(spread(name, weights))
            cells.append(f"{name}: {haystacks} haystacks {full:+.4f}, sd over 10 {sd:.4f}, separation {full / sd:+.2f}")
        print(f"end_penalty={end_penalty} logprob_weight={logprob_weight}: " + " | ".join(cells))
