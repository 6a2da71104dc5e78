"""LPES factors inside lm-evaluation-harness: an ``lpes`` model type, lm-eval's ``hf`` backend with a
factors file applied to the loaded model before any request is scored.

    python -m lpes_framework.lm_eval --model lpes \\
        --model_args pretrained=Qwen/Qwen2.5-7B-Instruct,factors=best_factors.json --tasks ruler ...

lm-eval 0.4 finds model types only in its own registry (no entry points for outside packages), so this
module registers ``lpes`` on import and then runs lm-eval's own command line: every lm-eval option and
task works as with ``lm_eval``. From Python, import this module before ``lm_eval.simple_evaluate``.
"""

from __future__ import annotations

import sys

# lm-eval imports its stock backends only into an empty registry: load them before adding ours
import lm_eval.models  # noqa: F401
from lm_eval.api.registry import register_model
from lm_eval.models.huggingface import HFLM

from .export import apply_factors_file


@register_model("lpes")
class LpesLM(HFLM):
    """lm-eval's ``hf`` backend (every ``hf`` model argument works) plus ``factors``: a
    ``best_factors.json`` whose per-layer RoPE factors are installed on the model. Without ``factors``
    it is exactly ``hf``."""

    def __init__(self, pretrained, factors: str | None = None, **kwargs):
        super().__init__(pretrained=pretrained, **kwargs)
        self.lpes_patch = apply_factors_file(self.model, factors) if factors else None


def main(argv: list[str] | None = None) -> None:
    from lm_eval.__main__ import cli_evaluate

    sys.argv = ["lm_eval", *(sys.argv[1:] if argv is None else argv)]
    cli_evaluate()


if __name__ == "__main__":
    main()
