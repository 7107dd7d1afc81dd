"""The async side of group membership: the loop that runs the sans-IO machine against a real coordinator,
on a thread of its own (thread.py is the boundary with the application's event loop).

Internal: not part of the public API, it may change in any release (docs/consumer.md, "What is
public", lists what is).
"""
