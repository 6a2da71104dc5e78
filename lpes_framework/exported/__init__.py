"""The files an export copies into a model folder, so that the folder runs without lpes_framework: they import
only the standard library, torch and (the modeling file) transformers. ``lpes_tables`` is also the one source
of the rotary cos/sin the framework's patch computes, and of what the vLLM plugin serves (it ships the same
file)."""
