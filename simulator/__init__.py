"""roofsim's engines, analyses, measurement harness and CLI."""
__version__ = "0.1.0"
