"""The local Kafka cluster: jars from Maven Central, KRaft configs, storage format, JVM command lines.

One dedicated KRaft controller plus three brokers (separate roles: on combined nodes the thread idle metrics mix
controller and broker work). Each JVM has remote JMX on its own loopback port and a small heap.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import uuid
from pathlib import Path

from monitor.core.errors import DependencyMissing, Invalid, StackError
from monitor.stack.layout import CONTROLLER_ID, StackLayout, cache_dir
from monitor.stack.packaged import deploy_path
from monitor.stack.procs import ProcSpec
from monitor.stack.security import StackSecurity
from monitor.stack.telemetry import JMX_REPORTER, plugin_jar
from monitor.stack.telemetry import broker_properties as telemetry_properties

DEPLOY_KAFKA = deploy_path("kafka")  # the poms and log4j configs of deploy/kafka, as package data
HEAP = {"controller": "256m", "broker": "384m"}
NUM_IO_THREADS = 4  # request handler threads per broker (tests/harness/faults.py lowers it at run time)


def require_java() -> str:
    java = shutil.which("java")
    if not java:
        raise DependencyMissing("java not found on PATH: install a JDK 17+ (apt-get install openjdk-17-jre-headless)")
    return java


def resolve_jars(
    pom: Path, dest: Path, log: Path, *, expect: str, what: str, args: tuple[str, ...] = (), marker: bool = True
) -> Path:
    """``pom``'s dependencies copied into ``dest`` by ``mvn dependency:copy-dependencies ARGS``, once: done when a
    file matching ``expect`` is there (and, with ``marker``, ``dest/../.complete``, written after a whole copy, so an
    interrupted one is redone). Maven's own cache makes a second resolution download nothing."""
    done = dest.parent / ".complete"
    if any(dest.glob(expect)) and (done.exists() or not marker):
        return dest
    mvn = shutil.which("mvn")
    if not mvn:
        raise DependencyMissing("mvn not found on PATH: install Maven (apt-get install maven)")
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [mvn, "-B", "-q", "-f", str(pom), *args, "dependency:copy-dependencies", f"-DoutputDirectory={dest}"]
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if rc != 0 or not any(dest.glob(expect)):
        raise StackError(f"maven could not resolve {what} (exit {rc}); see {log}")
    if marker:
        done.write_text(what)
    return dest


def ensure_jars(layout: StackLayout, log: Path) -> Path:
    """Resolve the broker jars once per version; a second run downloads nothing (marker file + Maven's cache)."""
    profiles = ",".join(layout.release.maven_profiles)
    return resolve_jars(
        DEPLOY_KAFKA / "pom.xml",
        layout.jars_dir,
        log,
        expect="kafka_2.13-*.jar",
        what=f"Kafka {layout.kafka_version} jars",
        args=(f"-Dkafka.version={layout.kafka_version}", "-P", profiles),
    )


JOLOKIA_JAR = "jolokia-agent-jvm-javaagent.jar"
# A generous default client quota: it changes nothing for load, but per-client quota sensors (byte rate, throttle
# time, request time by user/client-id) exist only once some quota of each type is configured.
DEFAULT_CLIENT_QUOTA = "producer_byte_rate=1073741824,consumer_byte_rate=1073741824,request_percentage=100000"


def agents_dir() -> Path:
    return cache_dir() / "agents"


# The jmx_exporter rules each exporter profile runs with (deploy/kafka/jmx_exporter/).
EXPORTER_CONFIGS = {"strimzi": "strimzi-kafka-metrics.yml", "msk": "vanilla.yml"}


def exporter_jar() -> Path:
    """io.prometheus.jmx:jmx_prometheus_javaagent from deploy/kafka/agents-pom.xml (``ensure_agents``)."""
    return agents_dir() / "jmx_prometheus_javaagent.jar"


# Strimzi's metrics reporter (deploy/kafka/reporter-pom.xml): its two plugin classes, one for Kafka's own metrics
# (metric.reporters) and one for the Yammer ones (kafka.metrics.reporters), which hold nearly all the catalog reads.
REPORTER_VERSION = "0.2.0"
REPORTER_CLASS = "io.strimzi.kafka.metrics.KafkaPrometheusMetricsReporter"
YAMMER_REPORTER_CLASS = "io.strimzi.kafka.metrics.YammerPrometheusMetricsReporter"


