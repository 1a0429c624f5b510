"""The local real stack: one KRaft controller, three brokers, Prometheus and Alertmanager on loopback.

    stack = Stack(StackLayout(dir=Path("/tmp/s"), port_base=19100))
    stack.up()        # idempotent: running components are left alone
    stack.status()    # [ComponentStatus(...)]
    stack.down()      # stops exactly what this stack dir started

``Stack.config()`` returns the kafka-health ``Config`` that points at this stack (the demo's embedded default).
"""

from __future__ import annotations

import json
import logging
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from monitor.core.config import (
    AlertmanagerSettings,
    BrokerTarget,
    ClusterConfig,
    CollectionSettings,
    Config,
    DiscoverySettings,
    ExporterSource,
    JmxSettings,
    LakeSettings,
    PrometheusSettings,
    SecretRef,
    ServiceSettings,
    StoreSettings,
    TenantConfig,
)
from monitor.core.errors import ComponentFailed, StackError
from monitor.stack import kafka, observability, security, telemetry
from monitor.stack.layout import ALERTMANAGERS, CONTROLLER_ID, StackLayout
from monitor.stack.procs import ProcessTable, port_open, require_ports_free, tail

__all__ = ["Stack", "StackLayout", "ComponentStatus", "os_reason"]


@dataclass(frozen=True)
class ComponentStatus:
    name: str
    pid: int | None
    ports: tuple[int, ...]
    healthy: bool
    detail: str = ""


