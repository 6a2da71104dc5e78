"""PosScale (Yu et al., "Mitigate Position Bias in Large Language Models via Scaling a Single Dimension",
arXiv 2406.02536) as a position scheme: ``pos=posscale``.

One channel of the residual stream carries absolute position (the "positional hidden state": smooth and
monotonic in the token index across many layers). PosScale multiplies that channel by ``scale`` in the
attention input of a band of middle layers, for the tokens that read the context: the last prompt token
and every token after it. ``channels.py`` finds the channel, ``scheme.py`` applies the scaling. Layer
factors (LPES) apply on top through ``base``; at factor 1 the model differs from plain ``base`` only by
the scaled channel.
"""
