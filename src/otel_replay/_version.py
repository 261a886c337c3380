"""The package's version: a leaf module, so that the modules naming it (the tracer's scope,
the CLI's ``--version``, the run-summary cache) need not import the package's ``__init__``."""

__version__ = "0.1.0"
