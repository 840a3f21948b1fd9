"""The package version: the one place it is written (setup.cfg reads it from here)."""

__version__ = "0.2.0.dev0"
