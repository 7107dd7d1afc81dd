"""Shared inputs for the settings tests: a minimal valid environment and real TLS files."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

KEY_PASSWORD = "key-pass"
"""The password of ``tls_files["encrypted_key"]``."""


@pytest.fixture
def minimal_env() -> dict[str, str]:
    """Bootstrap servers and a group id: everything else may take its default."""
    return {"KAFKA_BOOTSTRAP_SERVERS": "broker-0:9092", "KAFKA_GROUP_ID": "orders"}


@pytest.fixture
def key_password() -> str:
    """The password that opens ``tls_files["encrypted_key"]``."""
    return KEY_PASSWORD


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A self-signed certificate (doubling as the CA), its plain key and the same key encrypted."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.fail("openssl is needed to make test certificates (apt-get install openssl)")
    folder = tmp_path_factory.mktemp("tls")
    files = {name: folder / f"{name}.pem" for name in ("cert", "key", "encrypted_key")}
    subprocess.run(
        [
            *(openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=broker"),
            *("-keyout", str(files["key"]), "-out", str(files["cert"])),
        ],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            *(openssl, "pkey", "-in", str(files["key"]), "-aes256", "-passout", f"pass:{KEY_PASSWORD}"),
            *("-out", str(files["encrypted_key"])),
        ],
        check=True,
        capture_output=True,
    )
    return files
