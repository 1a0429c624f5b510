"""The secured mode of the local stack: what a real shared cluster looks like to the monitor.

- TLS: the stack makes its own CA and one node certificate (``CN=kafka-node``, SAN 127.0.0.1 and localhost) that the
  controller and the brokers use for their mutual-TLS controller and inter-broker listeners; an admin client
  certificate (``CN=kafka-health-stack``) lets the stack itself create the first SCRAM users over mutual TLS, so no
  password is ever given on a command line (``kafka-storage format --add-scram`` would take it in argv).
- Clients: a SASL_SSL listener with SCRAM-SHA-512. Principals: ``User:admin`` (super user, for people and for
  ``tenants apply-quotas``), ``User:kafka-health`` (the monitoring principal, the least rights the collectors need:
  ``MONITOR_ACLS``), and one per demo tenant (``User:<tenant>-app``) with rights on its own topic and group prefixes.
- Authorization: ``StandardAuthorizer``, no ``allow.everyone.if.no.acl.found``; super users are the node certificate
  and ``admin``.
- JMX: remote JMX with password authentication (read-only user ``monitor``); Jolokia agents (brokers and controller)
  with basic auth, their options read from a file (``config=``), not from the ``-javaagent`` argument.

Every secret is a file of mode 0600 under ``<stack dir>/security`` (directory 0700); argv carries only paths.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import logging
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from monitor.core.errors import StackError
from monitor.stack.layout import CONTROLLER_ID, StackLayout

ADMIN = "admin"
MONITOR = "kafka-health"
NODE_CN = "kafka-node"
STACK_ADMIN_CN = "kafka-health-stack"
JMX_USER = "monitor"
SCRAM = "SCRAM-SHA-512"
# Every client here handles these credentials (Admin API, random salt, URL-safe passwords): an old librdkafka's
# "invalid credentials" on Kafka 4 is its SCRAM nonce, not them (monitor/stack/kcat.py).
SCRAM_ITERATIONS = 8192
CERT_DAYS = 825

log = logging.getLogger(__name__)


def _write_secret(path: Path, data: bytes | str) -> None:
    """Write a file only its owner can read, created with that mode (never world-readable, not even briefly)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    raw = data.encode() if isinstance(data, str) else data
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(raw)
    os.chmod(path, 0o600)


