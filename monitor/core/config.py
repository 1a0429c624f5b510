"""One strict, immutable configuration object, loaded once and passed down.

``load_config(path)`` reads YAML, validates it with pydantic (unknown keys rejected) and raises ``ConfigError`` with
*every* problem at once, each located as ``file:line``. Secrets never appear in the file: a value may be
``{env: KAFKA_HEALTH_X}`` or ``{file: /run/secrets/x}`` and is resolved at load time into a ``SecretStr`` whose
``repr`` and ``str`` hide the value. Where a secret could slip in anyway, validation refuses it and names the place
without echoing the value: credentials in a URL (``user:password@``; take ``username`` and ``password`` instead), a
query string on a service URL, a confluent-kafka secret key given inline (``SECRET_KAFKA_KEYS``). A webhook URL is a
secret as a whole (its path often is the token): errors say what is wrong with it, never what it is.

``embedded_default_config(...)`` builds the config the local stack and the demo run on, so the README's commands
need no file at all.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Self

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from monitor.core.errors import ConfigError, ConfigProblem
from monitor.core.redact import has_credentials
from monitor.core.tenancy import find_overlaps

NAME_RE = r"^[a-z0-9][a-z0-9_.-]{0,62}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SecretRef(_Strict):
    """Where a secret comes from. Exactly one of ``env`` or ``file``."""

    env: str | None = Field(default=None, pattern=r"^KAFKA_HEALTH_[A-Z0-9_]+$")
    file: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> SecretRef:
        if (self.env is None) == (self.file is None):
            raise ValueError("give exactly one of 'env' or 'file'")
        return self

    def resolve(self) -> SecretStr:
        if self.env is not None:
            value = os.environ.get(self.env)
            if value is None:
                raise ValueError(f"environment variable {self.env} is not set")
            return SecretStr(value)
        try:
            return SecretStr(Path(self.file).read_text().strip())  # type: ignore[arg-type]  # not env, so file (_one_source)
        except OSError as exc:
            raise ValueError(f"cannot read secret file {self.file}: {exc.strerror}") from None


# Kafka client settings that carry secrets: they may only be given as a SecretRef. librdkafka's names, plus the Java
# client's (users paste those too). A key not listed that still says password/secret/private key is treated alike
# (``is_secret_kafka_key``), so a new client setting fails closed.
SECRET_KAFKA_KEYS = frozenset(
    {
        "sasl.password",
        "sasl.jaas.config",
        "sasl.oauthbearer.config",
        "sasl.oauthbearer.client.secret",
        "sasl.oauthbearer.assertion.private.key.pem",
        "sasl.oauthbearer.assertion.private.key.passphrase",
        "ssl.key.pem",
        "ssl.key.password",
        "ssl.keystore.key",
        "ssl.keystore.password",
        "ssl.truststore.password",
    }
)
_SECRET_KEY_WORDS = re.compile(r"password|secret|passphrase|private\.key|jaas")


def is_secret_kafka_key(key: str) -> bool:
    k = key.strip().lower()
    return k in SECRET_KAFKA_KEYS or bool(_SECRET_KEY_WORDS.search(k))


def _service_url(v: str, credentials_in: str) -> str:
    """An http(s) base URL with no credentials, query or fragment in it. Errors never echo the value."""
    if not re.match(r"^https?://[^/?#]+", v):
        raise ValueError("must be an http(s) URL (http://host:port[/path])")
    if has_credentials(v):
        raise ValueError(f"do not put credentials in the URL; use {credentials_in} ({{env: KAFKA_HEALTH_...}})")
    if "?" in v or "#" in v:
        raise ValueError("must not carry a query string or fragment (a token there would reach logs)")
    return v


class _BasicAuth(_Strict):
    """HTTP basic auth for a service URL: ``username`` in the file, ``password`` a secret reference."""

    username: str | None = None
    password: SecretRef | None = None

    @model_validator(mode="after")
    def _both_or_neither(self) -> _BasicAuth:
        if (self.username is None) != (self.password is None):
            raise ValueError("give both username and password, or neither")
        return self

    def basic_auth(self) -> tuple[str, str] | None:
        """(username, password) for httpx, resolved now; None without credentials. Never log the result."""
        if self.username is None or self.password is None:
            return None
        return self.username, self.password.resolve().get_secret_value()


class JmxSettings(_Strict):
    # auto: a broker (or controller) listed with a Jolokia URL is read through it, one HTTP call per scrape; one
    # listed by JMX host:port only, with jmxquery (a JVM per scrape, about 20x the collector's CPU). jmxquery or
    # jolokia: every target with that transport.
    transport: Literal["auto", "jmxquery", "jolokia"] = "auto"
    timeout_seconds: float = Field(default=10.0, gt=0, le=300)
    username: str | None = None
    password: SecretRef | None = None
    # A controller read through Jolokia is also watched this often for its per-broker registration state and
    # heartbeat age, so a crash is told from a controlled shutdown whatever collection.interval_seconds and the
    # scrape interval are (collectors/controller_watch.py). 0: no watch.
    controller_watch_seconds: float = Field(default=2.0, ge=0, le=60)


class ScrapedSource(_BasicAuth):
    """An exporter's ``/metrics`` (``url``), or the same series read from a Prometheus that already scrapes the
    exporter (``federate``): ``url`` is then that Prometheus' base URL, and ``federate`` the series selector naming
    this one node's exporter among its targets, read from its ``/federate`` (``{job="kafka",pod="my-cluster-kafka-
    {id}"}``): the node is scraped once, by the platform's Prometheus, instead of twice. The labels that Prometheus
    adds to every series of a target (those of the target's ``up`` series: ``instance``, ``job`` and what its
    relabelling adds) are dropped before mapping; ``target_labels`` names them for a selector that leaves ``up``
    out. ``username`` and ``password`` (a secret reference) are the Prometheus' basic auth, ``bearer_token`` its
    token."""

    url: str
    federate: str | None = Field(
        default=None,
        max_length=500,
        description=(
            "read through the Prometheus at url: the series selector naming this node's exporter among its targets "
            '(a discovery template may use {host} and {id}: {job="kafka",pod="my-cluster-kafka-{id}"})'
        ),
    )
    target_labels: tuple[Annotated[str, Field(pattern=r"^[a-zA-Z_][a-zA-Z0-9_]{0,99}$")], ...] = Field(
        default=(),
        max_length=50,
        description=(
            "with federate and a selector that leaves out the target's up series (whose labels are dropped): the "
            "labels the Prometheus' relabelling adds to every series of the target (namespace, pod, ...), dropped "
            "before mapping; instance and job always are"
        ),
    )

    bearer_token: SecretRef | None = Field(
        default=None,
        description=(
            "with federate: the Prometheus' bearer token, a secret reference read at each request (a rotated "
            "Kubernetes token: {file: /var/run/secrets/kubernetes.io/serviceaccount/token})"
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _url_alone(cls, v: Any) -> Any:
        """``jmx_exporter: http://...`` is ``{url: http://...}`` (and the defaults)."""
        return {"url": v} if isinstance(v, str) else v

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        return v if "{host}" in v or "{id}" in v else _service_url(v, "no credentials (the exporter has none)")

    @field_validator("federate")
    @classmethod
    def _selector(cls, v: str | None) -> str | None:
        """One PromQL series selector (``name{...}``, ``{...}``) with no field but ``{host}`` and ``{id}``."""
        if v is None:
            return None
        bare = v.replace("{host}", "").replace("{id}", "")
        if bare.strip() == "{}" or not re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*|[a-zA-Z_:]*\{[^{}\n]*\}", bare.strip()):
            raise ValueError(
                'must be one series selector such as {job="kafka",pod="kafka-{id}"} (its only fields {host} and {id})'
            )
        return v

    @model_validator(mode="after")
    def _labels_need_federate(self) -> Self:
        if self.target_labels and self.federate is None:
            raise ValueError("target_labels are dropped from a Prometheus' /federate answer: give federate too")
        if (self.username is not None or self.bearer_token is not None) and self.federate is None:
            raise ValueError("credentials are the Prometheus' (federate): an exporter takes none")
        if self.username is not None and self.bearer_token is not None:
            raise ValueError("give username and password, or bearer_token, not both")
        return self

    def bearer(self) -> str | None:
        """The bearer token, read now (a token file rotates); None without one. Never log the result."""
        return self.bearer_token.resolve().get_secret_value() if self.bearer_token else None

    @property
    def key(self) -> str:
        """What names this source among a collector's: its URL, or the Prometheus' URL and the selector."""
        return self.url if self.federate is None else f"{self.url} {self.federate}"

    def for_node(self, host: str, node_id: int) -> Self:
        """This discovery template for one node: ``{host}`` and ``{id}`` replaced in the URL and the selector (in
        the selector as a PromQL string's content: a quote or backslash in a host name cannot end the string)."""
        quoted = host.replace("\\", "\\\\").replace('"', '\\"')
        return self.model_copy(
            update={
                "url": expand_template(self.url, host=host, node_id=node_id),
                "federate": expand_template(self.federate, host=quoted, node_id=node_id) if self.federate else None,
            }
        )


