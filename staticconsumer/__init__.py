"""staticconsumer: an asyncio Kafka consumer that owns static group membership (KIP-345/394/814).

See README.md and docs/consumer.md.
"""

from staticconsumer.admin import GroupAdmin
from staticconsumer.consumer import (
    ConsumerRebalanceListener,
    ConsumerStoppedError,
    DuplicateInstanceIdError,
    StaticConsumer,
)
from staticconsumer.errors import (
    FencedInstanceIdError,
    SettingsError,
    StaticConsumerError,
    StaticMembershipUnsupportedError,
)
from staticconsumer.membership import (
    CommitFailedError,
    OffsetAndMetadata,
    OffsetRegressionError,
    TopicPartition,
)
from staticconsumer.settings import Settings

__version__ = "0.1.0.dev0"

__all__ = [
    "CommitFailedError",
    "ConsumerRebalanceListener",
    "ConsumerStoppedError",
    "DuplicateInstanceIdError",
    "FencedInstanceIdError",
    "GroupAdmin",
    "OffsetAndMetadata",
    "OffsetRegressionError",
    "Settings",
    "SettingsError",
    "StaticConsumer",
    "StaticConsumerError",
    "StaticMembershipUnsupportedError",
    "TopicPartition",
]