@dataclass(frozen=True)
class StackSecurity:
    """Paths and credentials of one secured stack. ``ensure()`` creates what is missing; the rest only reads."""

    layout: StackLayout

    @property
    def dir(self) -> Path:
        return self.layout.security_dir

    @property
    def ca_cert(self) -> Path:
        return self.dir / "ca.pem"

    @property
    def ca_key(self) -> Path:
        return self.dir / "ca.key"

    @property
    def node_keystore(self) -> Path:
        return self.dir / "node.p12"

    @property
    def ca_truststore(self) -> Path:
        return self.dir / "ca-truststore.p12"

    @property
    def admin_cert(self) -> Path:
        return self.dir / "stack-admin.pem"

    @property
    def admin_key(self) -> Path:
        return self.dir / "stack-admin.key"

    @property
    def jmx_password_file(self) -> Path:
        return self.dir / "jmx.password"

    @property
    def jmx_access_file(self) -> Path:
        return self.dir / "jmx.access"

    def jolokia_config(self, node_id: int) -> Path:
        return self.dir / f"jolokia-{self.layout.node_name(node_id)}.properties"

    def secret_file(self, name: str) -> Path:
        """The file holding one password: ``keystore``, ``jmx-monitor``, ``scram-<user>``."""
        return self.dir / "secrets" / name

    def password(self, name: str) -> str:
        """A stored password, made (random, URL-safe) the first time it is asked for."""
        path = self.secret_file(name)
        if not path.exists():
            _write_secret(path, secrets.token_urlsafe(24))
        return path.read_text().strip()

    def scram_password_file(self, user: str) -> Path:
        self.password(f"scram-{user}")
        return self.secret_file(f"scram-{user}")

    # --- material -------------------------------------------------------------------------------------------------
    def ensure(self) -> None:
        """CA, node keystore, stack admin certificate, JMX and Jolokia credentials; each made once and kept."""
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.dir, 0o700)
        if not (self.ca_cert.exists() and self.ca_key.exists()):
            _make_ca(self)
        if not self.node_keystore.exists():
            _make_node_keystore(self)
        if not (self.admin_cert.exists() and self.admin_key.exists()):
            _make_leaf_pem(self, STACK_ADMIN_CN, self.admin_cert, self.admin_key)
        jmx_pw = self.password("jmx-monitor")
        if not self.jmx_password_file.exists():
            # The JVM refuses a password file anyone but its owner can read; the access file grants read-only.
            _write_secret(self.jmx_password_file, f"{JMX_USER} {jmx_pw}\n")
            _write_secret(self.jmx_access_file, f"{JMX_USER} readonly\n")

    def jolokia_agent_options(self, node_id: int, port: int) -> str:
        """The ``-javaagent:...=`` options of a node's Jolokia agent: a path to its properties file only."""
        path = self.jolokia_config(node_id)
        _write_secret(
            path,
            "".join(
                f"{k}={v}\n"
                for k, v in {
                    "host": "127.0.0.1",
                    "port": port,
                    "discoveryEnabled": "false",
                    "authMode": "basic",
                    "user": JMX_USER,
                    "password": self.password("jmx-monitor"),
                }.items()
            ),
        )
        return f"config={path}"

    # --- broker side ----------------------------------------------------------------------------------------------
    def node_properties(self, node_id: int) -> dict[str, object]:
        """The TLS, SASL and authorizer part of a node's server.properties (the file is written 0600)."""
        tls = {
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": self.node_keystore,
            "ssl.keystore.password": self.password("keystore"),
            "ssl.key.password": self.password("keystore"),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": self.ca_cert,
            # Node and admin certificates carry only a CN: the principal is that CN (User:kafka-node).
            "ssl.principal.mapping.rules": "RULE:^CN=([^,]+)$/$1/,DEFAULT",
            "listener.name.controller.ssl.client.auth": "required",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": f"User:{NODE_CN};User:{STACK_ADMIN_CN};User:{ADMIN}",
            "allow.everyone.if.no.acl.found": "false",
        }
        if node_id == CONTROLLER_ID:
            return tls
        return {
            **tls,
            "listener.name.internal.ssl.client.auth": "required",
            "sasl.enabled.mechanisms": SCRAM,
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            ),
        }

    def jmx_jvm_args(self) -> list[str]:
        return [
            "-Dcom.sun.management.jmxremote.authenticate=true",
            f"-Dcom.sun.management.jmxremote.password.file={self.jmx_password_file}",
            f"-Dcom.sun.management.jmxremote.access.file={self.jmx_access_file}",
        ]

    # --- client side -----------------------------------------------------------------------------------------------
    def stack_admin_settings(self) -> dict[str, str]:
        """confluent-kafka settings of the stack's own bootstrap identity: mutual TLS on the internal listener, a
        super user before any SCRAM user exists. For the stack's set-up only."""
        L = self.layout
        return {
            "bootstrap.servers": ",".join(f"127.0.0.1:{L.internal_port(b)}" for b in L.broker_ids),
            "security.protocol": "SSL",
            "ssl.ca.location": str(self.ca_cert),
            "ssl.certificate.location": str(self.admin_cert),
            "ssl.key.location": str(self.admin_key),
        }

    def sasl_settings(self, user: str) -> dict[str, str]:
        """confluent-kafka settings of a SCRAM principal on the SASL_SSL listener. Holds a password: never log."""
        return {
            "bootstrap.servers": self.layout.sasl_bootstrap_servers,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": SCRAM,
            "sasl.username": user,
            "sasl.password": self.password(f"scram-{user}"),
            "ssl.ca.location": str(self.ca_cert),
        }

    def java_truststore(self) -> Path:
        """The CA as a PKCS12 truststore (made once): Java clients before 2.7 cannot read a PEM one (KIP-651)."""
        if not self.ca_truststore.exists():
            _make_java_truststore(self)
        return self.ca_truststore

    def java_properties(self, user: str) -> str:
        """The same principal as Java client properties (``--command-config`` of Kafka's tools, a Java app). Every
        key is one that kafka-clients 2.3 reads: the truststore is PKCS12 (``ssl.truststore.type=PEM`` came in 2.7,
        and a 2.3 client fails on it with "PEM KeyStore not available")."""
        pw = self.password(f"scram-{user}")
        return "".join(
            f"{k}={v}\n"
            for k, v in {
                "bootstrap.servers": self.layout.sasl_bootstrap_servers,
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": SCRAM,
                "sasl.jaas.config": f"org.apache.kafka.common.security.scram.ScramLoginModule required "
                f'username="{user}" password="{pw}";',
                "ssl.truststore.type": "PKCS12",
                "ssl.truststore.location": self.java_truststore(),
                "ssl.truststore.password": self.password("truststore"),
            }.items()
        )

    def admin_command_config(self) -> Path:
        """Java client properties of ``User:admin`` for Kafka's own tools (file 0600)."""
        path = self.dir / "admin-java.properties"
        _write_secret(path, self.java_properties(ADMIN))
        return path

    def write_client_properties(self, name: str, user: str) -> Path:
        """``<stack dir>/clients/<name>.properties`` (librdkafka, kcat: ``kcat -F FILE``) and
        ``<name>.java.properties`` (a Java client), both 0600. Returns the librdkafka file."""
        out = self.layout.clients_dir
        out.mkdir(parents=True, exist_ok=True, mode=0o700)
        settings = self.sasl_settings(user)
        path = out / f"{name}.properties"
        # librdkafka before 2.6.1 fails SCRAM on Kafka 4 whatever the credentials (monitor/stack/kcat.py)
        _write_secret(
            path,
            f"# {name}: principal User:{user} on the demo cluster, for librdkafka 2.6.1 or later "
            f"(kcat -F {path} -L; `kafka-health stack status` prints a kcat line that works here)\n"
            + "".join(f"{k}={v}\n" for k, v in settings.items()),
        )
        _write_secret(
            out / f"{name}.java.properties",
            f"# {name}: principal User:{user}, for Java clients 2.3 and later\n{self.java_properties(user)}",
        )
        return path


