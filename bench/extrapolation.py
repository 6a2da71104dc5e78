"""Layer-specific extrapolation against the best uniform one, beyond the embedded SmolLM2's trained window
(8,192 tokens), on its test split: perplexity of the standard library's source in windows of ``--length``
tokens, split into the tokens inside the trained window and those beyond it, and the labelled passkey
(queries layout: a key at each of 5 depths of one haystack of ``--length`` tokens), all through the
evaluate command's own code. Methods: the unpatched model, uniform PI and YaRN at L / L_train, dynamic NTK,
and the layer-specific factors file. The best uniform is the one with the lowest perplexity beyond the
window; intervals are paired bootstraps over windows. A control separates the layer pattern from the amount
of scaling: the file's scheme with its geometric-mean factor in every layer, and for band-wise factors a second
one with each band's mean in every layer (``--control``; it doubles or triples the run, so the default leaves it out and stays near 10 minutes on 2 cores). With the committed ``--out`` folder the baselines'
rows are reused (rows are cut to the first ``--windows`` / ``--passkeys`` draws), so the default run only
scores the factors file. Last line:
beyond_ppl_ratio=<layer-specific / best uniform, beyond the window> ci_high=<upper 95% bound of it>
inside_ppl_ratio=<layer-specific / unpatched, inside the window> passkey_delta=<points vs the best uniform>.
Targets: ci_high < 1, inside_ppl_ratio <= 1.02, passkey_delta >= 0."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import common  # noqa: F401  (puts the repository on the path)

RUN = Path("runs/smollm2-extrapolation")
DEFAULT_FACTORS = RUN / "search-ntk" / "best_factors.json"
UNIFORM = ("pi", "dynamic-ntk", "yarn")


def controls(factors: str, out: Path) -> list[tuple[str, str]]:
    """(factors file, what it holds) of each control, written beside the file (a preset's in the evaluate
    folder ``out``, kept there like the rows it scores) with the same scheme and model identity: the file's
    geometric-mean factor in every layer and band (``uniform-mean/``: the amount of scaling without its
    pattern) and, for band-wise factors, each band's geometric mean over the layers in every layer
    (``band-mean/``: the band pattern without the layer pattern, a by-parts rule like YaRN's)."""
    import numpy as np

    from lpes_framework.model.presets import is_preset
    from lpes_framework.model.factors_file import load_factors
    from lpes_framework.io.atomic import write_json_atomic
    from lpes_framework.position.bands import factor_table

    record = load_factors(factors)
    logs = np.log(factor_table(record["factors"]))
    mean = round(float(np.exp(logs.mean())), 4)
    layers, width = logs.shape
    # under bands a layer's factor is one number per band (the scheme takes nothing else)
    made = {"mean": ([mean if width == 1 else [mean] * width] * layers, f"its mean factor {mean} in every layer")}
    if width > 1:
        bands = [round(float(b), 4) for b in np.exp(logs.mean(axis=0))]
        made["band-mean"] = ([bands] * layers, f"its mean factor of each band {bands} in every layer")
    out_files = []
    for kind, (values, description) in made.items():
        folder = out / f"{factors}-{kind}" if is_preset(factors) else Path(factors).parent / f"uniform-{kind}"
        path = folder / "best_factors.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, {**record, "factors": values, "genome": None, "curve": {"name": "constant"},
                                 "metrics": {}})
        out_files.append((str(path), description))
    return out_files


