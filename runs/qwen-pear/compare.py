"""How stable PEAR's suppression heads are on Qwen2.5-Coder-0.5B: the finder's files in this folder, compared
pairwise (the correlation of every head's effect, and how many of the listed heads two runs share)."""
import itertools
import json
from pathlib import Path

import numpy as np

here = Path(__file__).parent
found = {p.stem: json.loads(p.read_text()) for p in sorted(here.glob("heads*.json"))}
for name, f in found.items():
    e = np.array(f["effects"])
    print(f"{name}: {f['proxy']}, copy log-prob {f['copy_logprob']:.4f}, effects {e.min():+.4f} .. {e.max():+.4f}, "
          f"{(e > 0).sum()} of {e.size} heads raise the copy when removed; listed {f['heads'][:6]} ...")
for (a, fa), (b, fb) in itertools.combinations(found.items(), 2):
    r = np.corrcoef(np.ravel(fa["effects"]), np.ravel(fb["effects"]))[0, 1]
    shared = len({tuple(h) for h in fa["heads"]} & {tuple(h) for h in fb["heads"]})
    print(f"{a} vs {b}: effects correlate {r:+.2f}; {shared} of {min(len(fa['heads']), len(fb['heads']))} listed heads shared")
