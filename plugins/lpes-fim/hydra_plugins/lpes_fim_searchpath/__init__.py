"""Adds this package's configs (conf/pos/fim.yaml) to every lpes_framework Hydra command."""

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin


class LpesFimSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.append(provider="lpes-fim", path="pkg://lpes_fim.conf")
