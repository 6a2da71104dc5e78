"""Run-folder files: atomic writes, strict JSON, the evaluation log and checkpoints, the run record."""
