"""The one error type of the example: a problem with the model files or the input."""


class ModelError(Exception):
    """Raised with a message naming the file (and tensor) at fault."""
