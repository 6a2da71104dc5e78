"""What a run shows: plots, the report and results files, and the experiment loggers."""
