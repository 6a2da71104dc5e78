"""The transfer matrix: does a schedule searched on one task and length hold on others? Rows are methods
(unpatched, the best uniform NTK, the band-wise key-value preset, the per-frequency one shipped as the default
since, the general preset once it exists, Found-in-the-Middle and PosScale as tuned in runs/qwen-competitors);
columns are held-out tasks x lengths on Qwen2.5-Coder-0.5B's test split. Per cell: the task's own metric
(exact match, teacher-forced) and the gold log-prob per token, each as the method minus unpatched with a 95%
paired bootstrap interval over haystacks (``judging.stats``). Each column is an evaluate folder under
``--out``: methods already scored there are reused, so the matrix grows across runs and sessions
(``--columns`` and ``--methods`` score a part). Every call ends on the whole matrix so far, put together from
what the columns' rows.jsonl hold, found as a scoring would reuse them, with a blank cell where a method is not
scored on all of a column's haystacks (``--report`` scores nothing and shows only that). A heat map (methods x
columns, colour = log-prob delta, * where its interval excludes 0) goes to ``--out/transfer.png``. Each column's
cost is read from what its scorings recorded (seconds a sample on their worker), with the matrix's cost from
scratch on this machine. Last line, for the summarised row (``--row``; the general preset, or the key-value
preset until it exists):
columns=<n> harmed=<columns whose log-prob interval lies below 0> helped=<above 0> mean_delta=<mean log-prob
delta over columns, nats per token> kv_middle_gain=<points, KV ~1K> kv_ci_low=<its lower bound>."""

from __future__ import annotations

import argparse
from pathlib import Path

import common  # noqa: F401  (puts the repository on the path)
from lpes_framework.commands.cli import one_line_errors
from lpes_framework.io.store import JsonLog

RUN = Path("runs/transfer")  # the committed matrix: --report --out runs/transfer prints it
OUT = Path("outputs/transfer")  # where a scoring run writes unless --out says otherwise
KV_PRESET = "qwen2.5-coder-0.5b"  # the band-wise KV preset the matrix and the general search started from
PERFREQ_PRESET = "qwen2.5-coder-0.5b-perfreq"  # the shipped default since (lpes retest)
GENERAL_PRESET = "qwen2.5-coder-0.5b-general"
COMPETITORS = Path("runs/qwen-competitors")
MDQA = Path("runs/qwen-transfer")
KV_POSITIONS = [0, 5, 11, 16, 22, 27, 33, 38, 44, 49]
DEPTHS = [0, 25, 50, 75, 100]
KV = {"layout": "queries"}  # 8-hex keys, the answer turn opened by a quote: the defaults


def columns() -> dict:
    """The matrix's columns (``lpes_framework.matrix.Column``); the KV ~1K column is the preset's own held-out
    regime (its perplexity guard included), so the rows of its re-test (runs/qwen-gradient-bands/heldout) are
    reused there. The queries layouts (one context a draw, asked at every depth: a fifth of the forwards) stand
    beside the columns they stand for; their MDQA documents generated (source=capitals) as the file's were."""
    from lpes_framework.matrix import Column

    ruler = {f"{task}-{k}k{twin}": Column(f"{task}-{k}k{twin}", task, {"context_tokens": 1024 * k, "depths": DEPTHS,
                                                                         **({"layout": "queries"} if twin else {})},
                                           60 if twin else 40)
             for twin in ("", "-queries") for task in ("niah_multikey_1", "niah_multivalue", "vt") for k in (1, 2)}
    kept = [
        Column("kv-1k", "kv_retrieval", KV | {"pairs": 50, "gold_positions": KV_POSITIONS}, 100,
               extra={"perplexity": ("perplexity", {})}),
        Column("kv-2k", "kv_retrieval", KV | {"pairs": 100, "gold_positions": [0, 11, 22, 33, 44, 55, 66, 77, 88, 99]}),
        Column("kv-4k", "kv_retrieval", KV | {"pairs": 200, "gold_positions": [0, 22, 44, 66, 88, 111, 133, 155, 177, 199]}),
        Column("mdqa-1k", "mdqa", {"path": f"{MDQA}/mdqa-capitals-20_docs.jsonl.gz", "documents": 20,
                                   "chat_template": False, "gold_positions": [0, 5, 10, 14, 19]}),
        Column("mdqa-2k", "mdqa", {"path": f"{MDQA}/mdqa-capitals-45_docs.jsonl.gz", "documents": 45,
                                   "chat_template": False, "gold_positions": [0, 11, 22, 33, 44]}),
        *(ruler[f"{task}-{k}k"] for task in ("niah_multikey_1", "niah_multivalue", "vt") for k in (1, 2)),
        *(Column(f"cwe-{k}k", "cwe", {"context_tokens": 1024 * k}) for k in (1, 2)),
        Column("mdqa-1k-queries", "mdqa_capitals", {"chat_template": False, "gold_positions": [0, 5, 10, 14, 19]}, 60),
        Column("mdqa-2k-queries", "mdqa_capitals", {"documents": 45, "chat_template": False,
                                                    "gold_positions": [0, 11, 22, 33, 44]}, 60),
        *(ruler[f"{task}-{k}k-queries"] for task in ("niah_multikey_1", "niah_multivalue", "vt") for k in (1, 2)),
    ]
    return {c.name: c for c in kept}


