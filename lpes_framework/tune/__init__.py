"""``lpes tune``: the recipe from a model to a shippable schedule (``recipe``), the split-access log that shows
the test split was read once (``access``), the diagnosis (``diagnosis``), the repairs (``repair``) and shipping
(``ship``: presets and the self-contained export, which ``lpes preset`` and ``lpes export`` use too)."""