# --- certificates (cryptography) -------------------------------------------------------------------------------------
def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _name(cn: str):
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _make_ca(sec: StackSecurity) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(f"kafka-health local stack CA ({sec.layout.dir.name})")
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_now() - dt.timedelta(minutes=5))
        .not_valid_after(_now() + dt.timedelta(days=CERT_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    _write_secret(
        sec.ca_key,
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )
    sec.ca_cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def issue_certificate(
    sec: StackSecurity, cn: str, *, not_before: dt.datetime | None = None, not_after: dt.datetime | None = None
):
    """(key, certificate) signed by the stack's CA, for server and client use on loopback. Tests make an expired
    one by giving ``not_after`` in the past."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID

    ca_key = serialization.load_pem_private_key(sec.ca_key.read_bytes(), password=None)
    ca_cert = x509.load_pem_x509_certificate(sec.ca_cert.read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    sans = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    if sec.layout.client_listener_host:
        sans.append(x509.IPAddress(ipaddress.ip_address(sec.layout.client_listener_host)))
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before or _now() - dt.timedelta(minutes=5))
        .not_valid_after(not_after or _now() + dt.timedelta(days=CERT_DAYS))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def _make_leaf_pem(sec: StackSecurity, cn: str, cert_path: Path, key_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization

    key, cert = issue_certificate(sec, cn)
    _write_secret(
        key_path,
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )
    _write_secret(cert_path, cert.public_bytes(serialization.Encoding.PEM))


def _make_java_truststore(sec: StackSecurity) -> None:
    """A PKCS12 file whose one entry is the CA as a trusted certificate (the Java attribute that makes it one is what
    ``serialize_java_truststore`` adds; ``serialize_key_and_certificates`` would leave the JVM trusting nothing)."""
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, pkcs12

    ca = x509.load_pem_x509_certificate(sec.ca_cert.read_bytes())
    data = pkcs12.serialize_java_truststore(
        [pkcs12.PKCS12Certificate(ca, b"kafka-health-ca")], BestAvailableEncryption(sec.password("truststore").encode())
    )
    _write_secret(sec.ca_truststore, data)


def _make_node_keystore(sec: StackSecurity) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import (
        BestAvailableEncryption,
        pkcs12,
    )

    key, cert = issue_certificate(sec, NODE_CN)
    ca = x509.load_pem_x509_certificate(sec.ca_cert.read_bytes())
    data = pkcs12.serialize_key_and_certificates(
        b"kafka-node", key, cert, [ca], BestAvailableEncryption(sec.password("keystore").encode())
    )
    _write_secret(sec.node_keystore, data)


# --- principals and ACLs (confluent-kafka Admin API) ------------------------------------------------------------------
def monitor_acls(principal: str = f"User:{MONITOR}", probe_topic: str = "__kafka_health_probe") -> list:
    """What the collectors read, and nothing more: cluster and log dirs (Describe), broker configs and client quotas
    (DescribeConfigs on the cluster), topics (Describe, DescribeConfigs: partitions, watermarks, retention), groups
    (Describe: members, committed offsets); and what the end-to-end probe does on its own topic and group only (create
    the topic, add a partition for a new broker: Create, Alter; produce, consume: Write, Read; its group: Read). Not
    Alter on the cluster, which the probe's preferred-leader elections would want: it also allows creating ACLs."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    def allow(rtype, name, op):
        return AclBinding(rtype, name, ResourcePatternType.LITERAL, principal, "*", op, AclPermissionType.ALLOW)

    return [
        allow(ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE),
        allow(ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE_CONFIGS),
        allow(ResourceType.TOPIC, "*", AclOperation.DESCRIBE),
        allow(ResourceType.TOPIC, "*", AclOperation.DESCRIBE_CONFIGS),
        allow(ResourceType.GROUP, "*", AclOperation.DESCRIBE),
        *(
            allow(ResourceType.TOPIC, probe_topic, op)
            for op in (AclOperation.CREATE, AclOperation.ALTER, AclOperation.WRITE, AclOperation.READ)
        ),
        allow(ResourceType.GROUP, probe_topic, AclOperation.READ),
    ]


def tenant_acls(principal: str, *, topic_prefixes: tuple[str, ...], group_prefixes: tuple[str, ...]) -> list:
    """A tenant's application principal: everything on its own topics (prefixed), read on its own groups."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    out = []
    for p in topic_prefixes:
        out.append(
            AclBinding(
                ResourceType.TOPIC,
                p,
                ResourcePatternType.PREFIXED,
                principal,
                "*",
                AclOperation.ALL,
                AclPermissionType.ALLOW,
            )
        )
    for p in group_prefixes:
        out.append(
            AclBinding(
                ResourceType.GROUP,
                p,
                ResourcePatternType.PREFIXED,
                principal,
                "*",
                AclOperation.READ,
                AclPermissionType.ALLOW,
            )
        )
    return out


def anonymous_acls() -> list:
    """The test stack's PLAINTEXT listener: ANONYMOUS may do what a plaintext test client does (through ACLs, so
    the authorizer still runs on every request), never what only super users may."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    p = "User:ANONYMOUS"
    return [
        AclBinding(rtype, name, ResourcePatternType.LITERAL, p, "*", AclOperation.ALL, AclPermissionType.ALLOW)
        for rtype, name in (
            (ResourceType.TOPIC, "*"),
            (ResourceType.GROUP, "*"),
            (ResourceType.TRANSACTIONAL_ID, "*"),
            (ResourceType.BROKER, "kafka-cluster"),
        )
    ]


def _wait_all(futures: dict, what: str, timeout: float) -> None:
    for key, fut in futures.items():
        try:
            fut.result(timeout=timeout)
        except Exception as exc:  # KafkaException; the message names no secret (users and bindings only)
            raise StackError(f"{what} failed for {key}: {exc}") from exc


def create_scram_users(sec: StackSecurity, users: list[str], *, timeout: float = 60.0) -> None:
    """SCRAM-SHA-512 credentials for ``users`` (passwords from their 0600 files), through the Admin API as the
    stack's mutual-TLS super user."""
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({**sec.stack_admin_settings(), "logger": _QUIET})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, SCRAM_ITERATIONS)
    ups = [UserScramCredentialUpsertion(u, info, sec.password(f"scram-{u}").encode()) for u in users]
    _wait_all(admin.alter_user_scram_credentials(ups, request_timeout=timeout), "creating SCRAM user", timeout)


def create_acls(sec: StackSecurity, bindings: list, *, timeout: float = 60.0) -> None:
    from confluent_kafka.admin import AdminClient

    if not bindings:
        return
    admin = AdminClient({**sec.stack_admin_settings(), "logger": _QUIET})
    _wait_all(admin.create_acls(bindings, request_timeout=timeout), "creating ACL", timeout)


_QUIET = logging.getLogger("kafka_health.stack.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False
