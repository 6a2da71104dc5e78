"""The model: loading it (hub, folder or embedded GGUF), its identity, and factors files applied to it."""
