"""Analyses of scored rows: methods paired by (haystack, position), several folders joined only when
their unpatched rows agree, blocks of haystacks, the log-prob interval and the noise floor."""

import json
import math

import pytest

from lpes_framework.evaluate.rows import folder_rows, logged_rows
from lpes_framework.judging.versus import noise_floor, versus
from lpes_framework.judging.results import paired, rows_to_json
from lpes_framework.judging.stats import logprob_bootstrap
from lpes_framework.errors import LpesError
from lpes_framework.judging.fitness import FitnessWeights
from lpes_framework.io.jsonio import dumps
from lpes_framework.registry import TASKS
from lpes_framework.scoring.base import ScoreRow


def rows(exact, logprob=-1.0, contexts=range(4), positions=(0, 5, 9)):
    return [ScoreRow(position=p, logprob=logprob, exact=exact(c, p), first=exact(c, p), first_logprob=logprob,
                     tokens=2, draw=c) for c in contexts for p in positions]


def write_folder(folder, methods):
    folder.mkdir()
    (folder / "rows.jsonl").write_text("".join(
        dumps({"key": name, "method": name, "rows": rows_to_json({"kv_retrieval": per})}) + "\n"
        for name, per in methods.items()))
    return folder


def test_methods_pair_by_sample_not_by_order():
    a = rows(lambda c, p: True)
    b = rows(lambda c, p: p != 5)[::-1]  # the same samples, another order
    mine, theirs = paired(a, b)
    assert [(r.draw, r.position) for r in mine] == [(r.draw, r.position) for r in theirs]
    assert sum(x.exact != y.exact for x, y in zip(mine, theirs)) == 4  # position 5 of each haystack


def test_versus_gives_middle_ends_positions_and_logprob_per_block():
    table = {"found": rows(lambda c, p: True, logprob=-0.5), "unpatched": rows(lambda c, p: p != 5 or c >= 2)}
    lines = versus(table, "found", [range(0, 2), range(2, 4), None])
    assert lines[0].startswith("found - unpatched (haystacks 0-1): middle +100.0 [+100.0, +100.0]  ends +0.0 / +0.0"
                               "  gold log-prob +0.5000 [+0.5000, +0.5000]")
    assert lines[1].startswith("found - unpatched (haystacks 2-3): middle +0.0 [+0.0, +0.0]")
    assert lines[2].startswith("found - unpatched (4 haystacks): middle +50.0")
    with pytest.raises(LpesError, match="no method 'nope'"):
        versus(table, "nope")


def test_the_logprob_interval_resamples_haystacks():
    a, b = rows(lambda c, p: True, logprob=-0.5), rows(lambda c, p: True, logprob=-1.0)
    interval = logprob_bootstrap(a, b)
    assert (interval.delta, interval.low, interval.high) == (0.5, 0.5, 0.5)


def test_folders_join_only_when_their_unpatched_rows_agree(tmp_path):
    base = rows(lambda c, p: p != 5)
    first = write_folder(tmp_path / "a", {"unpatched": base, "found": rows(lambda c, p: True)})
    second = write_folder(tmp_path / "b", {"unpatched": base[:6], "other": rows(lambda c, p: False, contexts=range(2))})
    joined = folder_rows([first, second], "kv_retrieval")
    assert sorted(joined) == ["found", "other", "unpatched"] and joined["unpatched"] == logged_rows(first)[
        "unpatched"]["kv_retrieval"]
    assert versus(joined, "found", [None])[1].startswith("found - other (2 haystacks): middle +100.0")
    changed = write_folder(tmp_path / "c", {"unpatched": rows(lambda c, p: True)})
    with pytest.raises(LpesError, match="unpatched rows differ"):
        folder_rows([first, changed], "kv_retrieval")


def test_the_noise_floor_is_the_spread_of_the_fitness_over_small_subsets():
    task = {"kv_retrieval": TASKS.build({"name": "kv_retrieval", "pairs": 10, "gold_positions": [0, 5, 9]})}
    table = {"unpatched": {"kv_retrieval": rows(lambda c, p: p != 5, contexts=range(20))},
             "same": {"kv_retrieval": rows(lambda c, p: p != 5, contexts=range(20))}}
    line, = noise_floor(table, task, FitnessWeights.defaults(), sample=5, subsets=20)
    assert line.startswith("same: 20 haystacks +0.0000 [+0.0000, +0.0000]; first 5 +0.0000")
    assert line.endswith("sd 0.0000, range +0.0000 to +0.0000; separation +nan")


