"""agent-gateway: a reverse proxy that translates between AI-agent HTTP dialects."""

__version__ = "0.1.0"
