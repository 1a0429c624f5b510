"""The secured session stack from the monitor's side: what a platform team gets when a credential or an ACL is wrong.

Each fault gives one clear message naming the cluster and what is missing, with the target's ``reason``
(``authentication``, ``authorization``); nothing shows a secret; the other clusters of the same collection keep
reporting. Faults are real: a wrong SCRAM password and a wrong JMX password against the real brokers, a principal
without the monitoring ACLs, a TLS server presenting an expired certificate signed by the stack's own CA.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import socket
import ssl
import subprocess
import sys
import threading
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)
from prometheus_client import CollectorRegistry

from collectors.component import CollectionService
from collectors.types import FailureReason, TargetStatus
from monitor.core.config import SecretRef
from monitor.loadgen import ensure_topics
from monitor.stack import security
from monitor.stack.security import StackSecurity, issue_certificate
from tests.conftest import wait_until
from tests.harness.javaclients import JavaClient

pytestmark = pytest.mark.integration
QUIET = logging.getLogger("secured-test-librdkafka")
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False


def _named(cluster, name: str, **update):
    return cluster.model_copy(update={"name": name, **update})


def _with_clusters(cfg, *clusters):
    return cfg.model_copy(update={"clusters": clusters})


def _collect(cfg) -> dict[tuple[str, str], object]:
    svc = CollectionService(cfg, registry=CollectorRegistry())
    try:
        return {(r.target.cluster, r.target.name): r for r in svc.collect_once()}
    finally:
        svc.stop()


def test_a_wrong_password_is_one_clear_message_and_the_other_cluster_keeps_reporting(stack, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    good = stack.config().clusters[0]
    wrong = f"not-the-password-{uuid.uuid4().hex}"
    bad_file = tmp_path / "wrong-password"
    bad_file.write_text(wrong)
    bad_file.chmod(0o600)
    bad = _named(
        good,
        "wrongpw",
        security={**good.security, "sasl.password": SecretRef(file=str(bad_file))},
        jmx=good.jmx.model_copy(update={"password": SecretRef(file=str(bad_file))}),
    )
    results = _collect(_with_clusters(stack.config(), good, bad))

    admin = results[("wrongpw", "admin")]
    assert admin.status is TargetStatus.FAILED and admin.reason is FailureReason.AUTHENTICATION, admin
    assert admin.message.startswith(
        "Admin API metadata: authentication failed: check sasl.username and sasl.password of principal kafka-health"
    ), admin.message
    broker = results[("wrongpw", "broker-1")]
    assert broker.status is TargetStatus.FAILED and broker.reason is FailureReason.AUTHENTICATION, broker
    assert "wrong jmx.username or jmx.password" in broker.message
    # the good cluster, in the same collection, is whole
    assert all(r.status is TargetStatus.OK for (c, _), r in results.items() if c == "local"), {
        k: (r.status, r.message) for k, r in results.items() if k[0] == "local"
    }
    for r in results.values():
        assert wrong not in r.message
    assert wrong not in caplog.text


def _allow(principal: str, rtype, name: str, op) -> AclBinding:
    return AclBinding(rtype, name, ResourcePatternType.LITERAL, principal, "*", op, AclPermissionType.ALLOW)


def test_a_monitoring_principal_without_its_acls_is_told_what_it_lacks(stack, tmp_path):
    """A principal that may describe the cluster (so it lists the groups) but no topic and no group: the round still
    exports the brokers, and its message names the missing permissions."""
    L = stack.layout
    sec = StackSecurity(L)
    user = f"kh-noacl-{uuid.uuid4().hex[:8]}"
    security.create_scram_users(sec, [user])
    security.create_acls(sec, [_allow(f"User:{user}", ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE)])
    # a group with a committed offset, made by an anonymous client of the PLAINTEXT listener
    topic, group = f"acl-check-{uuid.uuid4().hex[:8]}", f"acl-check-{uuid.uuid4().hex[:8]}"
    p = Producer({"bootstrap.servers": L.bootstrap_servers, "logger": QUIET})
    p.produce(topic, b"x")
    assert p.flush(30) == 0
    c = Consumer(
        {
            "bootstrap.servers": L.bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "logger": QUIET,
        }
    )
    c.subscribe([topic])
    msg = None
    for _ in range(60):
        msg = c.poll(1.0)
        if msg is not None and not msg.error():
            break
    c.commit(msg, asynchronous=False)
    c.close()

    good = stack.config().clusters[0]
    pw = tmp_path / "pw"
    pw.write_text(sec.password(f"scram-{user}"))
    noacl = _named(
        good, "noacl", security={**good.security, "sasl.username": user, "sasl.password": SecretRef(file=str(pw))}
    )
    results = _collect(_with_clusters(stack.config(), good, noacl))
    admin = results[("noacl", "admin")]
    assert admin.status in (TargetStatus.OK, TargetStatus.NO_DATA), admin  # brokers are still exported
    assert f"no topic is visible to User:{user}" in admin.message and "Describe on Topic *" in admin.message
    assert (
        "GROUP_AUTHORIZATION_FAILED" in admin.message
        and f"User:{user} needs an ACL allowing Describe on the groups" in admin.message
    ), admin.message
    assert results[("local", "admin")].status is TargetStatus.OK


@pytest.fixture
def expired_tls_server(stack):
    """A TLS server on loopback presenting a certificate of the stack's CA that expired yesterday."""
    from cryptography.hazmat.primitives import serialization

    sec = StackSecurity(stack.layout)
    now = dt.datetime.now(dt.timezone.utc)
    key, cert = issue_certificate(
        sec, "kafka-node", not_before=now - dt.timedelta(days=30), not_after=now - dt.timedelta(days=1)
    )
    d = stack.layout.dir / f"expired-{uuid.uuid4().hex[:6]}"
    d.mkdir()
    (d / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (d / "key.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(d / "cert.pem", d / "key.pem")
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    srv.settimeout(0.5)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            try:
                with ctx.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            except (OSError, ssl.SSLError):
                pass

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    yield f"127.0.0.1:{srv.getsockname()[1]}"
    stop.set()
    th.join(5)
    srv.close()


def test_an_expired_broker_certificate_is_named(stack, expired_tls_server):
    good = stack.config().clusters[0]
    expired = _named(good, "expired", bootstrap_servers=expired_tls_server, brokers=(), controller_jolokia=())
    results = _collect(_with_clusters(stack.config(), good, expired))
    admin = results[("expired", "admin")]
    assert admin.status is TargetStatus.FAILED and admin.reason is FailureReason.AUTHENTICATION, admin
    assert admin.message.startswith(
        f"Admin API metadata: TLS: the certificate of {expired_tls_server} expired on "
        f"{(dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=1)):%Y-%m-%d}"
    ), admin.message
    assert results[("local", "admin")].status is TargetStatus.OK


# The printed kcat command, as `stack status` and the demo print it (issue 32): the plain one, or the same kcat on the
# monitor's librdkafka (monitor/stack/kcat.py)
PRINTED_KCAT = re.compile(r"((?:LD_LIBRARY_PATH=\S+ )?kcat -F \S+ -L)")


def test_the_printed_client_files_authenticate_with_debian_kcat_and_java_2_3_and_3_9(stack, tmp_path):
    """Issue 32: with Debian's kcat 1.7.1 (librdkafka 2.0.2) the printed ``kcat -F <dir>/clients/admin.properties -L``
    failed on Kafka 4 for every principal ("invalid credentials": that librdkafka repeats its SCRAM nonce), and a
    ``.java.properties`` failed on a Java 2.3 client ("PEM KeyStore not available": a PEM truststore needs 2.7). The
    line ``stack status`` prints is run as printed; a tenant's Java file is used by kafka-clients 2.3.1 and 3.9.1
    producing to the tenant's topic (its ACLs allow nothing else)."""
    L = stack.layout
    tenant = f"kcat{uuid.uuid4().hex[:6]}"
    stack.add_principal(f"{tenant}-app", topic_prefixes=(f"{tenant}.",), properties_name=tenant)
    ensure_topics(L.bootstrap_servers, [f"{tenant}.events"], partitions=1, replication=1)

    status = subprocess.run(
        [
            sys.executable,
            "-m",
            "monitor.cli",
            "stack",
            "status",
            "--dir",
            str(L.dir),
            "--port-base",
            str(L.port_base),
            "--kafka-version",
            L.kafka_version,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    printed = PRINTED_KCAT.search(status.stdout)
    assert printed, status.stdout
    listed = subprocess.run(["bash", "-c", printed[1]], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and f'topic "{tenant}.events"' in listed.stdout, (printed[1], listed.stderr[-2000:])

    java_file = L.clients_dir / f"{tenant}.java.properties"
    props = dict(line.split("=", 1) for line in java_file.read_text().splitlines() if not line.startswith("#"))
    for version in ("2.3.1", "3.9.1"):
        with JavaClient(
            version=version,
            mode="produce",
            topic=f"{tenant}.events",
            rate=20,
            record_bytes=10,
            log=tmp_path / f"java-{version}.log",
            properties=props,
        ) as client:
            wait_until(
                lambda: client.counts().get("acked", 0) > 0 or not client.running(),
                90,
                0.5,
                what=f"a record acked for the Java {version} client",
            )
            assert client.counts().get("acked", 0) > 0 and not client.counts().get("errors"), (
                version,
                client.counts(),
                (tmp_path / f"java-{version}.log").read_text()[-3000:],
            )