def test_the_noise_floor_pairs_each_method_on_the_haystacks_it_shares_with_unpatched():
    """A column grown for unpatched alone (100 haystacks beside a method's 40) was a KeyError traceback."""
    task = {"kv_retrieval": TASKS.build({"name": "kv_retrieval", "pairs": 10, "gold_positions": [0, 5, 9]})}
    table = {"unpatched": {"kv_retrieval": rows(lambda c, p: p != 5, contexts=range(20))},
             "fewer": {"kv_retrieval": rows(lambda c, p: True, contexts=range(8))},
             "two": {"kv_retrieval": rows(lambda c, p: True, contexts=range(2))}}
    fewer, two = noise_floor(table, task, FitnessWeights.defaults(), sample=5, subsets=20)
    assert fewer.startswith("fewer: 8 haystacks +")
    assert two == "two: 2 haystacks shared with unpatched, fewer than --sample 5"
    with pytest.raises(LpesError, match="at least 1"):
        noise_floor(table, task, FitnessWeights.defaults(), sample=0)
    with pytest.raises(LpesError, match="no unpatched rows"):
        noise_floor({"two": table["two"]}, task, FitnessWeights.defaults())


def windows(token_logprobs):
    return [ScoreRow(position="all", logprob=sum(lp) / len(lp), exact=False, first=False, first_logprob=lp[0],
                     tokens=len(lp), token_logprobs=tuple(lp), draw=w) for w, lp in enumerate(token_logprobs)]


def test_bucket_sums_put_token_k_at_position_k_plus_1():
    from lpes_framework.judging.buckets import bucket_logprobs

    sums = bucket_logprobs(windows([[-1, -2, -3, -4, -5, -6]]), [0, 3, 7, 100])
    assert sums[0].tolist() == [[-3, -18, 0]]  # positions 1-2, 3-6, none
    assert sums[1].tolist() == [[2, 4, 0]]
    for edges in ([0, 0, 4], [-5, 100], [0]):  # a negative position labelled a bucket "-5-100" once
        with pytest.raises(LpesError, match="rising strictly"):
            bucket_logprobs(windows([[-1.0]]), edges)


def test_bucket_table_gives_perplexity_and_paired_ratios_per_bucket():
    from lpes_framework.judging.buckets import bucket_table

    base = [[-1.0, -1.0, -2.0, -2.0], [-1.0, -1.0, -3.0, -1.0]]
    better = [[lp if k < 2 else lp + 0.5 for k, lp in enumerate(w)] for w in base]  # beyond position 2 only
    lines = bucket_table({"unpatched": windows(base), "scaled": windows(better)}, [0, 3, 5, 9], "unpatched")
    assert lines[0] == "perplexity by position bucket (2 windows; 95% interval over windows)"
    assert lines[1].startswith("unpatched: 0-3: 2.718 [2.718, 2.718]  3-5: 7.389")
    assert "5-9" not in lines[1]  # no window reaches position 5
    # the same texts, every token beyond the bucket edge 0.5 nats more likely: a ratio of exp(-0.5) everywhere
    assert lines[3] == "scaled / unpatched: 0-3: 1.0000 [1.0000, 1.0000]  3-5: 0.6065 [0.6065, 0.6065]"
    with pytest.raises(LpesError, match="scored other windows"):
        bucket_table({"unpatched": windows(base), "scaled": windows(better[:1])}, [0, 3])
    with pytest.raises(LpesError, match="no method 'uniform pi 2'"):
        bucket_table({"unpatched": windows(base)}, [0, 3], "uniform pi 2")


