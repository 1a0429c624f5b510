"""Which clients hurt a broker: slow clients behind a response-queue backlog, busy clients behind request-handler
and request-queue saturation, and outdated client software (by its KIP-511 name and version: a connection without a
name is unknown software, not outdated).

A slow reader shows in two ways: the broker-wide p99 of response send time rises (when the reader makes a fair
share of the broker's responses), or, per connection, the reader's socket send queue on the broker never drains
(host collector, per peer address): the second still sees one slow reader among many fast consumers, whose quick
responses keep the p99 low. Evidence says which ``trigger`` fired.

Per-client numbers come from the broker's quota sensors (request-time ratio, throttle time, byte rates, request
rate), labelled ``user`` and ``client_id``. They exist only once some quota of that type is configured, so the
evidence says ``clients: []`` with a reason instead of guessing when they are absent.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from alerts.detectors.context import DetectorContext, window_seconds
from alerts.types import Observation, Rule
from monitor.core.clients import is_outdated, principal_owners
from monitor.core.metric_names import PHASE_RESPONSE_SEND, M


@dataclass(frozen=True)
class ClientStats:
    user: str
    client_id: str
    request_time_ratio: float = 0.0  # share of a thread's time spent on this client's requests (network + I/O)
    throttle_seconds: float = 0.0
    bytes_per_second: float = 0.0  # produce + fetch

    def as_evidence(self) -> dict:
        return {
            "client_id": self.client_id,
            "user": self.user,
            "request_time_ratio": round(self.request_time_ratio, 4),
            "throttle_seconds": round(self.throttle_seconds, 4),
            "bytes_per_second": round(self.bytes_per_second, 1),
            "handler_seconds_per_mib": round(self.request_time_ratio * 1048576 / self.bytes_per_second, 4)
            if self.bytes_per_second
            else None,
        }


# ---------------------------------------------------------------------------------------------- pure decisions


def _mean_tail(values: list[float], n: int = 3) -> float:
    tail = values[-n:]
    return sum(tail) / len(tail) if tail else 0.0


def _mean_head(values: list[float], n: int = 3) -> float:
    head = values[:n]
    return sum(head) / len(head) if head else 0.0


def response_backlog(
    queue: list[float],
    network_idle: list[float],
    send_time: list[float],
    *,
    queue_threshold: float,
    network_idle_drop: float,
    send_time_ratio: float,
    min_send_seconds: float = float("inf"),
) -> dict | None:
    """Responses are slow to leave the broker, in one of the two ways Kafka shows it (``cause``):

    - ``network_threads``: the response queue is backed up *and* something shows responses are slow to leave:
      network threads lost idle time over the window, or response send time rose. A big queue alone (a burst) or
      idle loss alone (more traffic) is not a backlog.
    - ``slow_readers``: Kafka mutes a connection until its response is written, and network threads write without
      blocking, so a client that reads slowly never fills ResponseQueueSize nor costs idle time: its response sits
      in the network thread's in-flight sends. Only the response-send time shows it: the p99 is at least
      ``min_send_seconds`` (an absolute guard: a rise from 0.1 to 0.3 ms is no fault) and at least
      ``send_time_ratio`` times what it was at the start of the window.
    """
    idle_then, idle_now = _mean_head(network_idle), _mean_tail(network_idle)
    send_then, send_now = _mean_head(send_time), _mean_tail(send_time)
    idle_lost = bool(network_idle) and idle_then - idle_now >= network_idle_drop
    send_rose = bool(send_time) and send_then > 0 and send_now >= send_time_ratio * send_then
    slow_send = bool(send_time) and send_now >= min_send_seconds and send_now >= send_time_ratio * send_then
    queued = bool(queue) and _mean_tail(queue) > queue_threshold
    if queued and (idle_lost or send_rose):
        cause = "network_threads"
    elif slow_send:
        cause = "slow_readers"
    else:
        return None
    return {
        "cause": cause,
        "response_queue_size": round(_mean_tail(queue), 1) if queue else 0.0,
        "network_idle_before": round(idle_then, 3),
        "network_idle_now": round(idle_now, 3),
        "send_time_before_seconds": round(send_then, 4),
        "send_time_now_seconds": round(send_now, 4),
    }


def name_slow_peers(
    backlogs: dict[str, tuple[float, float]], members: list[dict], top: int, *, min_samples: float = 2
) -> list[dict]:
    """The peers a broker's socket send queues wait on, largest first, with the consumer-group members at each
    address. ``backlogs``: peer -> (sum of its send-queue samples over the window, number of samples in which it
    was non-empty); ``members``: ``{client_host, client_id, group, tenant}``. A peer backed up in fewer than
    ``min_samples`` samples caught a fast client mid-write, not a slow one."""
    at: dict[str, list[dict]] = {}
    for m in members:  # Prometheus drops empty labels: every one may be missing
        if not m.get("client_host"):
            continue
        entry = {"client_id": m.get("client_id", ""), "group": m.get("group", ""), "tenant": m.get("tenant", "")}
        if entry not in at.setdefault(m["client_host"], []):
            at[m["client_host"]].append(entry)
    ranked = sorted(((total, n, peer) for peer, (total, n) in backlogs.items() if n >= min_samples), reverse=True)
    return [
        {
            "peer": peer,
            "send_queue_bytes": round(total / n, 1),
            "samples_backed_up": int(n),
            "clients": sorted(at.get(peer, []), key=lambda c: (c["client_id"], c["group"])),
        }
        for total, n, peer in ranked[:top]
    ]


def rank_slow_clients(clients: list[ClientStats], top: int) -> list[ClientStats]:
    """Most likely slow first: a lot of thread time for few bytes (a client reading slowly keeps network threads
    busy writing its responses). Score = request-time ratio / (1 + MiB/s), throttling breaks ties."""

    def score(c: ClientStats) -> tuple:
        return (c.request_time_ratio / (1 + c.bytes_per_second / 1048576), c.throttle_seconds)

    return sorted((c for c in clients if c.request_time_ratio > 0 or c.throttle_seconds > 0), key=score, reverse=True)[
        :top
    ]


def rank_busy_clients(
    clients: list[ClientStats], top: int, *, min_share: float = 0.01, min_share_of_top: float = 0.25
) -> list[ClientStats]:
    """Most broker thread time per byte first: tiny produce batches (linger.ms=0) and aggressive polling
    (fetch.max.wait.ms small) cost handler time per request, not per byte. Kafka has no per-client request count, so
    the quota sensor's request-time (thread time used) stands for it. Clients using under ``min_share`` of a thread
    are not the cause, however few bytes they move. Clients with a material share, at least ``min_share_of_top`` of
    the busiest client's thread time, come before the rest: on a saturated broker every request's thread time grows,
    so a client that moves no bytes (the monitor's own admin requests, an idle consumer's heartbeats) at 3 % of a
    thread would otherwise out-rank, per byte, the flooder using half of it, and be named the busy client."""

    def per_byte(c: ClientStats) -> float:
        return c.request_time_ratio / max(c.bytes_per_second, 1.0)

    material = max((c.request_time_ratio for c in clients), default=0.0) * min_share_of_top
    return sorted(
        (c for c in clients if c.request_time_ratio >= min_share),
        key=lambda c: (c.request_time_ratio >= material, per_byte(c), c.request_time_ratio),
        reverse=True,
    )[:top]


# ---------------------------------------------------------------------------------------------- shells


def client_stats(ctx: DetectorContext, cluster: str, broker: str) -> list[ClientStats]:
    sel = f'{{cluster="{cluster}",broker="{broker}"}}'
    by = "user, client_id"
    fields = {
        "request_time_ratio": f"sum by ({by}) ({M['client_request_time']}{sel})",
        "throttle_seconds": 'max by ({}) ({{__name__=~"{}",cluster="{}",broker="{}"}})'.format(
            by,
            "|".join(M[k] for k in ("client_produce_throttle", "client_fetch_throttle", "client_request_throttle")),
            cluster,
            broker,
        ),
        "produce": f"sum by ({by}) ({M['client_produce_rate']}{sel})",
        "fetch": f"sum by ({by}) ({M['client_fetch_rate']}{sel})",
    }
    rows: dict[tuple[str, str], dict] = {}
    for field, expr in fields.items():
        for s in ctx.source.query(expr, ctx.now):
            key = (s.labels.get("user", ""), s.labels.get("client_id", ""))
            if s.value == s.value:  # quota -avg values are NaN when idle
                rows.setdefault(key, {})[field] = s.value
    out = []
    for (user, client_id), v in join_principals(rows).items():
        v["bytes_per_second"] = v.pop("produce", 0.0) + v.pop("fetch", 0.0)
        out.append(ClientStats(user=user, client_id=client_id, **v))
    return out


def join_principals(rows: dict[tuple[str, str], dict]) -> dict[tuple[str, str], dict]:
    """One client, one row: a user-less row joins its client id's principal (``principal_owners``), taking the larger
    throttle and the sum of the rest. Pure."""
    owner = principal_owners(rows)
    out: dict[tuple[str, str], dict] = {}
    for (user, cid), fields in rows.items():
        key = (owner[cid], cid) if not user and cid in owner else (user, cid)
        into = out.setdefault(key, {})
        for name, value in fields.items():
            if name not in into:
                into[name] = value
            else:
                into[name] = max(into[name], value) if name == "throttle_seconds" else into[name] + value
    return out


def _client_evidence(ctx: DetectorContext, cluster: str, ranked: list[ClientStats], all_: list[ClientStats]) -> dict:
    if not all_:
        return {
            "clients": [],
            "clients_note": "no per-client quota metrics on this broker (configure a quota to enable the sensors)",
        }
    # The totals are anonymous: a tenant's copy keeps them, so "other clients' share" is of the whole broker's.
    return {
        "clients": [
            dict(c.as_evidence(), tenant=ctx.tenants.for_client(cluster, client_id=c.client_id, user=c.user))
            for c in ranked
        ],
        "all_clients": len(all_),
        "all_clients_request_time_ratio": round(sum(c.request_time_ratio for c in all_), 4),
    }


def socket_backlogs(
    ctx: DetectorContext, window: str
) -> tuple[dict[tuple[str, str], dict[str, tuple[float, float]]], dict[tuple[str, str], float]]:
    """Per (cluster, broker): peer -> (sum of its send-queue samples over ``window``, samples in which it was
    non-empty), and how many samples the host collector took of that broker meanwhile (its log-dir filesystem
    series, present every round: the send-queue series exist only while a queue is non-empty)."""
    q = M["client_socket_backlog"]
    by = "cluster, broker, peer"
    totals = ctx.source.query(f"sum by ({by}) (sum_over_time({q}[{window}]))", ctx.now)
    counts = {
        (s.labels.get("cluster", ""), s.labels.get("broker", ""), s.labels.get("peer", "")): s.value
        for s in ctx.source.query(f"sum by ({by}) (count_over_time({q}[{window}]))", ctx.now)
    }
    out: dict[tuple[str, str], dict[str, tuple[float, float]]] = {}
    for s in totals:
        key, peer = _bk(s.labels), s.labels.get("peer", "")
        out.setdefault(key, {})[peer] = (s.value, counts.get((*key, peer), 0.0))
    rounds = {
        _bk(s.labels): s.value
        for s in ctx.source.query(f"max by (cluster, broker) (count_over_time({M['fs_avail']}[{window}]))", ctx.now)
    }
    return out, rounds


def persistent_backlog(
    backlogs: dict[str, tuple[float, float]], rounds: float, *, min_share: float, min_bytes: float
) -> dict | None:
    """A per-connection view of slow readers, which a broker-wide p99 cannot give: one slow reader among many fast
    consumers makes a small share of the broker's responses, so the response-send p99 stays low while that reader's
    socket send queue never drains. A peer whose queue was non-empty in at least ``min_share`` of the ``rounds``
    samples, holding ``min_bytes`` on average, is reading slower than the broker writes. Pure; None when no peer
    qualifies (or the number of samples is unknown)."""
    if rounds <= 0:
        return None
    held = [
        (total / n, n / rounds, peer)
        for peer, (total, n) in backlogs.items()
        if n > 0 and n / rounds >= min_share and total / n >= min_bytes
    ]
    if not held:
        return None
    mean, share, peer = max(held)
    return {
        "cause": "slow_readers",
        "trigger": "socket_backlog",
        "peer": peer,
        "send_queue_bytes": round(mean, 1),
        "backed_up_share": round(min(share, 1.0), 3),
    }


def slow_peers(
    ctx: DetectorContext, cluster: str, backlogs: dict[str, tuple[float, float]], window: str, top: int
) -> list[dict]:
    if not backlogs:
        return []
    members = [
        dict(s.labels)
        for s in ctx.source.query(
            f"max by (client_host, client_id, group, tenant) "
            f'(last_over_time({M["group_member_info"]}{{cluster="{cluster}"}}[{window}]))',
            ctx.now,
        )
    ]
    return name_slow_peers(backlogs, members, top)


def detect_slow_clients(rule: Rule, ctx: DetectorContext) -> list[Observation]:
    window = window_seconds(rule, default="15m")
    start, step = ctx.now - timedelta(seconds=window), max(window / 30, 15)
    by = "cluster, broker"
    top = int(rule.params.get("top_clients", 3))
    queue = {
        _bk(s.labels): s
        for s in ctx.source.query_range(f"max by ({by}) ({M['response_queue_size']})", start, ctx.now, step)
    }
    idle = {
        _bk(s.labels): s
        for s in ctx.source.query_range(f"avg by ({by}) ({M['network_processor_idle']})", start, ctx.now, step)
    }
    send = {
        _bk(s.labels): s
        for s in ctx.source.query_range(
            f'max by ({by}) ({M["request_latency"]}{{phase="{PHASE_RESPONSE_SEND}",quantile="0.99"}})',
            start,
            ctx.now,
            step,
        )
    }
    socket_window = str(rule.params.get("socket_window", "2m"))
    backlogs, rounds = socket_backlogs(ctx, socket_window)
    out = []
    for key in sorted(set(queue) | set(send) | set(backlogs)):
        verdict = response_backlog(
            list(queue[key].values) if key in queue else [],
            list(idle[key].values) if key in idle else [],
            list(send[key].values) if key in send else [],
            queue_threshold=float(rule.params["queue_threshold"]),
            network_idle_drop=float(rule.params["network_idle_drop"]),
            send_time_ratio=float(rule.params["send_time_ratio"]),
            min_send_seconds=float(rule.params.get("min_send_seconds", float("inf"))),
        )
        if verdict is not None:
            verdict["trigger"] = "response_queue" if verdict["cause"] == "network_threads" else "send_time_p99"
        else:
            socket = persistent_backlog(
                backlogs.get(key, {}),
                rounds.get(key, 0.0),
                min_share=float(rule.params.get("peer_backed_up_share", 0.8)),
                min_bytes=float(rule.params.get("min_peer_queue_bytes", 16384)),
            )
            if socket is None:
                continue
            send_now = _mean_tail(list(send[key].values)) if key in send else 0.0
            verdict = {
                **socket,
                "response_queue_size": round(_mean_tail(list(queue[key].values)), 1) if key in queue else 0.0,
                "send_time_now_seconds": round(send_now, 4),
            }
        stats = client_stats(ctx, *key)
        ranked = rank_slow_clients(stats, top)
        peers = slow_peers(ctx, key[0], backlogs.get(key, {}), socket_window, top)
        if verdict.get("trigger") == "socket_backlog":  # the peer that triggered it first, whatever its size
            peers.sort(key=lambda p: p["peer"] != verdict["peer"])
        evidence = {
            **verdict,
            **_client_evidence(ctx, key[0], ranked, stats),
            "slow_peers": peers,
            "client_software": _software(ctx, *key),
        }
        # The socket backlog is direct evidence of who reads slowly; the quota sensors' thread time only a hint.
        named = {c["client_id"] for c in peers[0]["clients"] if c["client_id"]} if peers else set()
        if len(named) == 1:
            client_id = named.pop()
            user = next((c.user for c in stats if c.client_id == client_id), "")
            evidence["slow_client"] = client_id
            evidence["slow_client_detail"] = {
                "client_id": client_id,
                "user": user,
                "peer": peers[0]["peer"],
                "groups": [c["group"] for c in peers[0]["clients"]],
                "tenant": ctx.tenants.for_client(key[0], client_id=client_id, user=user)
                or next((c["tenant"] for c in peers[0]["clients"] if c["tenant"]), None),
            }
        elif ranked:
            evidence["slow_client"] = ranked[0].client_id
        value = (
            verdict["response_queue_size"]
            if verdict["cause"] == "network_threads"
            else verdict["send_time_now_seconds"]
        )
        out.append(Observation(labels={"cluster": key[0], "broker": key[1]}, value=value, evidence=evidence))
    return out


def detect_busy_clients(rule: Rule, ctx: DetectorContext) -> list[Observation]:
    out = []
    for s in ctx.source.query(rule.expr, ctx.now):
        cluster, broker = _bk(s.labels)
        stats = client_stats(ctx, cluster, broker)
        ranked = rank_busy_clients(stats, int(rule.params.get("top_clients", 3)))
        evidence = {
            "value": s.value,
            "threshold": rule.params.get("threshold"),
            **_client_evidence(ctx, cluster, ranked, stats),
        }
        if ranked:
            evidence["busy_client"] = ranked[0].client_id
        out.append(Observation(labels={"cluster": cluster, "broker": broker}, value=s.value, evidence=evidence))
    return out


def detect_outdated_clients(rule: Rule, ctx: DetectorContext) -> list[Observation]:
    by = "cluster, broker, client_software_name, client_software_version"
    mins = dict(rule.params.get("min_versions", {}))
    out = []
    for s in ctx.source.query(f"sum by ({by}) ({M['client_connections']}) > 0", ctx.now):
        name, version = s.labels.get("client_software_name", ""), s.labels.get("client_software_version", "")
        if is_outdated(name, version, mins):
            labels = {
                k: s.labels.get(k, "") for k in ("cluster", "broker", "client_software_name", "client_software_version")
            }
            out.append(
                Observation(
                    labels=labels, value=s.value, evidence={"connections": s.value, "minimum_version": mins[name]}
                )
            )
    # Connections without a KIP-511 software name ("unknown") are not evidence of age: kafkajs (current) and older
    # sarama send none either. The advisor reports them as unknown software (info, the possibilities listed); this
    # alert stays for software whose name and version say outdated (issue 28).
    return out


def _software(ctx: DetectorContext, cluster: str, broker: str) -> list[dict]:
    by = "client_software_name, client_software_version"
    rows = ctx.source.query(
        f'topk(5, sum by ({by}) ({M["client_connections"]}{{cluster="{cluster}",broker="{broker}"}}))', ctx.now
    )
    return [
        {
            "name": s.labels.get("client_software_name"),
            "version": s.labels.get("client_software_version"),
            "connections": s.value,
        }
        for s in rows
    ]


def _bk(labels: dict[str, str]) -> tuple[str, str]:
    return labels.get("cluster", ""), labels.get("broker", "")