def _http_ok(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return 200 <= r.status < 300
    except Exception:  # noqa: BLE001 - whatever the failure, the endpoint is not up
        return False


# Readiness is polled, not slept for: a check that passes ends the wait within this (each check is a connect or an
# HTTP GET on loopback, cheap beside the JVMs starting).
READY_POLL_SECONDS = 0.25


class Stack:
    def __init__(self, layout: StackLayout, *, log=print):
        self.layout = layout
        self.procs = ProcessTable(layout.dir)
        self._log = log

    # --- components ----------------------------------------------------------------------------------------------
    @property
    def kafka_nodes(self) -> list[int]:
        return [CONTROLLER_ID, *self.layout.broker_ids]

    def component_names(self) -> list[str]:
        extra = ["node-exporter"] if self.layout.profile == "msk" else []
        return [self.layout.node_name(n) for n in self.kafka_nodes] + extra + ["prometheus", *self._alertmanagers()]

    def _alertmanagers(self) -> list[str]:
        return [self.layout.alertmanager_name(i) for i in range(ALERTMANAGERS)]

    def _alertmanager_url(self, name: str) -> str | None:
        """The URL of the stack's Alertmanager called ``name``; None for any other component."""
        names = self._alertmanagers()
        return self.layout.alertmanager_urls[names.index(name)] if name in names else None

    def _ports_of(self, name: str) -> tuple[int, ...]:
        L = self.layout
        if name == "controller":
            ports = (L.controller_port, L.controller_jmx_port) + ((L.controller_jolokia_port,) if L.secured else ())
            if L.reporter_controller:  # Strimzi's metrics reporter instead of the profile's agent (kafka.jvm_argv)
                return ports + (L.controller_reporter_port,)
            return ports + ((L.controller_exporter_port,) if L.profile in kafka.EXPORTER_CONFIGS else ())
        if name.startswith("broker-"):
            b = int(name.split("-")[1])
            ports = (L.broker_port(b),) if L.has_plaintext else ()
            if L.secured:
                ports += (L.sasl_port(b), L.internal_port(b))
            return ports + (L.broker_jmx_port(b),)
        if name == "node-exporter":
            return (L.node_exporter_port,)
        if name == "prometheus":
            return (L.prometheus_port,)
        i = self._alertmanagers().index(name)
        return (L.alertmanager_web_port(i), L.alertmanager_cluster_port(i))

    # --- up --------------------------------------------------------------------------------------------------------
    def up(self, timeout: float = 180.0) -> None:
        self.prepare_dir()
        try:
            self._up(timeout)
        except OSError as exc:  # a file or process the stack needs (cache dir full, binary gone): one line, no trace
            raise StackError(f"stack up failed: {os_reason(exc)}") from exc

    def prepare_dir(self) -> None:
        """Create the stack directory; a path that cannot be one (under a file, read-only) is a one-line StackError."""
        L = self.layout
        try:
            L.logs_dir.mkdir(parents=True, exist_ok=True)
            probe = L.dir / ".write-probe"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise StackError(
                f"cannot use {L.dir} as the stack directory ({os_reason(exc)}); pick another --dir"
            ) from exc

    def _up(self, timeout: float) -> None:
        L = self.layout
        setup_log = L.logs_dir / "setup.log"
        state = self._read_state()
        if state.get("kafka_version") and state["kafka_version"] != L.kafka_version:
            raise StackError(
                f"{L.dir} holds a Kafka {state['kafka_version']} cluster; use another --dir for {L.kafka_version}"
            )
        # Ports of components not already running must be free; a running one of ours keeps its ports.
        wanted = {}
        for name in self.component_names():
            if self.procs.owned_pid(name) is None:
                for port in self._ports_of(name):
                    wanted[f"{name} ({port})"] = port
                if name.startswith("broker-"):  # its agent: Jolokia (collectors' bulk JMX transport) or exporter
                    b = int(name.split("-")[1])
                    if L.profile == "jolokia":
                        wanted[f"{name} jolokia ({kafka.jolokia_port(L, b)})"] = kafka.jolokia_port(L, b)
                    elif L.profile in kafka.EXPORTER_CONFIGS and b not in L.reporter_brokers:
                        wanted[f"{name} jmx_exporter ({L.broker_exporter_port(b)})"] = L.broker_exporter_port(b)
                    if b in L.reporter_brokers:
                        wanted[f"{name} metrics reporter ({L.broker_reporter_port(b)})"] = L.broker_reporter_port(b)
        running = [n for n in self.component_names() if n.startswith("broker-") and self.procs.owned_pid(n)]
        if running and state.get("profile", "jolokia") != L.profile:
            raise StackError(
                f"{L.dir} runs its brokers with --profile {state.get('profile', 'jolokia')}; "
                f"run `stack down` before `stack up --profile {L.profile}`"
            )
        require_ports_free(wanted)

        java = kafka.require_java()
        extra = ["node-exporter"] if L.profile == "msk" else []
        bins = observability.ensure_installed(["prometheus", "alertmanager", *extra], setup_log)
        self._log(f"resolving Kafka {L.kafka_version} jars (cached in {L.jars_dir.parent}) ...")
        kafka.ensure_jars(L, setup_log)
        kafka.ensure_agents(setup_log)
        if L.reporter_brokers or L.reporter_controller:
            kafka.ensure_reporter(setup_log)
        telemetry.ensure_plugin(setup_log)

        made = state.get("security") or ("plaintext" if state.get("cluster_id") else None)  # older dirs: plaintext
        if made not in (None, L.security_mode):
            raise StackError(
                f"{L.dir} holds a cluster made with --security {made}; use another --dir "
                f"for --security {L.security_mode}"
            )
        if L.secured:
            security.StackSecurity(L).ensure()
        cluster_id = state.get("cluster_id") or kafka.new_cluster_id()
        self._write_state(
            {
                **state,
                "cluster_id": cluster_id,
                "kafka_version": L.kafka_version,
                "port_base": L.port_base,
                "security": L.security_mode,
                "profile": L.profile,
            }
        )
        started: list[str] = []
        try:
            self._start_kafka(cluster_id, java, setup_log, started)
            specs = [
                observability.prometheus_spec(L, bins["prometheus"]),
                *(observability.alertmanager_spec(L, bins["alertmanager"], i) for i in range(ALERTMANAGERS)),
            ]
            if "node-exporter" in bins:
                specs.insert(0, observability.node_exporter_spec(L, bins["node-exporter"]))
            for spec in specs:
                if not self.procs.owned_pid(spec.name):
                    self.procs.start(spec)
                    started.append(spec.name)
            if started:
                self._log(f"started {', '.join(started)}; waiting for readiness ...")
            self.wait_ready(timeout)
            if L.secured and not self._read_state().get("principals"):
                self._bootstrap_principals()
            self._configure_cluster(java, setup_log, timeout)
        except BaseException:
            # Leave nothing half-started behind: stop what this call started.
            for name in reversed(started):
                self.procs.stop(name, timeout=5)
            raise

    def _start_kafka(self, cluster_id: str, java: str, log: Path, started: list[str]) -> None:
        """Start every node not running, each as soon as its storage is formatted: the formats (a short JVM each)
        run side by side, and the controller, first in line, starts while the brokers' formats still run.
        ``started`` gets the names of those started (the caller stops them if a later step fails)."""
        L = self.layout
        missing = [n for n in self.kafka_nodes if not self.procs.owned_pid(L.node_name(n))]
        with ThreadPoolExecutor(max_workers=max(1, len(missing))) as pool:
            formats = {n: pool.submit(kafka.prepare_node, L, n, cluster_id, java, log) for n in missing}
            for node in missing:
                formats[node].result()
                self.procs.start(kafka.node_spec(L, node, java))
                started.append(L.node_name(node))

    def _configure_cluster(self, java: str, log: Path, timeout: float) -> None:
        """Once per stack dir: the default client quota (so per-client quota sensors exist), the client telemetry
        subscription (so the demo's and tests' clients push); on every up: __consumer_offsets while every broker
        is up. Three independent admin steps, two of them a kafka-configs JVM each, run side by side; the state
        file is written here only, after them."""
        L = self.layout
        state = self._read_state()
        sub = telemetry.Subscription(interval_ms=telemetry.STACK_INTERVAL_MS)
        steps = {}
        with ThreadPoolExecutor(max_workers=3) as pool:
            steps["offsets"] = pool.submit(self._ensure_offsets_topic, java, log, timeout)
            if not state.get("default_client_quota"):
                steps["default_client_quota"] = pool.submit(kafka.set_default_client_quota, L, java, log)
            if not state.get("telemetry_subscription"):
                steps["telemetry_subscription"] = pool.submit(
                    kafka.run_config_command,
                    L,
                    java,
                    log,
                    sub.config_command_args(),
                    what="the client telemetry subscription",
                )
        done = {"default_client_quota": kafka.DEFAULT_CLIENT_QUOTA, "telemetry_subscription": sub.add_config}
        for key, step in sorted(steps.items(), key=lambda kv: kv[0] == "offsets"):  # state of what succeeded first
            step.result()
            if key in done:
                self._write_state({**self._read_state(), key: done[key]})

    def _ensure_offsets_topic(self, java: str, log: Path, timeout: float) -> None:
        """Create __consumer_offsets while every broker is up. Kafka creates it on the first group's FindCoordinator,
        placing fenced brokers last in every replica list: created while a broker restarts, that broker is the
        preferred leader of no partition, coordinates no group ever after, and no preferred leader election helps
        (seen when a disk fault's restart came before the first group of a fresh stack). The Java Admin client asks for
        the coordinator: librdkafka's list_consumer_group_offsets, asked while the topic was being made, crashed the
        process (SIGSEGV in rd_kafka_cgrp_op, confluent-kafka 2.16.1)."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({**self.admin_settings(), "logger": _QUIET})
        deadline, asked = time.monotonic() + timeout, False
        while True:
            try:
                t = admin.list_topics("__consumer_offsets", timeout=10).topics.get("__consumer_offsets")
            except Exception:  # noqa: BLE001 - a broker still settling: asked again
                t = None
            if t is not None and t.error is None and t.partitions and all(p.leader >= 0 for p in t.partitions.values()):
                return
            if not asked:  # the group itself is never made: nothing is committed
                kafka.find_coordinator(self.layout, java, log, "kafka-health-stack")
                asked = True
            if time.monotonic() > deadline:
                raise ComponentFailed("kafka", f"__consumer_offsets not created after {timeout:.0f}s", str(log))
            time.sleep(READY_POLL_SECONDS)

    def wait_ready(self, timeout: float) -> None:
        L = self.layout
        deadline = time.monotonic() + timeout
        checks = [
            ("prometheus", lambda: _http_ok(f"{L.prometheus_url}/-/ready"), L.logs_dir / "prometheus.log"),
            *(
                (name, lambda url=url: _http_ok(f"{url}/-/ready"), L.logs_dir / f"{name}.log")
                for name, url in zip(self._alertmanagers(), L.alertmanager_urls)
            ),
            ("kafka", self._kafka_ready, L.logs_dir / "broker-1.out"),
        ]
        for name, check, log in checks:
            while True:
                dead = [c for c in self.component_names() if self.procs.owned_pid(c) is None]
                if dead:
                    first = dead[0]
                    jvm = first.startswith(("broker", "controller"))
                    log_file = L.logs_dir / (f"{first}.out" if jvm else f"{first}.log")
                    last = tail(log_file, 3)
                    why = "exited during start-up" + (f": {last.splitlines()[-1]}" if last else "")
                    raise ComponentFailed(first, why, str(log_file))
                if check():
                    break
                if time.monotonic() > deadline:
                    raise ComponentFailed(name, f"not ready after {timeout:.0f}s", str(log))
                time.sleep(READY_POLL_SECONDS)

    def _bootstrap_principals(self) -> None:
        """SCRAM users ``admin`` and ``kafka-health``, the monitoring principal's ACLs (and ANONYMOUS's on a test
        stack's PLAINTEXT listener), ``clients/admin.properties``. Once per stack dir."""
        L = self.layout
        sec = security.StackSecurity(L)
        security.create_scram_users(sec, [security.ADMIN, security.MONITOR])
        security.create_acls(sec, security.monitor_acls() + (security.anonymous_acls() if L.has_plaintext else []))
        sec.write_client_properties("admin", security.ADMIN)
        self._write_state({**self._read_state(), "principals": [security.ADMIN, security.MONITOR]})

    def add_principal(
        self,
        user: str,
        *,
        topic_prefixes: tuple[str, ...] = (),
        group_prefixes: tuple[str, ...] = (),
        properties_name: str | None = None,
    ) -> dict[str, str]:
        """A SCRAM principal ``User:<user>`` with rights on its topic and group prefixes (secured stacks): what a
        platform team does when it onboards a tenant's application. Writes ``clients/<properties_name>.properties``
        when a name is given; returns the principal's confluent-kafka settings (they hold its password)."""
        L = self.layout
        if not L.secured:
            raise StackError("principals exist only on a secured stack (stack up --secured)")
        sec = security.StackSecurity(L)
        security.create_scram_users(sec, [user])
        security.create_acls(
            sec, security.tenant_acls(f"User:{user}", topic_prefixes=topic_prefixes, group_prefixes=group_prefixes)
        )
        if properties_name:
            sec.write_client_properties(properties_name, user)
        return sec.sasl_settings(user)

    def admin_settings(self) -> dict[str, str]:
        """confluent-kafka settings with full rights on this stack: plaintext, or ``User:admin`` when secured."""
        L = self.layout
        if L.secured:
            return security.StackSecurity(L).sasl_settings(security.ADMIN)
        return {"bootstrap.servers": L.bootstrap_servers}

    def _kafka_ready(self) -> bool:
        return self.registered_brokers() >= len(self.layout.broker_ids)

    def registered_brokers(self) -> int:
        L = self.layout
        ports = [L.broker_port(b) if L.has_plaintext else L.internal_port(b) for b in L.broker_ids]
        if not all(port_open(p) for p in ports):
            return 0
        from confluent_kafka.admin import AdminClient

        settings = (
            {"bootstrap.servers": L.bootstrap_servers}
            if L.has_plaintext
            else security.StackSecurity(L).stack_admin_settings()
        )
        admin = AdminClient({**settings, "logger": _QUIET})
        try:
            return len(admin.list_topics(timeout=3).brokers)
        except Exception:  # noqa: BLE001 - whatever the failure, no broker answered
            return 0

    # --- down / status ----------------------------------------------------------------------------------------------
    def down(self) -> list[str]:
        """Stop every component; the names of those that were running. The brokers stop before the controller, so
        they can shut down in a controlled way (the controller moves their leaders and lets them go), and side by
        side with each other and the rest: one at a time, the three controlled shutdowns were most of the wait."""
        others = ["node-exporter", "prometheus", *self._alertmanagers()]  # node-exporter: whatever the profile now
        brokers = [self.layout.node_name(b) for b in reversed(self.layout.broker_ids)]
        first = [*others, *brokers]
        with ThreadPoolExecutor(max_workers=len(first)) as pool:
            stopped = [name for name, ok in zip(first, pool.map(self.procs.stop, first)) if ok]
        controller = self.layout.node_name(CONTROLLER_ID)
        return stopped + [controller] if self.procs.stop(controller) else stopped

    def status(self) -> list[ComponentStatus]:
        L = self.layout
        out = []
        brokers_registered = None
        for name in self.component_names():
            pid = self.procs.owned_pid(name)
            ports = self._ports_of(name)
            healthy, detail = False, "not running"
            if pid:
                if name == "prometheus":
                    healthy = _http_ok(f"{L.prometheus_url}/-/ready")
                elif am_url := self._alertmanager_url(name):
                    healthy = _http_ok(f"{am_url}/-/ready")
                else:
                    healthy = all(port_open(p) for p in ports)
                detail = "ready" if healthy else "not answering"
                if name.startswith("broker") and healthy:
                    if brokers_registered is None:
                        brokers_registered = self.registered_brokers()
                    detail = f"ready ({brokers_registered} brokers registered)"
            out.append(ComponentStatus(name, pid, ports, healthy, detail))
        return out

    # --- state --------------------------------------------------------------------------------------------------
    def _state_file(self) -> Path:
        return self.layout.dir / "stack.json"

    def _read_state(self) -> dict:
        try:
            return json.loads(self._state_file().read_text())
        except (OSError, ValueError):
            return {}

    def _write_state(self, state: dict) -> None:
        self._state_file().write_text(json.dumps(state, indent=2))

    # --- config for the rest of kafka-health ---------------------------------------------------------------------
    def write_config(self, config: Config) -> Path:
        """Write ``config`` as YAML to ``layout.config_file``, so ``--config FILE`` of serve, archive and report runs
        on exactly what the demo runs on. Only non-default values are written; the file passes ``check-config``."""
        import yaml

        path = self.layout.config_file
        data = config.model_dump(mode="json", exclude_defaults=True)
        if "tenants" in data:  # name first: it is what a reader looks for
            data["tenants"] = [{"name": t.pop("name"), **t} for t in data["tenants"]]
        body = yaml.safe_dump(data, sort_keys=False)
        text = (
            f"# kafka-health config of the local stack in {self.layout.dir}, written by `kafka-health demo`.\n"
            f"# Use it with --config (serve, archive, report, tenants); check it with check-config.\n{body}"
        )
        tmp = path.with_name(path.name + ".tmp")
        try:
            tmp.write_text(text)
            tmp.replace(path)  # atomic: a reader never sees half a file
        except OSError as exc:
            raise StackError(f"cannot write the config file: {os_reason(exc)}") from exc
        return path

    def config(self, *, tenants: tuple[TenantConfig, ...] = (), store_url: str | None = None) -> Config:
        L = self.layout

        def listener_ports(b: int) -> tuple[int, ...]:
            ports = ((L.broker_port(b),) if L.has_plaintext else ()) + ((L.sasl_port(b),) if L.secured else ())
            return ports + ((L.client_listener_port(b),) if L.client_listener_host else ())

        brokers = tuple(
            BrokerTarget(
                id=b,
                jmx=f"127.0.0.1:{L.broker_jmx_port(b)}",
                jolokia=kafka.jolokia_url(L, b),
                host="localhost",
                log_dirs=(str(L.log_dir(b)),),
                listener_ports=listener_ports(b),
            )
            for b in L.broker_ids
        )
        # The brokers carry the Jolokia agent: one HTTP call per scrape instead of a JVM start per jmxquery call
        # (about 20x less collector CPU, which on a 2-core machine is what keeps the demo and tests responsive).
        jmx = JmxSettings(transport="jolokia", timeout_seconds=10)
        client: dict = {}
        controller: dict = {"controller_jmx": (f"127.0.0.1:{L.controller_jmx_port}",)}
        if L.secured:
            # The monitoring principal (least rights) over SASL_SSL; JMX through Jolokia with basic auth. Secrets
            # are file references: the written config file never holds one.
            sec = security.StackSecurity(L)
            client = {
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": security.SCRAM,
                "sasl.username": security.MONITOR,
                "sasl.password": SecretRef(file=str(sec.scram_password_file(security.MONITOR))),
                "ssl.ca.location": str(sec.ca_cert),
            }
            sec.password("jmx-monitor")
            jmx = JmxSettings(
                transport="jolokia",
                timeout_seconds=10,
                username=security.JMX_USER,
                password=SecretRef(file=str(sec.secret_file("jmx-monitor"))),
            )
            controller = {"controller_jolokia": (f"http://127.0.0.1:{L.controller_jolokia_port}/jolokia",)}
        sources: dict = {"brokers": brokers, **controller}
        if L.profile != "jolokia":
            sources = self._profile_sources()
        cluster = ClusterConfig(
            name="local",
            bootstrap_servers=L.client_bootstrap,
            security=client,
            jmx=jmx,
            **sources,
        )
        return Config(
            clusters=(cluster,),
            tenants=tenants,
            prometheus=PrometheusSettings(url=L.prometheus_url),
            alertmanager=AlertmanagerSettings(urls=L.alertmanager_urls),
            store=StoreSettings(url=store_url or f"sqlite:///{L.dir / 'kafka-health.db'}"),
            lake=LakeSettings(path=str(L.dir / "lake")),
            service=ServiceSettings(port=L.service_port),
            collection=CollectionSettings(interval_seconds=L.scrape_interval_seconds),
        )

    def _profile_sources(self) -> dict:
        """How a user of the profile's platform points kafka-health at it: nothing but bootstrap_servers (protocol),
        or each broker's jmx_exporter (strimzi, msk) and the machine's node_exporter (msk); the controller's
        jmx_exporter on strimzi (found by DescribeQuorum; the msk profile's controller runs one too, but MSK's
        controllers are not reachable, so its config reads none), no /proc host collector (disk from DescribeLogDirs,
        or from node_exporter where it lists the log dir's mount). The brokers are found by discovery with templates
        where ``{id}`` can spell their exporter ports (a port base that is a multiple of 10), else listed."""
        L = self.layout
        if L.profile == "protocol":
            return {}
        dialect = "strimzi" if L.profile == "strimzi" else "vanilla"
        node = f"http://127.0.0.1:{L.node_exporter_port}/metrics" if L.profile == "msk" else None
        controller = None
        if L.profile == "strimzi":  # one controller: its port needs no {id}
            controller = {"url": f"http://{{host}}:{L.controller_exporter_port}/metrics", "dialect": dialect}
        if L.port_base % 10 == 0 and all(b < 10 for b in L.broker_ids):
            url = f"http://{{host}}:{(L.port_base + 80) // 10}{{id}}/metrics"
            template = node and node.replace("127.0.0.1", "{host}")
            found = DiscoverySettings(
                jmx_exporter={"url": url, "dialect": dialect},
                node_exporter=template,
                controller_jmx_exporter=controller,
            )
            return {"discovery": found}
        listed = (controller | {"url": controller["url"].replace("{host}", "127.0.0.1")},) if controller else ()
        return {
            "controller_jmx_exporter": listed,
            "brokers": tuple(
                BrokerTarget(
                    id=b,
                    jmx_exporter=ExporterSource(
                        url=f"http://127.0.0.1:{L.broker_exporter_port(b)}/metrics", dialect=dialect
                    ),
                    node_exporter=node,
                )
                for b in L.broker_ids
            ),
        }


def os_reason(exc: OSError) -> str:
    """An OSError in a user's words: ``Not a directory: /x/y`` rather than ``[Errno 20] ...``."""
    what = exc.strerror or str(exc)
    return f"{what}: {exc.filename}" if exc.filename else what


# librdkafka logs every refused connection while brokers start; start-up probing should not spam the terminal.
_QUIET = logging.getLogger("kafka_health.stack.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False
