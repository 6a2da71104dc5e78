"""The by-position plot on synthetic scores: retrieval tasks are drawn against gold position, a task
without gold positions (perplexity) as one bar per method."""

import math

from lpes_framework.report import plots
from lpes_framework.judging.results import PositionStats


def stats(accuracy: float, logprob: float) -> PositionStats:
    return PositionStats(count=10, accuracy=accuracy, ci_low=0.0, ci_high=1.0, first_accuracy=accuracy,
                         logprob=logprob, logprob_se=0.0, first_logprob=logprob, perplexity=math.exp(-logprob))


def test_perplexity_is_a_bar_per_method_not_a_position_line(tmp_path, monkeypatch):
    kept = []
    monkeypatch.setattr(plots, "_finish", lambda fig, path, title="": kept.append(fig) or path)
    methods = {name: {"kv": {"0": stats(0.9, -0.1), "10": stats(0.5 + d, -0.4), "19": stats(0.8, -0.2)},
                      "perplexity": {"all": stats(0.0, -2.0 - d)}}
               for name, d in (("unpatched", 0.0), ("found", 0.1))}
    plots.plot_by_position(methods, tmp_path / "p.png")
    ppl, logprob, hidden = kept[0].axes[1:4]  # row-major: accuracy, perplexity / log-prob, (empty)
    assert [list(line.get_xdata()) for line in logprob.get_lines()] == [[0.0, 10.0, 19.0]] * 2
    assert [round(bar.get_height(), 4) for bar in ppl.patches] == [round(math.exp(2.0), 4), round(math.exp(2.1), 4)]
    assert [t.get_text() for t in ppl.get_xticklabels()] == ["unpatched", "found"]
    assert not hidden.axison and not ppl.get_lines()


def test_an_interval_a_hair_inside_its_point_is_drawn(tmp_path):
    """Found when a search's last step stopped at its plot: every context right at a position (accuracy 1) gave a
    Wilson bound of 0.9999999999999999, an error bar below 0, and matplotlib refused it after the whole run."""
    from dataclasses import replace

    from lpes_framework.judging.results import wilson

    assert all(low <= k / n <= high for n in range(1, 60) for k in range(n + 1) for low, high in [wilson(k, n)])
    crafted = replace(stats(1.0, -0.1), ci_low=0.5, ci_high=0.9999999999999999)  # as a file from elsewhere may hold
    assert plots.plot_by_position({"found": {"kv": {"0": crafted, "5": stats(0.5, -0.3)}}}, tmp_path / "p.png").exists()
