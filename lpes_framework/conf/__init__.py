"""The packaged Hydra configs: a package so that Hydra finds them as lpes_framework.conf when installed."""
