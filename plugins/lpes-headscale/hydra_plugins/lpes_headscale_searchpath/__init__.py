"""Adds this package's configs (conf/pos/headscale.yaml) to every lpes_framework Hydra command."""

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin


class LpesHeadScaleSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.append(provider="lpes-headscale", path="pkg://lpes_headscale.conf")