class ExporterSource(ScrapedSource):
    """A jmx_exporter and the naming its rules use (collectors/transports/exposition.py): ``vanilla`` (no rules, the
    default format, as Amazon MSK's open monitoring serves it), ``strimzi`` (Strimzi's kafka-metrics.yaml rules) or
    ``strimzi_reporter`` (Strimzi's metrics reporter plugin, not a jmx_exporter, read the same way); read from its
    ``/metrics`` or through the Prometheus that scrapes it (``ScrapedSource``)."""

    dialect: Literal["vanilla", "strimzi", "strimzi_reporter"] = "vanilla"


class NodeExporterSource(ScrapedSource):
    """The node_exporter of a broker's machine: its ``/metrics``, or through the Prometheus that scrapes it
    (``ScrapedSource``: ``{job="node",instance="{host}:9100"}``)."""


class ControllerExporter(ExporterSource):
    """A hand-listed KRaft controller's jmx_exporter. jmx_exporter's dialects drop the node id the controller's
    app-info MBean gives over JMX, so ``id`` names it (its series' ``broker`` label); else its host:port does."""

    id: int | None = Field(default=None, ge=0, description="the controller's node id (its broker label)")

    @model_validator(mode="after")
    def _federated_named(self) -> ControllerExporter:
        if self.federate is not None and self.id is None:
            raise ValueError("a controller read through a Prometheus (federate) needs its node id (id)")
        return self


