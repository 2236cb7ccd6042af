"""kb-eval: measure a knowledge base's search against a golden query set."""

__version__ = "1.0.0"
