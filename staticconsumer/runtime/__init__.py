"""The async side of group membership: the loop that runs the sans-IO machine against a real coordinator,
on a thread of its own (thread.py is the boundary with the application's event loop)."""
