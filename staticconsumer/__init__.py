"""staticconsumer: an asyncio Kafka consumer that owns static group membership.

The public API grows issue by issue; see README.md and docs/.
"""

__version__ = "0.1.0.dev0"