class BrokerTarget(_Strict):
    id: int = Field(ge=0)
    jmx: str | None = Field(default=None, description="host:port of the broker's remote JMX")
    jolokia: str | None = Field(
        default=None,
        description=(
            "http://host:port/jolokia of the broker's Jolokia agent; credentials go in the cluster's jmx.username and "
            "jmx.password"
        ),
    )
    jmx_exporter: ExporterSource | None = Field(
        default=None,
        description=(
            "the broker's jmx_exporter (http://host:port/metrics) and its dialect, read instead of JMX/Jolokia"
        ),
    )
    node_exporter: NodeExporterSource | None = Field(
        default=None,
        description=(
            "http://host:port/metrics of the node_exporter on the broker's machine (or {url, federate}: through the "
            "Prometheus that scrapes it): host series without a collector there"
        ),
    )
    host: str = Field(default="localhost", description="host collector target; 'localhost' reads this machine")
    log_dirs: tuple[str, ...] = ()
    listener_ports: tuple[int, ...] = Field(
        default=(),
        description=(
            "ports the broker's listeners use on its host: the host collector measures per-peer socket backlogs "
            "(slow clients) on them; empty: not measured"
        ),
    )

    @field_validator("jmx")
    @classmethod
    def _hostport(cls, v: str | None) -> str | None:
        if v is not None and not re.match(r"^[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$", v):
            raise ValueError("must be host:port")
        return v

    @field_validator("jolokia")
    @classmethod
    def _jolokia_url(cls, v: str | None) -> str | None:
        return v if v is None else _service_url(v, "the cluster's jmx.username and jmx.password")

    @field_validator("node_exporter")
    @classmethod
    def _node_exporter_url(cls, v: NodeExporterSource | None) -> NodeExporterSource | None:
        if v is not None:
            _service_url(v.url, "no credentials (node_exporter has none here)")  # a listed one is no template
        return v


class ProbeSettings(_Strict):
    """The end-to-end probe of a cluster (collectors.probe): records produced with acks=all to one partition led by
    each broker and consumed back. On by default; it needs its ACLs on a secured cluster (docs/configuration.md)."""

    enabled: bool = True
    messages_per_second: float = Field(default=1.0, gt=0, le=10, description="records per second per broker")
    deadline_seconds: float = Field(
        default=20.0, ge=1, le=600, description=("a record not consumed back within this is counted lost")
    )
    topic: str = Field(
        default="__kafka_health_probe",
        pattern=r"^[A-Za-z0-9._-]{1,200}$",
        description=("the probe's topic; its consumer group has the same name"),
    )


TEMPLATE_FIELDS = ("host", "id")
_TEMPLATE_FIELD = re.compile(r"\{([^{}]*)\}")


def expand_template(template: str, *, host: str, node_id: int) -> str:
    """``http://{host}:8778/jolokia`` for one node. Only ``{host}`` and ``{id}`` are replaced (plain substitution, not
    ``str.format``: a template is data from a file, never code)."""
    return template.replace("{host}", host).replace("{id}", str(node_id))


def _template(v: str | None, check: Any) -> str | None:
    """A discovery template: only {host} and {id}, and what it expands to passes ``check`` (a URL or host:port)."""
    if v is None:
        return None
    unknown = sorted({f for f in _TEMPLATE_FIELD.findall(v) if f not in TEMPLATE_FIELDS})
    if unknown:
        named = ", ".join("{" + f + "}" for f in unknown)
        raise ValueError(f"unknown template field(s) {named}: use {{host}} and {{id}}")
    check(expand_template(v, host="broker.example", node_id=1))
    return v


