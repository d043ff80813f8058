"""codap-relay: a relay between language models and the CODAP data tool."""

__version__ = "1.0.0"