def reporter_dir() -> Path:
    """The reporter's jars and their Prometheus client_java dependencies (``ensure_reporter``)."""
    return cache_dir() / f"strimzi-metrics-reporter-{REPORTER_VERSION}" / "libs"


def ensure_reporter(log: Path) -> Path:
    """Resolve Strimzi's metrics reporter once from Maven Central, cached."""
    return resolve_jars(
        DEPLOY_KAFKA / "reporter-pom.xml",
        reporter_dir(),
        log,
        expect="metrics-reporter-*.jar",
        what="Strimzi's metrics reporter",
    )


def reporter_properties(layout: StackLayout, node_id: int) -> dict[str, object]:
    """The server.properties lines that run Strimzi's metrics reporter on a node, listening on loopback. JmxReporter
    (and on a broker the telemetry plugin) stay listed first (``telemetry.broker_properties``: since Kafka 4.0 a node
    whose metric.reporters omits JmxReporter registers no Kafka-metrics MBean)."""
    if node_id == CONTROLLER_ID:
        reporters, port = JMX_REPORTER, layout.controller_reporter_port
    else:
        reporters, port = telemetry_properties(layout.release)["metric.reporters"], layout.broker_reporter_port(node_id)
    return {
        "metric.reporters": f"{reporters},{REPORTER_CLASS}",
        "kafka.metrics.reporters": YAMMER_REPORTER_CLASS,
        "prometheus.metrics.reporter.listener": f"http://127.0.0.1:{port}",
    }


def runs_reporter(layout: StackLayout, node_id: int) -> bool:
    """Whether the node runs Strimzi's metrics reporter (``reporter_brokers``, ``reporter_controller``)."""
    return layout.reporter_controller if node_id == CONTROLLER_ID else node_id in layout.reporter_brokers


def ensure_agents(log: Path) -> Path:
    """Resolve the JVM agents (Jolokia; the JMX exporter for the bench) once from Maven Central, cached."""
    return resolve_jars(
        DEPLOY_KAFKA / "agents-pom.xml",
        agents_dir(),
        log,
        expect=JOLOKIA_JAR,
        what="the JVM agents",
        args=("-Dmdep.stripVersion=true",),
        marker=False,
    )


def jolokia_port(layout: StackLayout, node_id: int) -> int:
    """Jolokia agent port of a broker: base+41..43 (beside the JMX ports base+11..13)."""
    return layout.broker_jolokia_port(node_id)


def jolokia_url(layout: StackLayout, node_id: int) -> str:
    return f"http://127.0.0.1:{jolokia_port(layout, node_id)}/jolokia"


def set_default_client_quota(layout: StackLayout, java: str, log: Path) -> None:
    """``kafka-configs --alter --entity-type clients --entity-default`` through Kafka's own ConfigCommand class."""
    set_client_quota(layout, java, log, client_id=None, quota=DEFAULT_CLIENT_QUOTA)


def set_client_quota(layout: StackLayout, java: str, log: Path, *, client_id: str | None, quota: str) -> None:
    """``kafka-configs --alter --entity-type clients --entity-name CLIENT_ID`` (the default with None) ``--add-config
    QUOTA`` (e.g. ``producer_byte_rate=16384``)."""
    entity = ["--entity-default"] if client_id is None else ["--entity-name", client_id]
    what = "the default client quota" if client_id is None else f"the quota of client {client_id}"
    run_config_command(layout, java, log, ["--entity-type", "clients", *entity, "--add-config", quota], what=what)


def run_config_command(layout: StackLayout, java: str, log: Path, args: list[str], *, what: str) -> None:
    """``kafka-configs --alter ARGS`` on this stack: as ``User:admin`` (a 0600 ``--command-config`` file) when it is
    secured, anonymously on PLAINTEXT otherwise."""
    if layout.secured:
        config_command(
            java,
            layout,
            log,
            args,
            bootstrap=layout.sasl_bootstrap_servers,
            command_config=StackSecurity(layout).admin_command_config(),
            what=what,
        )
    else:
        config_command(java, layout, log, args, bootstrap=layout.bootstrap_servers, command_config=None, what=what)


