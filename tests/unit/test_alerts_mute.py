"""The built-in inhibition rules, one numbered case per question: which firing source mutes which target."""

import pytest

from alerts.mute import DEFAULT_INHIBIT_RULES, Inhibitor
from alerts.types import AlertState, Instance, Severity

pytestmark = pytest.mark.unit
DOWN = "KafkaBrokerUnreachable"


def _inst(alertname: str, state: AlertState = AlertState.FIRING, **labels: str) -> Instance:
    return Instance(rule=alertname, labels={"alertname": alertname, **labels}, state=state, severity=Severity.WARNING)


CASES = [
    # (no, source instances, target labels, expected reason)
    # URP is reported by the surviving leaders, never by the dead broker: any broker of the cluster is muted.
    (1, [_inst(DOWN, cluster="c1", broker="1", tenant="shop")],
     {"alertname": "KafkaUnderReplicatedPartitions", "cluster": "c1", "broker": "2", "tenant": "ads"},
     f"inhibited:{DOWN}"),
    # Another cluster's under-replication is news.
    (2, [_inst(DOWN, cluster="c1", broker="1")],
     {"alertname": "KafkaUnderReplicatedPartitions", "cluster": "c2", "broker": "1"}, None),
    # Only a firing broker-down inhibits: a pending one may be a restart.
    (3, [_inst(DOWN, AlertState.PENDING, cluster="c1", broker="1")],
     {"alertname": "KafkaUnderReplicatedPartitions", "cluster": "c1", "broker": "2"}, None),
    (4, [_inst(DOWN, AlertState.RESOLVED, cluster="c1", broker="1")],
     {"alertname": "KafkaUnderReplicatedPartitions", "cluster": "c1", "broker": "2"}, None),
    # Under-min-ISR means acks=all writes fail: it pages even while the broker-down alert fires.
    (5, [_inst(DOWN, cluster="c1", broker="1")],
     {"alertname": "KafkaUnderMinIsrPartitions", "cluster": "c1", "broker": "2"}, None),
    (6, [_inst(DOWN, cluster="c1", broker="1")],
     {"alertname": "KafkaUnderMinIsrPartitions", "cluster": "c1", "broker": "1"}, None),
    # A failing scrape explains the cluster's missing inputs.
    (7, [_inst("KafkaHealthScrapeFailing", cluster="c1", collector="jmx", target="b1:9999")],
     {"alertname": "KafkaHealthRuleNoData", "cluster": "c1", "rule": "KafkaIsrChurn"}, "inhibited:KafkaHealthScrapeFailing"),
    (8, [_inst("KafkaHealthScrapeFailing", cluster="c2", collector="jmx", target="b1:9999")],
     {"alertname": "KafkaHealthRuleNoData", "cluster": "c1", "rule": "KafkaIsrChurn"}, None),
]


@pytest.mark.parametrize("no,sources,target,expected", CASES, ids=[f"case{c[0]}" for c in CASES])
def test_default_inhibition(no, sources, target, expected):
    assert Inhibitor(DEFAULT_INHIBIT_RULES, sources).mutes(target) == expected
