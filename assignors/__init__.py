"""Pure partition assignors (range, roundrobin, sticky, cooperative-sticky), Java-compatible.

No I/O and no import of ``staticconsumer``: this package is usable on its own.
"""