def evaluate(files: list[str], length: int, windows: int, passkeys: int, threads: int,
             out: Path | None) -> tuple[dict, dict, dict]:
    """(evaluate payload, each factors file's method name, each method's perplexity rows): every method on
    ``windows`` perplexity windows and ``passkeys`` passkey haystacks of ``length`` tokens."""
    from lpes_framework.evaluate.methods import file_method_names
    from lpes_framework.evaluate.run import run_evaluate
    from lpes_framework.config import compose_config
    from lpes_framework.errors import LpesError

    factor = length / 8192
    cfg = compose_config("evaluate", [
        "model=smollm2", "split=test", f"threads={threads}", "progress=false", "resume=true",
        "allow_beyond_trained=true", "task=perplexity", "task.source=stdlib", f"task.window_tokens={length}",
        f"task.windows={windows}", "+task@extra_tasks.passkey=passkey", f"extra_tasks.passkey.context_tokens={length}",
        "extra_tasks.passkey.layout=queries", f"extra_tasks.passkey.samples_per_position={passkeys}",
        "methods.uniform=[]", f"methods.factors_files=[{','.join(files)}]", f"+methods.schemes.pi={{name:pi,global_factor:{factor}}}",
        "+methods.schemes.dynamic-ntk={name:ntk}", f"+methods.schemes.yarn={{name:yarn,global_factor:{factor}}}"])
    with tempfile.TemporaryDirectory() as tmp:
        folder = out or Path(tmp)
        try:
            payload = run_evaluate(cfg, folder)
        except LpesError as exc:
            raise SystemExit(f"error: {exc}") from None
        # the rows evaluate scored each method by (found by key): the folder's rows.jsonl may hold other
        # methods of the same name (every search's control is ``file uniform-mean``)
        rows = {m: payload["rows"][m]["perplexity"] for m in payload["methods"]}
    return payload, file_method_names(files), rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--factors", default=str(DEFAULT_FACTORS), help="layer-specific factors file or preset")
    parser.add_argument("--length", type=int, default=12288, help="tokens per window and haystack (> 8192)")
    parser.add_argument("--windows", type=int, default=3, help="perplexity windows")
    parser.add_argument("--passkeys", type=int, default=2, help="passkey haystacks (5 depths each)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--control", action="store_true", help="also score the controls: the file's scheme at its mean factor in every layer (and, band-wise, at each band's mean)")
    parser.add_argument("--out", type=Path, help="evaluate folder whose rows are reused (default: the committed "
                        "run of this length, runs/smollm2-extrapolation/<length>)")
    args = parser.parse_args()
    if args.length <= 8192:
        raise SystemExit(f"error: --length must exceed the trained window of 8192 tokens, got {args.length}")
    from lpes_framework.judging.buckets import bucket_logprobs, bucket_perplexity, bucket_ratio
    from lpes_framework.judging.stats import resample_draws

    out = args.out or Path("outputs/extrapolation") / str(args.length)  # the committed runs: RUN/<length>
    made = controls(args.factors, out) if args.control else []
    files = [args.factors] + [path for path, _ in made]
    payload, names, rows = evaluate(files, args.length, args.windows, args.passkeys, args.threads, out)
    name = names[args.factors]
    sums = {m: bucket_logprobs(per, [0, 8192, args.length]) for m, per in rows.items()}
    ppl = {m: bucket_perplexity(s) for m, s in sums.items()}
    best = min(UNIFORM, key=lambda m: ppl[m][1])
    picks = resample_draws(args.windows, 2000, 0)
    beyond, low, high = (v[1] for v in bucket_ratio(sums[name], sums[best], picks))
    inside = bucket_ratio(sums[name], sums["unpatched"], picks)[0][0]
    passkey = {m: 100 * sum(s["accuracy"] for s in payload["methods"][m]["scores"]["passkey"].values())
               / len(payload["methods"][m]["scores"]["passkey"]) for m in rows}
    print(f"{'method':36} {'ppl 0-8K':>9} {'ppl 8K-' + str(args.length // 1024) + 'K':>10} {'passkey %':>10}")
    for m in rows:
        print(f"{m:36} {ppl[m][0]:9.3f} {ppl[m][1]:10.3f} {passkey[m]:10.1f}")
    print(f"best uniform beyond the window: {best}; {name} / {best} beyond: {beyond:.4f} [{low:.4f}, {high:.4f}]")
    for path, description in made:
        control = names[path]
        (c_in, c_beyond), (c_in_low, c_low), (c_in_high, c_high) = bucket_ratio(sums[name], sums[control], picks)
        print(f"{name} / {control} (the same scheme, {description}): inside {c_in:.4f} "
              f"[{c_in_low:.4f}, {c_in_high:.4f}], beyond {c_beyond:.4f} [{c_low:.4f}, {c_high:.4f}]; passkey "
              f"{passkey[name] - passkey[control]:+.1f} points")
    print(f"beyond_ppl_ratio={beyond:.4f} ci_high={high:.4f} inside_ppl_ratio={inside:.4f} "
          f"passkey_delta={passkey[name] - passkey[best]:.1f}")


if __name__ == "__main__":
    main()
