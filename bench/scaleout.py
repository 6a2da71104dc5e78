"""The same candidates scored by executor=local (1 torch thread) and executor=ray (N workers of 1 thread),
on the embedded model, each side timed after its model(s) loaded. Last line:
ray_speedup=<local seconds / ray seconds> identical=<1 if every score matches, else 0>."""

from __future__ import annotations

import argparse
import time

from common import embedded


def timed(executor, jobs) -> tuple[list, float]:
    start = time.perf_counter()
    rows = [r for r, _ in executor.run(jobs)]
    return rows, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    import torch

    from lpes_framework.config import plain, task_configs
    from lpes_framework.execution import encode_splits
    from lpes_framework.execution.local import LocalExecutor
    from lpes_framework.execution.ray import RayExecutor

    cfg, model, tok, info = embedded(["threads=1", "progress=false"])
    torch.set_num_threads(1)
    specs = task_configs(cfg)
    n = info.n_layers
    jobs = [("search", [1.0 + 0.05 * c * (l / (n - 1)) for l in range(n)], {"name": "rope", "wavelength_low": 256})
            for c in range(args.candidates)]
    from lpes_framework.tasks import TASKS

    local = LocalExecutor(plain(cfg), specs, ["search"], loaded=(model, tok, info),
                          sample_sets=encode_splits(cfg, {k: TASKS.build(s) for k, s in specs.items()}, ["search"], tok))
    local_rows, local_s = timed(local, jobs)
    start = time.perf_counter()
    remote = RayExecutor(plain(cfg), specs, ["search"], workers=args.workers, threads_per_worker=1)
    startup = time.perf_counter() - start
    try:
        ray_rows, ray_s = timed(remote, jobs)
    finally:
        remote.close()
    samples = sum(len(r) for r in local_rows[0].values())
    print(f"{info.name}: {args.candidates} candidates x {samples} samples")
    print(f"local (1 thread) {local_s:.1f} s; ray ({args.workers} workers x 1 thread) {ray_s:.1f} s "
          f"(+ {startup:.1f} s to start Ray and load {args.workers} models)")
    print(f"ray_speedup={local_s / ray_s:.4f} identical={int(ray_rows == local_rows)}")


if __name__ == "__main__":
    main()
