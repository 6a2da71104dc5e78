"""Ms-PoE as an lpes_framework position scheme (a third-party plugin, installed on its own).

The scheme lives in ``lpes_mspoe.scheme``; this package stays import-light because Hydra imports it to
find ``conf/`` on every command.

Ms-PoE gives each attention head its own position scaling ratio, linearly spaced between ``min_ratio``
and ``max_ratio``, in every layer from ``start_layer`` on. Heads are ordered either as they come
(``sequential``) or by a position-awareness score from one eager attention pass on a calibration text:
heads that keep more attention on nearby tokens depend most on exact positions and get the smallest
ratios. Here the score of a head is the mean attention mass its queries put on the 16 most recent
tokens; this stands in for the original outlier-based score. The layer factor of LPES multiplies every
head's ratio, so ``pos=mspoe`` with factors 1.0 is the Ms-PoE baseline.

Grouped-query attention shares one key per group of query heads, and a query and its key must rotate
alike, so ratios are spread over key/value groups (equal to heads for multi-head attention).

How it patches: the layer's own rotation is made the identity (cos = 1, sin = 0), and forward hooks on
``q_proj`` and ``k_proj`` rotate each head with its own ratio. Architectures that normalise q/k after
the projection (Gemma3, Qwen3) or fuse the projections (Phi3) are refused.
"""