def config_commands_as(
    admin_config: str | None,
    layout: StackLayout,
    log: Path,
    calls: list[tuple[str, list[str], str]],
    *,
    allowed_to: str,
) -> None:
    """Each ``(bootstrap, args, what)`` of ``calls`` as ``kafka-configs --alter ARGS`` on a user's cluster, with the
    credentials of the Java client properties file ``admin_config`` (the ``--admin-config`` of the commands that
    change users' clusters: ``tenants apply-quotas``, ``telemetry subscribe``), using ``layout``'s Kafka jars."""
    if admin_config is None or not Path(admin_config).is_file():
        raise Invalid(
            f"--admin-config FILE: Java client properties of a principal allowed to {allowed_to} "
            "(the local stack writes clients/admin.java.properties)"
        )
    java = require_java()
    ensure_jars(layout, log)
    for bootstrap, args, what in calls:
        config_command(java, layout, log, args, bootstrap=bootstrap, command_config=Path(admin_config), what=what)


def config_command(
    java: str,
    layout: StackLayout,
    log: Path,
    args: list[str],
    *,
    bootstrap: str,
    command_config: Path | None,
    what: str,
) -> None:
    """``kafka-configs --bootstrap-server BOOTSTRAP [--command-config FILE] --alter ARGS`` through Kafka's own
    ConfigCommand class in a short JVM (confluent-kafka has no client-quota Admin API) with ``layout``'s jars. The
    credentials stay in the file: argv holds its path only."""
    rc = _tool(
        java,
        layout,
        log,
        layout.release.config_command,
        ["--alter", *args],
        bootstrap=bootstrap,
        command_config=command_config,
    )
    if rc != 0:
        raise StackError(f"setting {what} failed (exit {rc}); see {log}")


def find_coordinator(layout: StackLayout, java: str, log: Path, group: str) -> int:
    """Ask this stack for ``group``'s coordinator (deploy/kafka/FindCoordinator.java, as ``User:admin`` when
    secured); its exit code. The first FindCoordinator of a cluster makes the broker create __consumer_offsets. (The
    stack's jars hold kafka-tools only from 4.4, so not Kafka's own group tool.)"""
    secured = layout.secured
    return _tool(
        java,
        layout,
        log,
        str(DEPLOY_KAFKA / "FindCoordinator.java"),
        ["--group", group],
        bootstrap=layout.sasl_bootstrap_servers if secured else layout.bootstrap_servers,
        command_config=StackSecurity(layout).admin_command_config() if secured else None,
    )


def _tool(
    java: str,
    layout: StackLayout,
    log: Path,
    main_class: str,
    args: list[str],
    *,
    bootstrap: str,
    command_config: Path | None,
) -> int:
    """One of Kafka's command-line tools in a short JVM with ``layout``'s jars; its exit code (output in ``log``)."""
    auth = ["--command-config", str(command_config)] if command_config else []
    return run_tool_jvm(
        java,
        layout,
        log,
        main_class,
        ["--bootstrap-server", bootstrap, *auth, *args],
        heap="128m",
        props=tool_logging(layout.logs_dir),
    )


def tool_logging(logs_dir: Path) -> list[str]:
    """A tool JVM's log4j settings, for Kafka 4 (log4j2) and 3.9 (log4j 1) alike: our config files, and the logs dir
    they name (without it log4j writes to a literal ``${sys:kafka.logs.dir}`` directory)."""
    return [
        f"-Dkafka.logs.dir={logs_dir}",
        f"-Dlog4j2.configurationFile={DEPLOY_KAFKA / 'log4j2.xml'}",
        f"-Dlog4j.configuration=file:{DEPLOY_KAFKA / 'log4j.properties'}",
    ]


