"""Questions to ask a broker directly: its ApiVersions, a group's offsets partition and coordinator."""

from __future__ import annotations

import socket
import struct
from collections.abc import Mapping
from typing import Any

from staticconsumer.protocol.api_keys import API_NAMES as API_NAMES

_INT32_MIN = -(1 << 31)


def java_string_hash(text: str) -> int:
    """Java's String.hashCode (over UTF-16 code units, int32 arithmetic)."""
    value = 0
    data = text.encode("utf-16-be")
    for index in range(0, len(data), 2):
        value = (31 * value + int.from_bytes(data[index : index + 2], "big")) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def kafka_abs(value: int) -> int:
    """Kafka's ``Utils.abs``: ``Math.abs``, except that Integer.MIN_VALUE (whose negation overflows) is 0.

    Not ``value & 0x7fffffff``: for a negative hash that gives ``value + 2**31``, a different number.
    """
    return 0 if value == _INT32_MIN else abs(value)


def offsets_partition_for(group: str, partitions: int) -> int:
    """The __consumer_offsets partition (and so the coordinator) of a group, as Kafka computes it:
    ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``."""
    return kafka_abs(java_string_hash(group)) % partitions


def probe_groups(partitions: int) -> list[str]:
    """One group name per offsets-topic partition."""
    found: dict[int, str] = {}
    index = 0
    while len(found) < partitions:
        name = f"__staticconsumer_probe_{index}"
        found.setdefault(offsets_partition_for(name, partitions), name)
        index += 1
    return [found[p] for p in sorted(found)]


async def find_coordinator(
    bootstrap_servers: str, group: str, *, client_kwargs: Mapping[str, Any] | None = None
) -> int:
    """The node id the cluster names as ``group``'s coordinator now (FindCoordinator, any broker).

    Raises ``RuntimeError`` with the broker's error code while no coordinator is available (for
    example while the offsets partition has no leader).
    """
    from staticconsumer import _aiokafka

    client = _aiokafka.new_client(
        bootstrap_servers=bootstrap_servers, request_timeout_ms=10_000, **(client_kwargs or {})
    )
    await client.bootstrap()
    try:
        response = await _aiokafka.find_coordinator(client, group)
    finally:
        await client.close()
    if response.error_code:
        raise RuntimeError(f"FindCoordinator({group!r}) failed with error code {response.error_code}")
    return int(response.node_id)


def broker_api_versions(bootstrap_servers: str, timeout: float = 10.0) -> dict[int, tuple[int, int]]:
    """Ask the broker for its ApiVersions (v0, over a plain socket): {api key: (min, max)}.

    Deliberately independent of aiokafka and of our codec, so a test can compare the broker's view
    with the Java oracle's without either side's code in the middle.
    """
    host, _, port = bootstrap_servers.split(",")[0].rpartition(":")
    client_id = b"staticconsumer-probe"
    header = struct.pack(">hhih", 18, 0, 1, len(client_id)) + client_id
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(header)) + header)
        size = struct.unpack(">i", _read_exactly(sock, 4))[0]
        payload = _read_exactly(sock, size)
    correlation_id, error_code, count = struct.unpack_from(">ihi", payload, 0)
    if correlation_id != 1 or error_code != 0:
        raise RuntimeError(f"ApiVersions failed: correlation {correlation_id}, error code {error_code}")
    versions: dict[int, tuple[int, int]] = {}
    for index in range(count):
        key, low, high = struct.unpack_from(">hhh", payload, 10 + 6 * index)
        versions[key] = (low, high)
    return versions


ELECTION_NOT_NEEDED = 84


def elect_preferred_leaders(bootstrap_servers: str, timeout: float = 30.0) -> int:
    """ElectLeaders v1 (preferred, every partition) over a plain socket; returns how many partitions
    changed leader. Brings leadership back to each partition's first replica after restarts.

    Hand-encoded (aiokafka has no ElectLeaders and our codec covers only the group APIs): the request
    is election type 0, a null topic list (all partitions) and a timeout; the response is checked for
    its top-level error and for per-partition errors other than ELECTION_NOT_NEEDED.
    """
    host, _, port = bootstrap_servers.split(",")[0].rpartition(":")
    client_id = b"staticconsumer-probe"
    header = struct.pack(">hhih", 43, 1, 1, len(client_id)) + client_id
    body = struct.pack(">bii", 0, -1, int(timeout * 1000))
    with socket.create_connection((host, int(port)), timeout=timeout + 5) as sock:
        sock.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
        size = struct.unpack(">i", _read_exactly(sock, 4))[0]
        payload = _read_exactly(sock, size)
    _, _, error_code, topics = struct.unpack_from(">iihi", payload, 0)
    if error_code:
        raise RuntimeError(f"ElectLeaders failed with error code {error_code}")
    offset, elected, failed = 14, 0, []
    for _ in range(topics):
        (name_length,) = struct.unpack_from(">h", payload, offset)
        topic = payload[offset + 2 : offset + 2 + name_length].decode()
        offset += 2 + name_length
        (partitions,) = struct.unpack_from(">i", payload, offset)
        offset += 4
        for _ in range(partitions):
            partition, code, message_length = struct.unpack_from(">ihh", payload, offset)
            offset += 8 + max(message_length, 0)
            if code == 0:
                elected += 1
            elif code != ELECTION_NOT_NEEDED:
                failed.append((topic, partition, code))
    if failed:
        raise RuntimeError(f"ElectLeaders: partitions not elected (topic, partition, error code): {failed}")
    return elected


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("broker closed the connection mid-response")
        chunks.extend(chunk)
    return bytes(chunks)
