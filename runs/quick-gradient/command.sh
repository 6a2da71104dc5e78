#!/bin/bash
# make demo's live search (issue 23): the gradient optimizer on the embedded SmolLM2 (experiment=quick-gradient),
# run alone on the 2 cores on 2026-12-02 with progress bars on, as make demo runs it: 419 s wall (`time`).
python -m lpes_framework experiment=quick-gradient hydra.run.dir=runs/quick-gradient