def methods(general: str | None, also: dict[str, str] | None = None) -> dict[str, str | None]:
    """Row label -> factors file (None: the unpatched model and the uniform scaling, scored by evaluate);
    ``also``: more rows (label -> factors file), e.g. learned head scales or a finer search's answer."""
    rows = {"unpatched": None, "uniform ntk 1.5": None, "KV preset": KV_PRESET, "per-frequency preset": PERFREQ_PRESET}
    if general:
        rows["general preset"] = general
    rows["Found-in-the-Middle"] = str(COMPETITORS / "fim-best" / "best_factors.json")
    rows["PosScale"] = str(COMPETITORS / "posscale-best" / "best_factors.json")
    return rows | (also or {})


def base_config(threads: int):
    """Qwen2.5-Coder-0.5B under the KV preset's band-wise NTK (a uniform factor ignores the bands)."""
    from omegaconf import open_dict

    from lpes_framework.config import compose_config
    from lpes_framework.model.factors_file import load_factors

    cfg = compose_config("evaluate", ["model=qwen2.5-0.5b", "pos=ntk", f"threads={threads}", "batch_size=10"])
    with open_dict(cfg):
        cfg.pos.merge_with(load_factors(KV_PRESET)["scheme"])
    return cfg


def column_config(name: str, rows: dict[str, str | None], threads: int, haystacks: int | None, seed: int = 0,
                  split: str = "test"):
    """The evaluate config of one column and its rows; ``seed`` draws the column's haystacks of ``split``."""
    from lpes_framework.matrix import column_config as config

    return config(base_config(threads), columns()[name], split=split, seed=seed, haystacks=haystacks,
                  files=[f for f in rows.values() if f], baseline="unpatched" in rows,
                  uniform=[1.5] if "uniform ntk 1.5" in rows else [])


SIZE_FILE = "haystacks.json"  # a column's haystack count, chosen from a validation pilot before its test was scored


def column_haystacks(folder: Path, given: int | None) -> int | None:
    """The haystack count a column is scored and reported with: ``--haystacks`` where given, else the count its
    pilot chose (``SIZE_FILE``), else None (the column's own default)."""
    from lpes_framework.io.store import read_json

    if given or not (folder / SIZE_FILE).exists():
        return given
    record = read_json(folder / SIZE_FILE)
    draws = record.get("draws") if isinstance(record, dict) else None
    if not isinstance(draws, int) or isinstance(draws, bool) or draws < 1:
        raise SystemExit(f"error: {folder / SIZE_FILE} holds no haystack count (draws: {draws!r})")
    return draws


def choose_haystacks(name: str, rows: dict[str, str | None], args, folder: Path) -> int:
    """The column's test haystack count for ``--precision``: its rows scored on ``--pilot`` validation haystacks
    (``folder``/pilot), the count whose paired log-prob intervals reach the precision (``sample_size``), capped
    at ``--cap``; written to ``SIZE_FILE`` before any test haystack is scored, and kept from then on (a test
    column is never grown after its interval is seen)."""
    from lpes_framework.evaluate.run import run_evaluate
    from lpes_framework.judging.results import paired
    from lpes_framework.judging.sample_size import sample_size
    from lpes_framework.matrix import column_task
    from lpes_framework.io.atomic import write_json_atomic

    recorded = column_haystacks(folder, None)
    if recorded:
        return recorded
    pilot = run_evaluate(column_config(name, rows, args.threads, args.pilot, args.seed, split="validation"),
                         folder / "pilot")["rows"]
    base = pilot["unpatched"]
    task = column_task(base)  # not the perplexity guard that rides on KV ~1K
    size = sample_size([paired(by_task[task], base[task]) for method, by_task in pilot.items() if method != "unpatched"],
                       logprob_half_width=args.precision, cap=args.cap)
    folder.mkdir(parents=True, exist_ok=True)
    write_json_atomic(folder / SIZE_FILE, size.as_dict() | {"pilot_split": "validation", "seed": args.seed,
                                                            "methods": sorted(pilot)})
    print(f"{name}: {size.draws} haystacks for a {args.precision} nats/token half-width (pilot of "
          f"{size.pilot_draws}: spread {size.sd_logprob:.4f}; {size.needed} needed, cap {args.cap})")
    return size.draws


