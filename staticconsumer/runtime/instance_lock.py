"""Which process on this host holds a static member's instance id: a lock file per (cluster, group,
instance id), held for the life of a consumer-protocol member.

Under the consumer protocol (KIP-848) the broker refuses a newcomer whose instance id an earlier member
still holds (UNRELEASED_INSTANCE_ID) until that member leaves or its session expires. When the earlier
member was a run of this instance on this host that was killed (SIGKILL, OOM, a crash), the lock tells
so: the kernel drops a dead process's ``flock``, and the file still names the member id it used. The
machine then releases that place (a leave with epoch -2 as that member) and takes it at once, keeping
the partitions and moving nobody, instead of waiting for the session timeout. A lock still held names
another live process on this host instead.

The files live under the system's temporary directory (``TMPDIR``); to survive a container restart,
point ``TMPDIR`` at a volume that outlives the container (an ``emptyDir`` in Kubernetes). Without
``fcntl`` (Windows) or without a writable directory there is no evidence, and the machine simply waits.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from pathlib import Path

from staticconsumer.membership import InstanceEvidence

log = logging.getLogger("staticconsumer.runtime")

DIRECTORY_NAME = "staticconsumer-instances"


def default_directory() -> Path:
    import tempfile  # not at import time: only a static consumer-protocol member locks (shutil, lzma)

    return Path(tempfile.gettempdir()) / DIRECTORY_NAME


def lock_path(directory: Path, cluster: str, group: str, instance_id: str) -> Path:
    """One file per (cluster, group, instance id); the name is a digest, so any id fits a file name."""
    digest = hashlib.sha256("\0".join((cluster, group, instance_id)).encode()).hexdigest()[:32]
    return directory / f"{digest}.json"


class InstanceLock:
    """Held from :meth:`acquire` to :meth:`release`; ``evidence`` is what it found when acquired."""

    def __init__(self, fd: int | None, path: Path | None, evidence: InstanceEvidence) -> None:
        self._fd = fd
        self.path = path
        self.evidence = evidence

    @property
    def held(self) -> bool:
        return self._fd is not None

    @classmethod
    def acquire(
        cls,
        *,
        cluster: str,
        group: str,
        instance_id: str,
        member_id: str,
        directory: Path | None = None,
    ) -> InstanceLock:
        """Take the lock and record ``member_id`` in it; never raises (no evidence on any failure)."""
        import json  # not at import time: only a consumer-protocol static member locks

        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            return cls(None, None, InstanceEvidence())
        where = directory or default_directory()
        path = lock_path(where, cluster, group, instance_id)
        try:
            where.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as error:
            log.info("no instance lock for %s (%s): %s", instance_id, path, error)
            return cls(None, None, InstanceEvidence())
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _read(fd).get("pid")
            os.close(fd)
            live = f"pid {holder}" if isinstance(holder, int) else "another process"
            log.warning(
                "group %s: instance id %s is held by %s on this host (lock %s)",
                group,
                instance_id,
                live,
                path,
            )
            return cls(None, path, InstanceEvidence(live_holder=live))
        previous = _read(fd).get("member_id")
        record = {"member_id": member_id, "pid": os.getpid(), "group": group, "instance_id": instance_id}
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(record).encode(), 0)
        except OSError as error:
            log.info("could not record member id in %s: %s", path, error)
        previous_member = previous if isinstance(previous, str) and previous != member_id else None
        return cls(fd, path, InstanceEvidence(previous_member_id=previous_member))

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)  # closing drops the flock


def _read(fd: int) -> dict[str, object]:
    import json  # not at import time: only a consumer-protocol static member reads its lock

    try:
        data = os.pread(fd, 65536, 0)
        value = json.loads(data) if data else {}
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
