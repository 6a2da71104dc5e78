#!/bin/bash
# Issue 24, the first 16K (2x) rows: the unpatched model and dynamic NTK on one test window and one passkey
# haystack (the time left in the session; ~3.3 min a 16K forward on the 2 cores). `../command.sh 16384` grows
# them to 3 windows and 2 haystacks and adds PI and YaRN (resume reuses these draws).
set -eo pipefail
run=runs/smollm2-extrapolation/16384
python -m lpes_framework.commands.evaluate model=smollm2 split=test threads=2 progress=false resume=true \
    allow_beyond_trained=true task=perplexity task.source=stdlib task.window_tokens=16384 task.windows=1 \
    +task@extra_tasks.passkey=passkey extra_tasks.passkey.context_tokens=16384 extra_tasks.passkey.layout=queries \
    extra_tasks.passkey.samples_per_position=1 methods.uniform=[] '+methods.schemes.dynamic-ntk={name:ntk}' \
    hydra.run.dir=$run
python -m lpes_framework.commands.analysis buckets $run --edges $(seq 0 2048 16384) --versus dynamic-ntk > $run/buckets.txt
