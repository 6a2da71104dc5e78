"""Found in the Middle (Hsieh et al., "Found in the Middle: Calibrating Positional Attention Bias Improves
Long Context Utilization", ACL Findings 2024, arXiv 2406.16008) as a position scheme: ``pos=fim``.

The attention a position gets when its content says nothing is the model's positional bias; subtracting
it leaves attention by relevance. In the upper half of the layers, the reading tokens' attention to the
context (the last prompt token and everything after it) becomes ``max(a - strength * prior, 0)``,
renormalised to the context's original attention mass; ``prior`` is the same tokens' attention over a
content-free context of the same length. See ``scheme.py`` for how this differs from the paper.
"""
