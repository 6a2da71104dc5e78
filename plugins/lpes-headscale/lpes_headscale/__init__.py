"""Learned attention-head scales as an lpes_framework scheme: ``pos=headscale``.

SEAL (Lee et al., "SEAL: Scaling to Emphasize Attention for Long-Context Retrieval", arXiv 2501.15225)
learns one scale per attention head (or per head channel) by gradient descent on a few synthetic retrieval
samples and multiplies each head's output by it. Here the scales are genes like layer factors: the gradient
optimizer trains them on a task's search split with the same objective, budget and held-out test as an LPES
search, and the GA can search them too. A head's output enters the output projection ``o_proj`` as a block of
its input columns, so a scale is applied by a pre-hook on ``o_proj`` and can be folded into its weight
(``HeadScale.fold``): the folded model has exactly the original's operations. With ``base``, each layer's
factor is that scheme's RoPE factors followed by the head scales: layer factors and head scales searched as
one vector. ``pos=pear`` (``pear``, PEAR: arXiv 2409.19745) is the sparse variant: scales only on the
suppression heads that a copying proxy task finds (``suppression``), every other head held at 1.
"""
