"""No experiment logging (the default): the run directory's files are the record."""

from ...registry import LOGGERS
from .base import Logger


@LOGGERS.plugin
class NoLogger(Logger):
    pass
