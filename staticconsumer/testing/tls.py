"""A throwaway CA and a broker certificate for localhost/127.0.0.1, made with the JDK's keytool.

The embedded broker's TLS listeners need a keystore; clients need the CA that signed it. Both are made
once per process (keytool starts a JVM per step, about 3 s in all) in a temporary directory removed at
exit, and shared by every TLS broker the process starts. Nothing here is secret beyond the test run:
the keystore password is random and the CA's key never leaves the directory.
"""

from __future__ import annotations

import atexit
import secrets
import shutil
import ssl
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from staticconsumer.testing.errors import BrokerStartError

VALID_DAYS = 2
"""Long enough for any test run; a leaked CA is worthless soon after."""


@dataclass(frozen=True)
class TlsMaterial:
    """Where the broker's keystore and the client's CA file are, with the keystore's password."""

    directory: Path
    ca_file: Path
    keystore: Path
    keystore_password: str

    def broker_properties(self) -> dict[str, str]:
        """The broker's TLS properties (every SSL and SASL_SSL listener); clients present no certificate."""
        return {
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(self.keystore),
            "ssl.keystore.password": self.keystore_password,
            "ssl.key.password": self.keystore_password,
            "ssl.client.auth": "none",
        }

    def client_context(self) -> ssl.SSLContext:
        """A new client context that trusts only the throwaway CA and checks host names."""
        return ssl.create_default_context(cafile=str(self.ca_file))


_lock = threading.Lock()
_material: TlsMaterial | None = None


def tls_material(keytool: str = "keytool") -> TlsMaterial:
    """This process's CA and broker keystore, made on first use."""
    global _material
    with _lock:
        if _material is None or not _material.keystore.is_file():
            _material = _make(keytool)
        return _material


def _make(keytool: str) -> TlsMaterial:
    directory = Path(tempfile.mkdtemp(prefix="staticconsumer-tls-"))
    atexit.register(shutil.rmtree, directory, True)
    password = secrets.token_urlsafe(18)
    ca_store, keystore = directory / "ca.p12", directory / "broker.p12"
    ca_file, request, signed = directory / "ca.pem", directory / "broker.csr", directory / "broker.pem"
    common = ["-storetype", "PKCS12", "-storepass", password, "-keypass", password]
    key = ["-keyalg", "EC", "-groupname", "secp256r1", "-validity", str(VALID_DAYS)]
    names = "SAN=dns:localhost,ip:127.0.0.1"
    steps = [
        ["-genkeypair", "-alias", "ca", "-keystore", ca_store, "-dname", "CN=staticconsumer test CA",
         *key, "-ext", "bc:c=ca:true", "-ext", "ku:c=keyCertSign,cRLSign"],
        ["-genkeypair", "-alias", "broker", "-keystore", keystore, "-dname", "CN=localhost", *key],
        ["-certreq", "-alias", "broker", "-keystore", keystore, "-file", request],
        ["-gencert", "-alias", "ca", "-keystore", ca_store, "-infile", request, "-outfile", signed, "-rfc",
         "-validity", str(VALID_DAYS), "-ext", names, "-ext", "ku:c=digitalSignature",
         "-ext", "eku=serverAuth"],
        ["-exportcert", "-alias", "ca", "-keystore", ca_store, "-rfc", "-file", ca_file],
        ["-importcert", "-alias", "ca", "-keystore", keystore, "-file", ca_file, "-noprompt"],
        ["-importcert", "-alias", "broker", "-keystore", keystore, "-file", signed, "-noprompt"],
    ]  # fmt: skip
    for step in steps:
        done = subprocess.run(
            [keytool, *map(str, step), *common], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:  # the output names files and aliases, never the password
            output = done.stdout + done.stderr
            raise BrokerStartError(f"keytool {step[0]} failed (exit {done.returncode}): {output}")
    return TlsMaterial(directory, ca_file, keystore, password)
