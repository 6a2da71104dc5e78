"""The model: loading it (hub, folder or embedded GGUF), its identity, the factors file (``factors_file``), the
shipped presets (``presets``) and factors applied to it, saved and loaded again (``patched``)."""