# A tool JVM (storage format, kafka-configs, FindCoordinator) lives a second or two and is all start-up: class loading
# and interpreting. C1 only and the serial GC halve that, an AppCDS archive of the tool's classes halves it again
# (StorageTool format: 1.6 s -> 0.9 s -> 0.6 s, bench/stack_phases.py). Never for the brokers, which run for hours.
TOOL_JVM_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


def class_archive(java: str, layout: StackLayout, main_class: str) -> Path:
    """Where the AppCDS archive of ``main_class`` on ``layout``'s jars is cached. Its name holds a digest of the JVM
    and of every jar (name, size, time): a JVM refuses an archive made by another JDK build or from other jars (it
    warns and runs without), so a new JDK or new jars get a new archive instead of a refused one (25-45 MB per tool
    and Kafka version; the one it replaces is deleted)."""
    digest = hashlib.sha256(main_class.encode())
    for f in [Path(os.path.realpath(java)), *sorted(layout.jars_dir.glob("*.jar"))]:
        st = f.stat()
        digest.update(f"{f}:{st.st_size}:{st.st_mtime_ns}".encode())
    name = Path(main_class).stem if main_class.endswith(".java") else main_class.rsplit(".", 1)[-1]
    return cache_dir() / "cds" / f"{name}-{layout.kafka_version}-{digest.hexdigest()[:16]}.jsa"


def run_tool_jvm(
    java: str,
    layout: StackLayout,
    log: Path,
    main_class: str,
    args: list[str],
    *,
    heap: str,
    props: list[str],
    timeout: float = 120,
) -> int:
    """``java -cp JARS MAIN_CLASS ARGS`` with the fast-start flags; its exit code, output appended to ``log``. Uses
    the class archive when it is cached; else this run makes it (written beside, renamed into place only when
    complete, so concurrent stacks never read half an archive). A run that made no archive and failed runs once
    more without making one: a JVM that cannot write its archive refuses to start."""
    archive = class_archive(java, layout, main_class)
    head = [java, f"-Xmx{heap}", *TOOL_JVM_FLAGS]
    rest = [*props, "-cp", f"{layout.jars_dir}/*", main_class, *args]
    if archive.exists():
        return _call([*head, f"-XX:SharedArchiveFile={archive}", *rest], log, timeout)
    tmp = archive.with_name(f"{archive.name}.{uuid.uuid4().hex}.tmp")
    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only cache: the tool still runs, only slower
        return _call([*head, *rest], log, timeout)
    rc = _call([*head, f"-XX:ArchiveClassesAtExit={tmp}", *rest], log, timeout)
    if rc == 0 and tmp.exists():
        os.replace(tmp, archive)
        for stale in archive.parent.glob(archive.name.rsplit("-", 1)[0] + "-*.jsa"):  # older JDK or jars
            if stale != archive:
                stale.unlink(missing_ok=True)
        return rc
    tmp.unlink(missing_ok=True)
    return rc if rc == 0 else _call([*head, *rest], log, timeout)


def _call(cmd: list[str], log: Path, timeout: float) -> int:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        return subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=timeout)


