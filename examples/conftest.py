"""Opting into the testing kit's pytest plugin, as your project would: its fixtures (``kafka_broker``,
``create_topic``, ``unique_group`` ...) exist only in a run that asks for them."""

pytest_plugins = ["staticconsumer.testing.pytest_plugin"]
