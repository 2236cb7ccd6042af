"""kb-eval: measure a knowledge base's search against a golden query set."""

__version__ = "0.1.0"