class DiscoverySettings(_Strict):
    """Brokers and controllers found from the cluster's metadata (collectors.discovery), each source reached through a
    template of ``{host}`` (the node's advertised host) and ``{id}`` (its node id). On by default when ``brokers`` is
    empty; a hand-listed broker keeps its own entry, discovery adds the others."""

    enabled: bool | None = Field(
        default=None,
        description=(
            "find brokers (DescribeCluster) and controllers (DescribeQuorum) every collection round; default: on when "
            "brokers is empty"
        ),
    )
    jolokia: str | None = Field(default=None, description="Jolokia agent URL template, e.g. http://{host}:8778/jolokia")
    jmx: str | None = Field(default=None, description="remote JMX host:port template, e.g. {host}:9999")
    controller_jolokia: str | None = Field(
        default=None,
        description=("Jolokia URL template of the KRaft controllers found by DescribeQuorum (default: jolokia)"),
    )
    controller_jmx: str | None = Field(
        default=None, description=("JMX host:port template of the controllers found by DescribeQuorum (default: jmx)")
    )
    jmx_exporter: ExporterSource | None = Field(
        default=None,
        description=(
            "each broker's jmx_exporter: a URL template (http://{host}:11001/metrics on MSK) or {url, dialect}; read "
            "where no jolokia or jmx template is given"
        ),
    )
    controller_jmx_exporter: ExporterSource | None = Field(
        default=None,
        description=(
            "each KRaft controller's jmx_exporter found by DescribeQuorum: a URL template (http://{host}:9404/metrics "
            "on Strimzi) or {url, dialect}; read where no controller_jolokia or controller_jmx template is given "
            "(no default: MSK's controllers are not reachable)"
        ),
    )
    node_exporter: NodeExporterSource | None = Field(
        default=None,
        description=(
            "URL template of the node_exporter on each broker's machine (http://{host}:11002/metrics on MSK), or "
            "{url, federate}: through the Prometheus that scrapes it; CPU, memory, disk I/O and network, and disk "
            "where its mount is the log dir's volume (else DescribeLogDirs)"
        ),
    )

    @field_validator("jmx_exporter", "controller_jmx_exporter")
    @classmethod
    def _exporter_template(cls, v: ExporterSource | None) -> ExporterSource | None:
        if v is not None:
            _template(v.url, lambda u: _service_url(u, "no credentials (the exporter has none)"))
        return v

    @field_validator("node_exporter")
    @classmethod
    def _node_exporter_template(cls, v: NodeExporterSource | None) -> NodeExporterSource | None:
        if v is not None:
            _template(v.url, lambda u: _service_url(u, "no credentials (node_exporter has none here)"))
        return v

    @field_validator("jolokia", "controller_jolokia")
    @classmethod
    def _url_template(cls, v: str | None) -> str | None:
        return _template(v, lambda u: _service_url(u, "the cluster's jmx.username and jmx.password"))

    @field_validator("jmx", "controller_jmx")
    @classmethod
    def _hostport_template(cls, v: str | None) -> str | None:
        return _template(v, BrokerTarget._hostport)


