"""A broker down, told from a restart by how the KRaft controller saw it leave.

The controller (Kafka 4.x) exports, per registered broker, its registration state (30 active, 20 in controlled
shutdown, 10 fenced) and the age of the last heartbeat it received (capped at ``broker.session.timeout.ms``, 9 s by
default; brokers heartbeat every 2 s). How a broker leaves shows in them:

    crash (SIGKILL), hang (SIGSTOP)   stays registered ACTIVE while its heartbeat age grows; the controller fences it
                                      when the age reaches the session timeout
    controlled shutdown (SIGTERM)     asks to shut down: CONTROLLED_SHUTDOWN, leadership moves away, then FENCED while
                                      its heartbeats are fresh; the process exits, and only then does the age grow
    start after either                re-registers FENCED with fresh heartbeats; ACTIVE once it caught up

An *episode* is a broker's run of samples that are not healthy (healthy: ACTIVE with a heartbeat age under
``lost_after``; without controller series, in the Admin API's metadata). Its cause, first match:

    1 HEARTBEATS_LOST  a sample ACTIVE with age >= lost_after: it stopped heartbeating without asking to leave
    2 CONTROLLED       a sample CONTROLLED_SHUTDOWN, or FENCED with age under the session timeout (fenced while it
                       still heartbeated: the controller fences a silent broker only when its session expires)
    3 UNKNOWN          nothing tells: no controller series (Kafka 3.9, controller not collected), samples sparser
                       than the session timeout (the transition fell between two), or the episode began before the
                       looked-back range

KafkaBrokerUnreachable, per broker now (``decide_down``):

    A  healthy now, or not down by any source            nothing
    B  HEARTBEATS_LOST                                    fire at once, fenced yet or not
    C  CONTROLLED for less than restart_grace             nothing: a restart in progress
    D  CONTROLLED for restart_grace or longer             fire at once: it did not come back
    E  UNKNOWN, and not in the metadata (broker_up 0)     the rule's ``for``, as a plain threshold rule would

KafkaUnderReplicatedPartitions is not judged on a cluster while one of its brokers is in a controlled restart
(``restarting``): its last episode CONTROLLED, and either not over and younger than restart_grace, or over for less
than restart_settle (its followers catch up after it is back). A crash is not a restart: there the broker-down alert
fires and inhibits under-replication (alerts/mute.py).

The distinction needs the controller's gauges sampled more often than the session timeout: collection and scrape
every 5 s see each transition; at 15 s most are missed and such episodes are UNKNOWN. The collector's controller
watch (collectors/controller_watch.py) reads Jolokia controllers every 2 s and exports each departure's cause as a
counter and a timestamp: an UNKNOWN episode takes the cause of the watch's latest departure of that broker when that
began at most ``slack`` (60 s) before it (``told``). The classification itself is monitor/core/liveness.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta

from alerts.detectors.context import DetectorContext, window_seconds
from alerts.types import Observation, Rule
from monitor.core.liveness import (  # noqa: F401 - the classification's names, used here and by callers
    ACTIVE,
    CONTROLLED_SHUTDOWN,
    FENCED,
    BrokerSample,
    Cause,
    Episode,
    Thresholds,
    cause_of,
    episodes,
    healthy,
)
from monitor.core.metric_names import M


@dataclass(frozen=True)
class Verdict:
    """What KafkaBrokerUnreachable does about one broker now: ``fire`` with ``for_seconds`` (None: the rule's)."""

    fire: bool
    rule: str  # A-E of the module docstring
    for_seconds: float | None = None
    episode: Episode | None = None


Departure = tuple[Cause, float]  # the controller watch's latest departure of a broker: its cause and when it began


def told(eps: list[Episode], departure: Departure | None, slack: float) -> list[Episode]:
    """``eps`` with the last episode's UNKNOWN cause replaced by the controller watch's ``departure``
    (collectors/controller_watch.py) when that began at most ``slack`` seconds before the episode did: the watch
    reads the controller every 2 s, so it saw what sparse samples missed. Pure."""
    if not eps or departure is None or eps[-1].cause is not Cause.UNKNOWN or departure[1] < eps[-1].start - slack:
        return eps
    return [*eps[:-1], replace(eps[-1], cause=departure[0], seen_leaving=True)]


def decide_down(
    history: Sequence[BrokerSample],
    now: float,
    t: Thresholds,
    *,
    down_now: bool,
    departure: Departure | None = None,
    slack: float = 60.0,
) -> Verdict:
    """``down_now``: the plain condition holds (not in the metadata); ``history`` the broker's samples;
    ``departure``: the controller watch's latest departure of the broker, if any."""
    eps = told(episodes(history, t), departure, slack)
    ep = eps[-1] if eps and eps[-1].end is None else None
    if ep is None:  # healthy at its latest sample; the Admin API may lag a collection behind the controller
        plain = down_now and not history_says_healthy(history, t)
        return Verdict(plain, "E" if plain else "A")
    if ep.cause is Cause.HEARTBEATS_LOST:
        return Verdict(True, "B", 0.0, ep)
    if ep.cause is Cause.CONTROLLED:
        if now - ep.start < t.restart_grace:
            return Verdict(False, "C", None, ep)
        return Verdict(True, "D", 0.0, ep)
    return Verdict(down_now, "E" if down_now else "A", None, ep)


def history_says_healthy(history: Sequence[BrokerSample], t: Thresholds) -> bool:
    """The controller's latest word is that the broker is healthy (the Admin API may lag a collection behind)."""
    latest = next((s for s in sorted(history, key=lambda s: -s.time) if s.state is not None), None)
    return latest is not None and bool(healthy(latest, t))


def restarting(
    history: Sequence[BrokerSample],
    now: float,
    t: Thresholds,
    *,
    departure: Departure | None = None,
    slack: float = 60.0,
) -> Episode | None:
    """The broker's controlled restart, if one is in progress or settling now (see the module docstring)."""
    eps = told(episodes(history, t), departure, slack)
    if not eps or eps[-1].cause is not Cause.CONTROLLED:
        return None
    ep = eps[-1]
    if ep.end is None:
        return ep if now - ep.start < t.restart_grace else None
    return ep if now - ep.end < t.restart_settle else None


# ------------------------------------------------------------------------------------------- the shells


def thresholds(rule: Rule) -> Thresholds:
    return Thresholds(
        lost_after=window_seconds(rule, "lost_after", "5s"),
        session_timeout=window_seconds(rule, "session_timeout", "9s"),
        restart_grace=window_seconds(rule, "restart_grace", "5m"),
        restart_settle=window_seconds(rule, "restart_settle", "3m"),
    )


def _active_controller(metric: str) -> str:
    # Only the active controller receives heartbeats: a standby reports the session timeout for every broker.
    return (
        f"min by (cluster, broker) ({metric} and on (cluster, controller) "
        f'label_replace({M["active_controllers"]} == 1, "controller", "$1", "broker", "(.*)"))'
    )


def histories(ctx: DetectorContext, rule: Rule) -> dict[tuple[str, str], list[BrokerSample]]:
    """(cluster, broker) -> samples over ``lookback`` every ``step``, from the controller and the Admin API."""
    lookback = window_seconds(rule, "lookback", "10m")
    step = window_seconds(rule, "step", "2s")
    start = ctx.now - timedelta(seconds=lookback)
    cols: dict[tuple[str, str], dict[float, dict[str, float]]] = {}
    for field_, expr in (
        ("state", _active_controller(M["broker_registration_state"])),
        ("age", _active_controller(M["broker_heartbeat_age"])),
        ("up", f"min by (cluster, broker) ({M['broker_up']})"),
    ):
        for s in ctx.source.query_range(expr, start, ctx.now, step):
            key = (s.labels.get("cluster", ""), s.labels.get("broker", ""))
            at = cols.setdefault(key, {})
            for ts, v in zip(s.times, s.values):
                at.setdefault(ts, {})[field_] = v
    return {key: [BrokerSample(ts, **vals) for ts, vals in sorted(at.items())] for key, at in cols.items()}


def departures(ctx: DetectorContext, rule: Rule) -> dict[tuple[str, str], Departure]:
    """(cluster, broker) -> the latest departure the controller watch saw within ``lookback``."""
    lookback = str(rule.params.get("lookback", "10m"))
    out: dict[tuple[str, str], Departure] = {}
    for s in ctx.source.query(
        f"max by (cluster, broker, cause) (max_over_time({M['broker_last_departure']}[{lookback}]))", ctx.now
    ):
        key = (s.labels.get("cluster", ""), s.labels.get("broker", ""))
        try:
            cause = Cause(s.labels.get("cause", ""))
        except ValueError:
            continue
        if key not in out or s.value > out[key][1]:
            out[key] = (cause, s.value)
    return out


def _evidence(v: Verdict, now: float) -> dict:
    ep = v.episode
    ev: dict = {"rule": v.rule, "cause": ep.cause.value if ep else Cause.UNKNOWN.value}
    if ep is not None:
        ev.update(
            {
                "since_seconds": round(now - ep.start, 1),
                "registration_state": ep.last.state,
                "heartbeat_age_seconds": ep.last.age,
                "in_metadata": ep.last.up,
            }
        )
    ev["why"] = {
        "B": "the controller received no heartbeat while the broker was registered active: a crash or a hang, "
        "not a shutdown",
        "D": "the broker shut down in a controlled way and has not come back within restart_grace",
        "E": "the broker is not in the cluster metadata; the controller's series do not say how it left",
    }.get(v.rule, "")
    return ev


def detect_broker_down(rule: Rule, ctx: DetectorContext) -> list[Observation]:
    t = thresholds(rule)
    now = ctx.now.timestamp()
    down = {(s.labels.get("cluster", ""), s.labels.get("broker", "")) for s in ctx.source.query(rule.expr, ctx.now)}
    hist = histories(ctx, rule)
    left = departures(ctx, rule)
    out = []
    for key in sorted(down | set(hist)):
        v = decide_down(hist.get(key, []), now, t, down_now=key in down, departure=left.get(key))
        if v.fire:
            out.append(
                Observation(
                    labels={"cluster": key[0], "broker": key[1]},
                    value=0.0,
                    evidence=_evidence(v, now),
                    for_seconds=v.for_seconds,
                )
            )
    return out


def detect_under_replicated(rule: Rule, ctx: DetectorContext) -> list[Observation]:
    """The threshold rule's series, except on clusters with a broker in a controlled restart."""
    hits = ctx.source.query(rule.expr, ctx.now)
    if not hits:
        return []
    t = thresholds(rule)
    now = ctx.now.timestamp()
    held: dict[str, list[str]] = {}
    left = departures(ctx, rule)
    for (cluster, broker), samples in histories(ctx, rule).items():
        if restarting(samples, now, t, departure=left.get((cluster, broker))) is not None:
            held.setdefault(cluster, []).append(broker)
    params = {k: v for k, v in rule.params.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return [
        Observation(labels=s.labels, value=s.value, evidence={"value": s.value, "expr": rule.expr, **params})
        for s in hits
        if s.labels.get("cluster", "") not in held
    ]
