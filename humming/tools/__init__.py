"""Developer tools run as ``python -m humming.tools.<name>`` (compile: reproduce one kernel compile)."""