def new_cluster_id() -> str:
    """A KRaft cluster id as Kafka makes them: URL-safe base64 of a random UUID, never starting with "-" (one in 64
    did, and kafka-storage's argument parser then read the id as an option: "--cluster-id: expected one argument")."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def node_properties(layout: StackLayout, node_id: int) -> str:
    voters = f"{CONTROLLER_ID}@127.0.0.1:{layout.controller_port}"
    controller_protocol = "SSL" if layout.secured else "PLAINTEXT"
    common = {
        "node.id": node_id,
        "controller.quorum.voters": voters,
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": f"CONTROLLER:{controller_protocol}",
        "log.dirs": layout.log_dir(node_id),
    }
    if layout.secured:
        common.update(StackSecurity(layout).node_properties(node_id))
    if node_id == CONTROLLER_ID:
        props = {
            **common,
            "process.roles": "controller",
            "listeners": f"CONTROLLER://127.0.0.1:{layout.controller_port}",
            **(reporter_properties(layout, node_id) if runs_reporter(layout, node_id) else {}),
        }
        return "".join(f"{k}={v}\n" for k, v in props.items())
    listeners, protocols = [], []
    if layout.has_plaintext:
        listeners.append(f"PLAINTEXT://127.0.0.1:{layout.broker_port(node_id)}")
        protocols.append("PLAINTEXT:PLAINTEXT")
    if layout.secured:
        listeners += [
            f"SASL_SSL://127.0.0.1:{layout.sasl_port(node_id)}",
            f"INTERNAL://127.0.0.1:{layout.internal_port(node_id)}",
        ]
        protocols += ["SASL_SSL:SASL_SSL", "INTERNAL:SSL"]
    if layout.client_listener_host:  # see StackLayout.client_listener_host
        listeners.append(f"CLIENTS://{layout.client_listener_host}:{layout.client_listener_port(node_id)}")
        # Anonymous where the stack keeps an anonymous listener (tests: a slow reader in a namespace), else SASL_SSL.
        protocols.append("CLIENTS:PLAINTEXT" if layout.has_plaintext else "CLIENTS:SASL_SSL")
    common["listener.security.protocol.map"] += "," + ",".join(protocols)
    props = {
        **common,
        "process.roles": "broker",
        "listeners": ",".join(listeners),
        "advertised.listeners": ",".join(listeners),
        "inter.broker.listener.name": "INTERNAL" if layout.secured else "PLAINTEXT",
        "num.partitions": 3,
        "default.replication.factor": 3,
        "min.insync.replicas": 2,
        "offsets.topic.replication.factor": 3,
        "offsets.topic.num.partitions": 10,
        "transaction.state.log.replication.factor": 3,
        "transaction.state.log.min.isr": 2,
        "group.initial.rebalance.delay.ms": 0,
        "num.network.threads": 3,
        "num.io.threads": NUM_IO_THREADS,
        # Small segments and a short retention check make retention (the disk sawtooth) visible in minutes.
        "log.segment.bytes": 16 * 1024 * 1024,
        "log.retention.check.interval.ms": 30000,
        "auto.create.topics.enable": "true",
        # KIP-714: clients' pushed metrics, kept by kafka-health's plugin (monitor/stack/telemetry.py)
        **telemetry_properties(layout.release),
        **(reporter_properties(layout, node_id) if runs_reporter(layout, node_id) else {}),
    }
    if layout.secured and not layout.has_plaintext and layout.client_listener_host:
        props["listener.name.clients.scram-sha-512.sasl.jaas.config"] = (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        )
    return "".join(f"{k}={v}\n" for k, v in props.items())


def jvm_argv(layout: StackLayout, node_id: int, java: str, *, heap: str | None = None) -> list[str]:
    """The node's JVM command line; ``heap`` (e.g. ``1g``) instead of the stack's small one (``HEAP``): a bench's broker
    with a jmx_exporter and thousands of partitions needs more."""
    node_dir = layout.node_dir(node_id)
    jmx = layout.controller_jmx_port if node_id == CONTROLLER_ID else layout.broker_jmx_port(node_id)
    heap = heap or HEAP["controller" if node_id == CONTROLLER_ID else "broker"]
    classpath = f"{layout.jars_dir}/*" if node_id == CONTROLLER_ID else f"{layout.jars_dir}/*:{plugin_jar()}"
    if runs_reporter(layout, node_id):
        classpath += f":{reporter_dir()}/*"
    if layout.release.major >= 4:
        logging = [f"-Dlog4j2.configurationFile={DEPLOY_KAFKA / 'log4j2.xml'}"]
    else:
        logging = [f"-Dlog4j.configuration=file:{DEPLOY_KAFKA / 'log4j.properties'}"]
    agents, jmx_auth = [], ["-Dcom.sun.management.jmxremote.authenticate=false"]
    jolokia = agents_dir() / JOLOKIA_JAR
    broker_jolokia = node_id != CONTROLLER_ID and layout.profile == "jolokia"
    if layout.secured:
        # Password-protected JMX; Jolokia (brokers and controller) with basic auth, options from a 0600 file.
        sec = StackSecurity(layout)
        jmx_auth = sec.jmx_jvm_args()
        if node_id == CONTROLLER_ID or broker_jolokia:
            port = layout.controller_jolokia_port if node_id == CONTROLLER_ID else jolokia_port(layout, node_id)
            agents.append(f"-javaagent:{jolokia}={sec.jolokia_agent_options(node_id, port)}")
    if layout.profile in EXPORTER_CONFIGS and not runs_reporter(layout, node_id):
        # The profile's jmx_exporter as Strimzi or MSK run it (loopback only, no auth, as they serve it in-cluster),
        # on the controller too (Strimzi runs it on every node; the same rules, read by controller_jmx_exporter).
        # Not beside Strimzi's metrics reporter: jmx_prometheus_javaagent 1.0.1 does not shade client_java, so both
        # register in its one default registry, each serves the other's series, and a name both make (vanilla's
        # kafka_server_socket_server_metrics_connections, Strimzi rules' kafka_cluster_partition_atminisr) fails
        # every scrape of both ("duplicate metric name", HTTP 500).
        config = DEPLOY_KAFKA / "jmx_exporter" / EXPORTER_CONFIGS[layout.profile]
        port = layout.controller_exporter_port if node_id == CONTROLLER_ID else layout.broker_exporter_port(node_id)
        agents.append(f"-javaagent:{exporter_jar()}=127.0.0.1:{port}:{config}")
    elif broker_jolokia and not layout.secured and jolokia.exists():
        # The bulk JMX transport of the collectors (collectors/transports/jolokia.py), on loopback only.
        port = jolokia_port(layout, node_id)
        agents.append(f"-javaagent:{jolokia}=host=127.0.0.1,port={port},discoveryEnabled=false")
    return [
        java,
        *agents,
        f"-Xms{heap}",
        f"-Xmx{heap}",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        "-XX:ParallelGCThreads=1",
        "-XX:ConcGCThreads=1",
        "-XX:CICompilerCount=2",
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true",
        "-Dcom.sun.management.jmxremote",
        f"-Dcom.sun.management.jmxremote.port={jmx}",
        f"-Dcom.sun.management.jmxremote.rmi.port={jmx}",
        "-Dcom.sun.management.jmxremote.host=127.0.0.1",
        *jmx_auth,
        "-Dcom.sun.management.jmxremote.ssl=false",
        "-Dcom.sun.management.jmxremote.local.only=false",
        "-Djava.rmi.server.hostname=127.0.0.1",
        f"-Dkafka.logs.dir={node_dir / 'logs'}",
        *logging,
        # Marks the process as this stack's (see procs.ProcessTable.owned_pid).
        f"-Dkafka.health.stack={layout.dir.resolve()}",
        "-cp",
        classpath,
        "kafka.Kafka",
        str(node_dir / "server.properties"),
    ]


def prepare_node(layout: StackLayout, node_id: int, cluster_id: str, java: str, log: Path) -> None:
    """Write server.properties and format storage (idempotent: an already formatted dir is left as it is)."""
    node_dir = layout.node_dir(node_id)
    (node_dir / "logs").mkdir(parents=True, exist_ok=True)
    layout.log_dir(node_id).mkdir(parents=True, exist_ok=True)
    props = node_dir / "server.properties"
    fd = os.open(props, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # holds the keystore password when secured
    with os.fdopen(fd, "w") as f:
        f.write(node_properties(layout, node_id))
    os.chmod(props, 0o600)
    if (layout.log_dir(node_id) / "meta.properties").exists():
        return
    rc = run_tool_jvm(
        java,
        layout,
        log,
        layout.release.storage_tool,
        ["format", "-t", cluster_id, "-c", str(props), "--ignore-formatted"],
        heap="256m",
        props=tool_logging(node_dir / "logs"),
    )
    if rc != 0:
        raise StackError(f"formatting storage of {layout.node_name(node_id)} failed (exit {rc}); see {log}")


def node_spec(layout: StackLayout, node_id: int, java: str) -> ProcSpec:
    name = layout.node_name(node_id)
    return ProcSpec(name=name, argv=jvm_argv(layout, node_id, java), log=layout.logs_dir / f"{name}.out")