@one_line_errors  # a damaged or crafted rows.jsonl under --out is one line, as in the lpes commands
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=OUT, help=f"the matrix folder (default {OUT}; the committed one: {RUN})")
    all_columns = list(columns())
    parser.add_argument("--columns", nargs="*", default=all_columns, choices=all_columns)
    parser.add_argument("--methods", nargs="*", help="row labels to score (default: all)")
    parser.add_argument("--general", help="the general preset (name or factors file); default: the shipped "
                        f"{GENERAL_PRESET} where it exists")
    parser.add_argument("--row", help="the row the last line summarises (default: general preset, else KV preset)")
    parser.add_argument("--also", nargs="*", default=[], metavar="LABEL=FILE",
                        help="more rows: a label and a factors file each (e.g. 'head scales=runs/qwen-headscale/"
                             "search/best_factors.json'; plugin schemes need their package installed)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0, help="draw other test haystacks (a fresh test of rows chosen "
                        "after looking at the matrix; e.g. with --out runs/transfer-seed1)")
    parser.add_argument("--haystacks", type=int, help="haystacks a column (default: each column's own, >= 40, or "
                        "the count --precision chose)")
    parser.add_argument("--precision", type=float, help="choose each new column's haystack count from a validation "
                        "pilot: the count whose 95%% log-prob intervals are this wide on each side (nats per token; "
                        "e.g. 0.01), recorded in the column before its test haystacks are scored")
    parser.add_argument("--pilot", type=int, default=10, help="validation haystacks of the pilot (--precision)")
    parser.add_argument("--cap", type=int, default=100, help="most haystacks --precision may choose")
    parser.add_argument("--markdown", action="store_true", help="also print the matrix as a Markdown table, one "
                        "line a column (for README and docs)")
    parser.add_argument("--report", action="store_true", help="score nothing: the matrix of the rows already "
                        "in the columns' rows.jsonl (a blank where a method lacks some; columns without one left out)")
    args = parser.parse_args()

    from lpes_framework.evaluate.methods import file_method_names
    from lpes_framework.evaluate.run import run_evaluate, scored_rows
    from lpes_framework.matrix import column_cells
    from lpes_framework.matrix.report import column_cost, cost_lines, heat_map, markdown, summary_line, table_lines
    from lpes_framework.model.presets import is_preset

    general = args.general or (GENERAL_PRESET if is_preset(GENERAL_PRESET) else None)
    also = dict(item.split("=", 1) for item in args.also if "=" in item)
    if len(also) != len(args.also):
        raise SystemExit("error: --also takes LABEL=FILE pairs")
    shadowed = sorted(set(also) & set(methods(general)))
    if shadowed:  # the built-in row would be replaced in every cell without a word
        raise SystemExit(f"error: --also labels {shadowed} are rows of the matrix already; give them other labels")
    rows = methods(general, also)
    if args.methods:
        unknown = set(args.methods) - set(rows)
        if unknown:
            raise SystemExit(f"error: unknown methods {sorted(unknown)}; valid: {', '.join(rows)}")
    if args.precision is not None:
        from lpes_framework.judging.sample_size import check_request

        check_request(args.precision, cap=args.cap, pilot=args.pilot)  # before any column is scored
    if not args.report:
        chosen = {k: v for k, v in rows.items() if not args.methods or k in args.methods or k == "unpatched"}
        for column in args.columns:
            folder = args.out / column
            haystacks = column_haystacks(folder, args.haystacks)
            if args.precision is not None and not haystacks:
                haystacks = choose_haystacks(column, chosen, args, folder)
            run_evaluate(column_config(column, chosen, args.threads, haystacks, args.seed), folder)
    # the matrix so far, every method's rows found as a scoring would reuse them: a scoring of a few methods or
    # columns still ends on the whole matrix (its heat map and last line), never on the part it scored
    names = file_method_names([f for f in rows.values() if f]) | {None: None}
    evaluated = {label: (names[f] if f else label) for label, f in rows.items()}  # label -> evaluate's method name
    table: dict[str, dict] = {label: {} for label in evaluated if label != "unpatched"}
    costs = {}
    shown = []
    for column in [c for c in (args.columns if args.report else all_columns) if JsonLog(args.out / c / "rows.jsonl").exists()]:
        per_method = scored_rows(column_config(column, rows, args.threads,
                                               column_haystacks(args.out / column, args.haystacks), args.seed),
                                 args.out / column)
        if "unpatched" not in per_method:  # a column still being scored: the rest of the matrix stands without it
            print(f"left out {column}: its unpatched row is not scored on all its haystacks yet")
            continue
        shown.append(column)
        costs[column] = column_cost(args.out / column, per_method["unpatched"])
        for label, cell in column_cells(per_method, evaluated).items():
            table[label][column] = cell
    if not shown:
        raise SystemExit(f"error: no column under {args.out} to report: none holds an unpatched row scored on all "
                         "its haystacks")
    scored = {label: cells for label, cells in table.items() if cells}
    if not scored:
        raise SystemExit(f"error: no method but unpatched is scored on all of a column's haystacks under {args.out}")
    print("\n".join(cost_lines(costs, len(rows))))
    print("\n".join(table_lines(scored, shown)))
    heat_map(scored, shown, args.out / "transfer.png",
             "Transfer: method minus unpatched, held out (* : 95% interval excludes 0)")
    row = args.row or ("general preset" if general else "KV preset")
    if row not in scored:
        raise SystemExit(f"error: no row '{row}' to summarise")
    print(f"summarised row: {row}")
    print(summary_line(scored[row], "kv-1k"))
    if args.markdown:
        print(markdown(scored, shown))


if __name__ == "__main__":
    main()
