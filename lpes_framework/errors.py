"""One exception type for every user-facing mistake: the CLI prints it as one line."""


class LpesError(ValueError):
    """Bad input (config, factors, model, file): reported as one line before expensive work starts."""