class ClusterConfig(_Strict):
    name: str = Field(pattern=NAME_RE)
    bootstrap_servers: str = Field(min_length=1)
    # confluent-kafka client settings (security.protocol, sasl.mechanism, ...). Secret keys must be SecretRefs.
    security: dict[str, str | SecretRef] = Field(default_factory=dict)
    brokers: tuple[BrokerTarget, ...] = ()
    jmx: JmxSettings = JmxSettings()
    controller_jmx: tuple[str, ...] = ()
    controller_jolokia: tuple[str, ...] = Field(
        default=(),
        description=(
            "http://host:port/jolokia of the KRaft controllers' Jolokia agents, read with the cluster's "
            "jmx.username and jmx.password: the way to read controllers whose JMX wants a password"
        ),
    )
    controller_jmx_exporter: tuple[ControllerExporter, ...] = Field(
        default=(),
        description=(
            "the KRaft controllers' jmx_exporters (http://host:port/metrics, or {url, dialect, id}): their controller "
            "signals mapped onto the same series as controller_jmx and controller_jolokia"
        ),
    )
    probe: ProbeSettings = ProbeSettings()
    discovery: DiscoverySettings = DiscoverySettings()
    log_dirs_from_protocol: bool = Field(
        default=True,
        description=(
            "each log dir's total and usable bytes from DescribeLogDirs v4 (Kafka 3.3+), exported as the "
            "kafka_host_filesystem_* series for the brokers no host collector or node_exporter gives disk for"
        ),
    )

    @property
    def discovers(self) -> bool:
        """Whether brokers and controllers are found from the cluster's metadata (``discovery.enabled``, by default
        on when no broker is listed)."""
        return self.discovery.enabled if self.discovery.enabled is not None else not self.brokers

    @field_validator("controller_jmx")
    @classmethod
    def _controller_hostports(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for addr in v:
            BrokerTarget._hostport(addr)
        return v

    @field_validator("controller_jolokia")
    @classmethod
    def _controller_jolokia_urls(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_service_url(u, "the cluster's jmx.username and jmx.password") for u in v)

    @field_validator("security")
    @classmethod
    def _secrets_not_inline(cls, v: dict[str, Any]) -> dict[str, Any]:
        inline = sorted(k for k, value in v.items() if is_secret_kafka_key(k) and not isinstance(value, SecretRef))
        if inline:
            raise ValueError(
                f"{', '.join(repr(k) for k in inline)}: a secret; give it as {{env: KAFKA_HEALTH_...}} "
                f"or {{file: ...}}, never inline"
            )
        return v

    @model_validator(mode="after")
    def _unique_brokers(self) -> ClusterConfig:
        ids = [b.id for b in self.brokers]
        if len(ids) != len(set(ids)):
            raise ValueError("broker ids must be unique within a cluster")
        if self.controller_jolokia and self.jmx.transport == "jmxquery":
            raise ValueError("controller_jolokia needs jmx.transport: jolokia or auto")
        return self

    def client_settings(self) -> dict[str, str]:
        """confluent-kafka settings with secrets resolved. Never log the result."""
        out = {"bootstrap.servers": self.bootstrap_servers}
        for key, value in self.security.items():
            out[key] = value.resolve().get_secret_value() if isinstance(value, SecretRef) else value
        return out


class TenantSelector(_Strict):
    """A slice of one shared cluster. A resource belongs to the tenant if any selector list matches it."""

    cluster: str = Field(pattern=NAME_RE)
    topic_prefixes: tuple[str, ...] = ()
    principals: tuple[str, ...] = ()
    client_id_prefixes: tuple[str, ...] = ()
    group_prefixes: tuple[str, ...] = ()

    @field_validator("topic_prefixes", "principals", "client_id_prefixes", "group_prefixes")
    @classmethod
    def _non_empty(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if any(not p for p in v):
            raise ValueError("an empty entry would match everything; use whole_clusters to own a cluster")
        return v


class TenantContract(_Strict):
    produce_quota_bytes_per_second: int | None = Field(default=None, gt=0)
    fetch_quota_bytes_per_second: int | None = Field(default=None, gt=0)
    storage_budget_bytes: int | None = Field(default=None, gt=0)
    retention_hours: float | None = Field(default=None, gt=0)
    availability_objective: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description=(
            "share of minutes the tenant's Kafka must be available over slo.window_days, e.g. 0.999; default "
            "slo.objective (docs/alerts.md, tenant SLOs)"
        ),
    )


class TenantReceivers(_Strict):
    alertmanager: bool = True
    webhooks: tuple[str, ...] = ()
    labels: dict[str, str] = Field(default_factory=dict, description="extra labels on this tenant's alerts")

    @field_validator("webhooks")
    @classmethod
    def _urls(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        # A webhook URL is a secret as a whole (the path is often the token): say which entry and why, never echo it.
        for i, url in enumerate(v):
            if not re.match(r"^https?://[^/?#\s]+", url):
                raise ValueError(f"entry {i} is not an http(s) URL (the value is not shown: it may hold a token)")
        return v


class TenantDefinition(_Strict):
    """What a tenant owns and is promised. The config file and the REST API share it (a tenant = name + this)."""

    display_name: str | None = Field(default=None, max_length=200)
    whole_clusters: tuple[str, ...] = ()
    selectors: tuple[TenantSelector, ...] = ()
    contract: TenantContract = TenantContract()
    receivers: TenantReceivers = TenantReceivers()

    @model_validator(mode="after")
    def _owns_something(self) -> TenantDefinition:
        if not self.whole_clusters and not self.selectors:
            raise ValueError("a tenant needs whole_clusters or at least one selector")
        return self


class TenantConfig(TenantDefinition):
    name: str = Field(pattern=NAME_RE)


class PrometheusSettings(_BasicAuth):
    url: str = "http://127.0.0.1:9090"
    timeout_seconds: float = Field(default=10.0, gt=0)

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        return _service_url(v, "prometheus.username and prometheus.password")


# How long the alert engine may hold a claimed outbox group without a word to the database, its send included
# (alerts.notify.DeliveryPolicy.hold_seconds): past it the server ends the claim and the engine that took over sends
# the group again. A notifier's timeout must stay below it, or a slow but live send is duplicated.
DELIVERY_HOLD_SECONDS = 30.0


class AlertmanagerSettings(_BasicAuth):
    """Where the alert engine posts: ``url`` (one Alertmanager) or ``urls`` (every member of a gossiping cluster,
    each sent every alert; Alertmanager deduplicates the notifications between its peers). ``url: null`` and no
    ``urls``: no Alertmanager. One ``username``/``password`` for all of them. With ``urls``, ``url`` is its first
    entry (so a config written back out, defaults and all, reads the same)."""

    url: str | None = "http://127.0.0.1:9093"
    urls: tuple[str, ...] = Field(default=(), description="every Alertmanager of a cluster; instead of url")
    timeout_seconds: float = Field(default=10.0, gt=0)

    @field_validator("url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        return v if v is None else _service_url(v, "alertmanager.username and alertmanager.password")

    @field_validator("urls")
    @classmethod
    def _urls(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for i, url in enumerate(v):
            try:
                _service_url(url, "alertmanager.username and alertmanager.password")
            except ValueError as exc:
                raise ValueError(f"entry {i}: {exc}") from None
        if len({u.rstrip("/") for u in v}) != len(v):
            raise ValueError("an Alertmanager is listed twice (it would be sent every alert twice)")
        return v

    @field_validator("timeout_seconds")
    @classmethod
    def _below_hold(cls, v: float) -> float:
        if v >= DELIVERY_HOLD_SECONDS:
            raise ValueError(
                f"must be below {DELIVERY_HOLD_SECONDS:g} s, how long the alert engine may hold a claimed delivery: "
                "a slower send would be taken for a frozen engine's and sent again by the other engine"
            )
        return v

    @model_validator(mode="before")
    @classmethod
    def _url_is_the_first(cls, data: Any) -> Any:
        urls = data.get("urls") if isinstance(data, dict) else None
        if isinstance(urls, (list, tuple)) and urls and isinstance(urls[0], str) and "url" not in data:
            return {**data, "url": urls[0]}
        return data

    @model_validator(mode="after")
    def _url_or_urls(self) -> AlertmanagerSettings:
        if self.urls and self.url != self.urls[0]:
            raise ValueError("give url (one Alertmanager) or urls (a cluster of them), not both")
        return self

    def endpoints(self) -> tuple[str, ...]:
        """Every Alertmanager to send to, in the configured order (the first is outbox target ``alertmanager``)."""
        if self.urls:
            return self.urls
        return (self.url,) if self.url else ()


class StoreSettings(_Strict):
    # SQLAlchemy URL. A password in the URL is refused: use password (a SecretRef) instead.
    url: str = "sqlite:///kafka-health.db"
    password: SecretRef | None = None

    @field_validator("url")
    @classmethod
    def _no_inline_password(cls, v: str) -> str:
        if re.match(r"^[a-z0-9+]+://[^/@:]*:[^/@]+@", v):
            raise ValueError("do not put a password in the URL; use store.password: {env: KAFKA_HEALTH_...}")
        return v


class LakeSettings(_Strict):
    path: str = "lake"


# Series one target may export per round (collection.max_series_per_target). The Admin target of the largest shared
# clusters sizes it: 10,000 consumer groups of 2 members on 6 partitions (14 series each, with the group's kind) and
# 200,000 partitions in 10,000 topics (5 series each) make 190,065 series (bench/admin_series.py); 250,000 leaves 31 %
# headroom.
DEFAULT_MAX_SERIES_PER_TARGET = 250_000


class CollectionSettings(_Strict):
    interval_seconds: float = Field(default=15.0, gt=0, le=3600)
    max_workers: int = Field(default=8, ge=1, le=256)
    max_series_per_target: int = Field(default=DEFAULT_MAX_SERIES_PER_TARGET, ge=1)
    shard: str = Field(default="0/1", pattern=r"^\d+/\d+$")
    # Several processes of one shard (a standby beside each): the one holding the shard's lease in the store collects
    # and probes, the others stand by (docs/operations.md, "Collector shards"). Needs a PostgreSQL store.
    shard_lease: bool = False


class ServiceSettings(_Strict):
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    roles: tuple[Literal["api", "collector", "alerts"], ...] = ("api", "collector", "alerts")
    # Per API token: sustained requests per second and burst (token bucket); beyond it the API answers 429.
    api_rate_limit_per_second: float = Field(default=50.0, gt=0)
    api_rate_limit_burst: int = Field(default=100, ge=1)
    # Failed authentications one client address may make at once before 429 (then one per 2 s): a flood of wrong
    # tokens costs the store at most this many lookups per address.
    auth_failure_burst_per_address: int = Field(default=20, ge=1)


class RuleOverride(_Strict):
    threshold: float | None = None
    warning: float | None = None
    critical: float | None = None
    for_seconds: float | None = Field(default=None, ge=0)
    keep_firing_for_seconds: float | None = Field(default=None, ge=0)
    enabled: bool = True
    # Any other parameter of the rule (its ``params`` in rules.yaml), replaced whole: e.g. KafkaConsumerGroupLag's
    # ``groups`` (per group prefix or tenant: commit_interval, members_gone_for, ...). A key the rule lacks is an error.
    params: dict[str, Any] = Field(default_factory=dict)


# Where the alert catalog is published; each alert's runbook_url is this plus '#<alert name in lower case>'.
DEFAULT_RUNBOOK_BASE_URL = "https://github.com/kafka-health/kafka-health/blob/main/docs/alerts.md"


class RulesSettings(_Strict):
    evaluation_interval_seconds: float = Field(default=15.0, gt=0)
    overrides: dict[str, RuleOverride] = Field(default_factory=dict)
    files: tuple[str, ...] = Field(default=(), description="extra rule YAML files")
    runbook_base_url: str = Field(
        default=DEFAULT_RUNBOOK_BASE_URL,
        pattern=r"^https?://[^\s#?]+$",
        description="absolute URL of the alert catalog (docs/alerts.md, e.g. on an internal wiki or docs site); an "
        "alert's runbook_url annotation is this plus '#' and the alert name in lower case",
    )


class SloSettings(_Strict):
    """The tenants' availability objective where a contract sets none, and the window it is promised over."""

    objective: float = Field(default=0.999, gt=0, lt=1, description="default availability_objective of a contract")
    window_days: int = Field(default=28, ge=1, le=90, description="the SLO window: availability and error budget")


class ReportSettings(_Strict):
    schedule: str | None = Field(default=None, description="cron expression (UTC) for the weekly report inside serve")
    spark_master: str = "local[2]"

    @field_validator("schedule")
    @classmethod
    def _cron(cls, v: str | None) -> str | None:
        from croniter import croniter

        if v is not None and not croniter.is_valid(v):
            raise ValueError(f"not a cron expression (minute hour day-of-month month day-of-week): {v!r}")
        return v


class Config(_Strict):
    clusters: tuple[ClusterConfig, ...] = ()
    tenants: tuple[TenantConfig, ...] = ()
    prometheus: PrometheusSettings = PrometheusSettings()
    alertmanager: AlertmanagerSettings = AlertmanagerSettings()
    store: StoreSettings = StoreSettings()
    lake: LakeSettings = LakeSettings()
    rules: RulesSettings = RulesSettings()
    collection: CollectionSettings = CollectionSettings()
    service: ServiceSettings = ServiceSettings()
    reports: ReportSettings = ReportSettings()
    slo: SloSettings = SloSettings()

    @model_validator(mode="after")
    def _cross_refs(self) -> Config:
        names = [c.name for c in self.clusters]
        if len(names) != len(set(names)):
            raise ValueError("cluster names must be unique")
        tnames = [t.name for t in self.tenants]
        if len(tnames) != len(set(tnames)):
            raise ValueError("tenant names must be unique")
        known = set(names)
        for t in self.tenants:
            for c in list(t.whole_clusters) + [s.cluster for s in t.selectors]:
                if c not in known:
                    raise ValueError(f"tenant {t.name!r} refers to unknown cluster {c!r}")
        overlaps = find_overlaps(self.tenants)
        if overlaps:
            raise ValueError("; ".join(str(o) for o in overlaps))
        if self.collection.shard_lease and not self.store.url.startswith("postgresql"):
            # On SQLite every process holds the lease (one writer, one machine): two of one shard would both collect.
            raise ValueError("collection.shard_lease needs a PostgreSQL store (store.url postgresql+psycopg://...)")
        return self

    def cluster(self, name: str) -> ClusterConfig:
        for c in self.clusters:
            if c.name == name:
                return c
        raise KeyError(name)


# ---------------------------------------------------------------------------------------------------------------
# Loading with locations

KeyPath = tuple[Any, ...]  # keys and list indexes from the document's root: ("clusters", 0, "name")


def _line_index(node: yaml.Node, path: KeyPath = (), out: dict[KeyPath, int] | None = None) -> dict[KeyPath, int]:
    """Map every key path in the YAML document to its 1-based line."""
    out = {} if out is None else out
    out.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            out[path + (key,)] = key_node.start_mark.line + 1
            _line_index(value_node, path + (key,), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            out[path + (i,)] = item.start_mark.line + 1
            _line_index(item, path + (i,), out)
    return out


def _duplicate_keys(node: yaml.Node, filename: str, path: KeyPath = ()) -> list[ConfigProblem]:
    """Every key given twice in one mapping. PyYAML keeps the last silently, so the first would be ignored."""
    problems: list[ConfigProblem] = []
    if isinstance(node, yaml.MappingNode):
        first: dict[object, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # '<<: *anchor' may repeat: it is not a key
                continue
            key, line = key_node.value, key_node.start_mark.line + 1
            if isinstance(key, str) and key in first:
                problems.append(
                    ConfigProblem(
                        filename,
                        line,
                        _dotted(path + (key,)),
                        f"duplicate key (first at line {first[key]}); YAML keeps only the last",
                    )
                )
            elif isinstance(key, str):
                first[key] = line
            problems += _duplicate_keys(value_node, filename, path + (key,))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            problems += _duplicate_keys(item, filename, path + (i,))
    return problems


def _dotted(loc: KeyPath) -> str:
    s = ""
    for part in loc:
        s += f"[{part}]" if isinstance(part, int) else (f".{part}" if s else str(part))
    return s


def _locate(loc: KeyPath, lines: dict[KeyPath, int]) -> int | None:
    # pydantic may add a model name or union branch into loc; keep only the parts the document has.
    parts = tuple(p for p in loc if isinstance(p, int) or not (isinstance(p, str) and (p[:1].isupper() or "[" in p)))
    for n in range(len(parts), -1, -1):
        if parts[:n] in lines:
            return lines[parts[:n]]
    return None


def _resolve_secrets(cfg: Config, filename: str, lines: dict[KeyPath, int]) -> list[ConfigProblem]:
    """Check every SecretRef resolves now, so a missing env var is a config error, not a 3 a.m. surprise."""
    problems: list[ConfigProblem] = []

    def check(ref: SecretRef | None, loc: KeyPath) -> None:
        if ref is None:
            return
        try:
            ref.resolve()
        except ValueError as exc:
            problems.append(ConfigProblem(filename, _locate(loc, lines), _dotted(loc), str(exc)))

    for ci, c in enumerate(cfg.clusters):
        check(c.jmx.password, ("clusters", ci, "jmx", "password"))
        sources: list[tuple[ScrapedSource | None, KeyPath]] = [
            (getattr(b, key), ("clusters", ci, "brokers", bi, key))
            for key in ("jmx_exporter", "node_exporter")
            for bi, b in enumerate(c.brokers)
        ]
        sources += [
            (e, ("clusters", ci, "controller_jmx_exporter", ei)) for ei, e in enumerate(c.controller_jmx_exporter)
        ]
        sources += [
            (getattr(c.discovery, key), ("clusters", ci, "discovery", key))
            for key in ("jmx_exporter", "controller_jmx_exporter", "node_exporter")
        ]
        for source, loc in sources:
            if source is not None:
                check(source.password, (*loc, "password"))
                check(source.bearer_token, (*loc, "bearer_token"))
        for key, value in c.security.items():
            if isinstance(value, SecretRef):
                check(value, ("clusters", ci, "security", key))
    check(cfg.store.password, ("store", "password"))
    check(cfg.prometheus.password, ("prometheus", "password"))
    check(cfg.alertmanager.password, ("alertmanager", "password"))
    return problems


def parse_config(text: str, filename: str = "<config>") -> Config:
    """Parse and validate config text; raise ConfigError listing every problem with its location."""
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = ConfigProblem(filename, line, "", f"not valid YAML: {getattr(exc, 'problem', exc)}")
        raise ConfigError([problem]) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError([ConfigProblem(filename, 1, "", "the top level must be a mapping of sections")])
    lines = _line_index(node) if node is not None else {}
    duplicates = _duplicate_keys(node, filename) if node is not None else []
    try:
        cfg = Config.model_validate(data)
    except ValidationError as exc:
        problems = list(duplicates)
        for err in exc.errors(include_url=False, include_input=False):
            loc = tuple(err["loc"])
            msg = err["msg"]
            if err["type"] == "extra_forbidden":
                msg = "unknown key"
            msg = msg.removeprefix("Value error, ")
            problems.append(ConfigProblem(filename, _locate(loc, lines), _dotted(loc), msg))
        raise ConfigError(problems) from None
    problems = duplicates + _resolve_secrets(cfg, filename, lines)
    if problems:
        raise ConfigError(problems)
    return cfg


def load_config(path: str | os.PathLike[str]) -> Config:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ConfigError([ConfigProblem(str(p), None, "", f"cannot read: {exc.strerror}")]) from None
    return parse_config(text, str(p))


def key_line(path: str | os.PathLike[str], keys: KeyPath) -> int | None:
    """The 1-based line of ``keys`` (e.g. ``("rules", "overrides", "KafkaX")``) in the YAML file ``path``, else of
    its nearest enclosing key there; None if the file cannot be read. For a problem found in a loaded config by
    another package (an override naming no alert rule) to be located like the loader's own."""
    try:
        node = yaml.compose(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return None
    lines = _line_index(node) if node is not None else {}
    for n in range(len(keys), 0, -1):
        if keys[:n] in lines:
            return lines[keys[:n]]
    return None