def test_committed_rows_written_before_the_draw_field_still_load():
    import lzma
    from pathlib import Path

    folder = Path(__file__).resolve().parent.parent / "runs" / "qwen15-baseline-2k"
    assert '"context": 0' in lzma.decompress((folder / "rows.jsonl.xz").read_bytes()).decode()  # the field's old name
    rows = logged_rows(folder)["unpatched"]["kv_retrieval"]
    draws = sorted({r.draw for r in rows})
    assert draws == list(range(len(draws))) and len(draws) > 1
    assert all(sum(r.draw == d for r in rows) == len(rows) // len(draws) for d in draws)  # every position per draw


def test_every_committed_run_log_and_factors_file_reads_back():
    # the repository's own results pass the schemas a received file must: two logs written before non-finite
    # numbers were stored as null held NaN tokens, and status refused them as damaged
    from pathlib import Path

    from lpes_framework.io.store import read_evaluations, read_rows
    from lpes_framework.model.factors_file import load_factors
    from lpes_framework.position import SCHEMES

    runs = Path(__file__).resolve().parent.parent / "runs"
    # sealed or plain (lpes seal): a log is named by its plain path either way
    every = {p.with_name(p.name.removesuffix(".xz")) for p in runs.rglob("*.jsonl*") if p.suffix in (".jsonl", ".xz")}
    logs, factors = sorted(p for p in every if p.name == "evaluations.jsonl"), sorted(runs.rglob("best_factors.json"))
    assert len(logs) > 10 and len(factors) > 10
    for log in logs:
        assert read_evaluations(log)
    installed = SCHEMES.names()  # a plugin scheme's files (head scales) are read where its package is installed
    for path in factors:
        if json.loads(path.read_text())["scheme"]["name"] in installed:
            assert load_factors(str(path))["factors"]
    rows = [p for p in every if p.name in ("rows.jsonl", "heldout.jsonl")]
    assert len(rows) > 10 and all(list(read_rows(p)) for p in rows)


def test_a_rows_record_that_holds_a_sample_twice_is_a_damaged_line(tmp_path):
    # a row copied in place of another was paired twice, and the one it replaced with nothing, silently
    rows_a = rows(lambda c, p: True)
    folder = write_folder(tmp_path / "f", {"unpatched": rows(lambda c, p: False), "scaled": rows_a[:-1] + rows_a[:1]})
    with pytest.raises(LpesError, match="holds draw 0 at gold position 0 twice"):
        folder_rows([folder], "kv_retrieval")


def test_the_bucket_plot_draws_every_method_by_bucket_and_the_passkey_by_depth(tmp_path, monkeypatch):
    from lpes_framework.commands.analysis import plot_bucket_folders
    from lpes_framework.report import plots

    kept = []
    monkeypatch.setattr(plots, "_finish", lambda fig, path, title="": kept.append(fig) or path)
    base = [[-1.0, -1.0, -2.0, -2.0], [-1.0, -1.0, -3.0, -1.0]]
    folder = tmp_path / "run"
    folder.mkdir()
    passkey = {"unpatched": rows(lambda c, p: p == 9, contexts=range(2)), "scaled": rows(lambda c, p: True, contexts=range(2))}
    (folder / "rows.jsonl").write_text("".join(
        dumps({"key": m, "method": m, "rows": rows_to_json({"perplexity": windows(w), "passkey": passkey[m]})}) + "\n"
        for m, w in (("unpatched", base), ("scaled", [[lp + 0.5 for lp in w] for w in base]))))
    plot_bucket_folders([folder], [0, 3, 5, 9], tmp_path / "b.png", window=3)
    ppl, exact, logprob = kept[0].axes
    lines = [bars.lines[0] for bars in ppl.containers]  # each method's line, without its error caps
    assert [list(line.get_xdata()) for line in lines] == [[1.5, 4.0]] * 2  # bucket 5-9 is never reached
    assert [round(y, 4) for y in lines[1].get_ydata()] == [round(math.exp(0.5), 4), round(math.exp(1.5), 4)]
    assert ppl.get_yscale() == "log"
    assert [list(line.get_ydata()) for line in exact.get_lines()] == [[0.0, 0.0, 100.0], [100.0, 100.0, 100.0]]
    assert len(logprob.get_lines()) == 2
    # a folder without passkey rows: the perplexity panel alone
    (folder / "rows.jsonl").write_text(dumps({"key": "u", "method": "unpatched", "rows": rows_to_json(
        {"perplexity": windows(base)})}) + "\n")
    plot_bucket_folders([folder], [0, 3, 5, 9], tmp_path / "c.png")
    assert len(kept[1].axes) == 1
    # beside a folder that scored the passkey, one that did not adds its perplexity and no depth rows
    other = tmp_path / "other"
    other.mkdir()
    (other / "rows.jsonl").write_text(dumps({"key": "s", "method": "scaled", "rows": rows_to_json(
        {"perplexity": windows(base), "passkey": passkey["scaled"]})}) + "\n")
    from lpes_framework.commands import analysis

    reads = []
    read = analysis.logged_rows
    monkeypatch.setattr(analysis, "logged_rows", lambda f: reads.append(f) or read(f))
    plot_bucket_folders([folder, other], [0, 3, 5, 9], tmp_path / "d.png")
    assert [line.get_label() for line in kept[2].axes[1].get_lines()] == ["scaled"]
    assert reads == [folder, other]  # each rows.jsonl read once for both panels
