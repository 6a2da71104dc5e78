"""What ``optimizer.checkpoint_layers`` saves and costs, on the embedded model (or ``--model``), one run.

The gradient job on one perplexity window of ``--length`` tokens of the standard library's source (the
extrapolation search's task), NTK factors near 1 in every layer, without and with layer checkpointing,
each in a fresh process (memory freed by one job stays in its process and would flatter the next),
alternated ``--repeats`` times. Memory is the peak resident set during the job minus the resident set
just before it (a thread samples /proc/self/statm every few milliseconds: the process's lifetime peak
would include loading the model). Both must give the same value and gradient.

Last line: memory_ratio=<peak growth with checkpointing / without> cost_ratio=<seconds with / without>
without_gb=<peak growth without> with_gb=<peak growth with>.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np

from common import embedded

PAGE = os.sysconf("SC_PAGE_SIZE")


def resident() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def peak_growth(fn) -> tuple[object, float, float]:
    """(fn's result, its peak resident growth in GB, its seconds)."""
    start, peak, done = resident(), [0], threading.Event()

    def watch():
        while not done.is_set():
            peak[0] = max(peak[0], resident())
            time.sleep(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    began = time.perf_counter()
    try:
        result = fn()
    finally:
        seconds = time.perf_counter() - began
        done.set()
        watcher.join()
    return result, max(peak[0], resident()) - start, seconds


def measure(model_name: str, length: int, checkpoint_layers: bool) -> dict:
    """One gradient job in this process: its value, gradient, peak resident growth (GB) and seconds."""
    from lpes_framework.judging.fitness import FitnessWeights
    from lpes_framework.execution import SampleSet
    from lpes_framework.position import build_scheme
    from lpes_framework.position.curves import build_curve
    from lpes_framework.judging.fitness import sample_coefficients
    from lpes_framework.scoring.gradient import value_and_gradient
    from lpes_framework.tasks import TASKS
    from lpes_framework.tasks.base import WHOLE_TEXT

    cfg, model, tok, info = embedded([f"model={model_name}"])
    task = TASKS.build({"name": "perplexity", "source": "stdlib", "window_tokens": length, "windows": 1,
                        "chat_template": False})
    samples = SampleSet(tok, {"text": task}, split="search", trained_context=info.trained_context,
                        allow_beyond_trained=True, batch_size=1, progress=False)
    baseline = samples.rows(model)
    coefficients = {"text": sample_coefficients([WHOLE_TEXT], 1.0, FitnessWeights.defaults(), per_position=1)}
    curve = build_curve({"name": "free", "low": 0.5, "high": 3.0}, info.n_layers)
    genes = np.exp(np.random.default_rng(0).normal(0.0, 0.05, info.n_layers))
    (value, gradient, _, _), gb, seconds = peak_growth(lambda: value_and_gradient(
        model, samples.encoded, baseline, coefficients, genes, curve, build_scheme({"name": "ntk"}), batch_size=1,
        pad_id=tok.pad_token_id, share_prefix=False, checkpoint_layers=checkpoint_layers))
    return {"model": info.name, "layers": info.n_layers, "value": value, "gradient": gradient.tolist(),
            "gb": gb / 2**30, "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--length", type=int, default=2048, help="window tokens")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--child", choices=["plain", "checkpoint"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.model, args.length, args.child == "checkpoint")))
        return
    runs: dict[str, list[dict]] = {"plain": [], "checkpoint": []}
    for _ in range(args.repeats):
        for kind in runs:
            out = subprocess.run([sys.executable, __file__, "--model", args.model, "--length", str(args.length),
                                  "--child", kind], capture_output=True, text=True, check=True).stdout
            runs[kind].append(json.loads(out.strip().splitlines()[-1]))
    first = {kind: rs[0] for kind, rs in runs.items()}
    if first["plain"]["value"] != first["checkpoint"]["value"] or first["plain"]["gradient"] != first["checkpoint"]["gradient"]:
        raise SystemExit(f"error: checkpointing changed the result: {first['plain']['value']} vs "
                         f"{first['checkpoint']['value']}")
    gb = {kind: float(np.median([r["gb"] for r in rs])) for kind, rs in runs.items()}
    seconds = {kind: float(np.median([r["seconds"] for r in rs])) for kind, rs in runs.items()}
    info = first["plain"]
    print(f"{info['model']}: one {args.length}-token window, gradient w.r.t. {info['layers']} NTK factors; peak growth "
          f"{gb['plain']:.2f} GB without checkpointing, {gb['checkpoint']:.2f} GB with; {seconds['plain']:.1f} s vs "
          f"{seconds['checkpoint']:.1f} s (median of {args.repeats}, alternated, a process each); same value and gradient")
    print(f"memory_ratio={gb['checkpoint'] / gb['plain']:.4f} cost_ratio={seconds['checkpoint'] / seconds['plain']:.4f} "
          f"without_gb={gb['plain']:.3f} with_gb={gb['checkpoint']:.3f}")


if __name__ == "__main__":
    main()
