#!/bin/bash
# Issue 37: which layers or bands of the widened schedule (runs/qwen-general-wider) cost RULER vt ~1K? Its matrix
# cell is -0.0094 [-0.015, -0.003] nats per token, concentrated where the chain starts early (depths 0 and 25:
# -0.03 and -0.02). The schedule with one layer third, or one band, put back to 1 (variants.py), scored with it
# and the unpatched model on the *validation* split (fresh contexts, not the matrix's test haystacks, so a variant
# picked here is still tested clean there): vt at depth 0 only (the larger cost), 40 haystacks (40 samples a
# method); then what the variants that lose the vt cost keep of the KV ~1K gain (the matrix's KV ~1K regime, 20
# haystacks x 10 positions). Four rounds: layer thirds and bands, the bands of layers 8-15, the long band of each
# of those layers, then layer 9's long band halfway and with its neighbours', and a fifth, the three resets that
# each helped together (variants.py; listed before the third round's last layers so that they are scored first).
# Resumable: run again and every method already scored is reused.
set -eo pipefail
V=runs/qwen-vt-ablation
LATER="layer-9-band-2-at-0.71 no-layers-9-11-band-2 no-layers-8-15-band-1-layer-9-band-2
  no-layers-8-15-band-1-layers-9-11-band-2"
VT_VARIANTS=${VT_VARIANTS:-"no-layers-0-7 no-layers-8-15 no-layers-16-23 no-band-0 no-band-1 no-band-2
  no-layers-8-15-band-0 no-layers-8-15-band-1 no-layers-8-15-band-2 $LATER
  $(printf 'no-layer-%s-band-2 ' {8..15})"}
KV_VARIANTS=${KV_VARIANTS:-"no-layers-8-15 no-layers-8-15-band-0 no-layers-8-15-band-1 no-layers-8-15-band-2
  $LATER $(printf 'no-layer-%s-band-2 ' {8..15})"}
files() { echo "runs/qwen-general-wider/best_factors.json$(printf ",$V/%s/best_factors.json" $@)"; }
python $V/variants.py
EVALUATE="python -m lpes_framework.commands.evaluate model=qwen2.5-0.5b pos=ntk +pos.bands=[128,2048] split=validation
  batch_size=10 record_every=10 resume=true progress=false methods.uniform=[]"
# STAGE=vt or STAGE=kv runs one of the two (side by side on two cores); both by default
[ "${STAGE:-vt}" = kv ] || $EVALUATE task=vt task.depths=[0] task.samples_per_position=40 hydra.run.dir=$V/scores \
    "methods.factors_files=[$(files $VT_VARIANTS)]" "$@"
[ "${STAGE:-kv}" = vt ] || $EVALUATE task=kv_retrieval task.layout=queries task.pairs=50 task.gold_positions=[0,5,11,16,22,27,33,38,44,49] \
    task.samples_per_position=20 hydra.run.dir=$V/kv-1k "methods.factors_files=[$(files $KV_VARIANTS)]" "$@"
