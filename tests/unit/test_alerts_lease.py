"""The lease decision (alerts.lease.decide): hold on, take over under a new epoch, or stand by."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from alerts.lease import LeaseDecision, LeaseRow, decide

NOW = datetime(2026, 11, 26, 20, 0, tzinfo=timezone.utc)
TTL = timedelta(seconds=26.25)


def test_the_first_engine_takes_the_lease_at_epoch_1():
    assert decide(None, "a", NOW, TTL) == LeaseDecision(True, 1, takeover=True, write=LeaseRow("a", 1, NOW + TTL))


def test_the_holder_renews_under_the_same_epoch():
    d = decide(LeaseRow("a", 7, NOW + timedelta(seconds=1)), "a", NOW, TTL)
    assert d == LeaseDecision(True, 7, write=LeaseRow("a", 7, NOW + TTL))


def test_a_standby_waits_while_the_lease_is_live():
    assert decide(LeaseRow("a", 7, NOW + timedelta(seconds=1)), "b", NOW, TTL) == LeaseDecision(False, 7)


def test_a_standby_takes_an_expired_lease_under_the_next_epoch():
    for expires in (NOW, NOW - timedelta(seconds=1)):  # expiry is exclusive: at expires_at the lease is gone
        d = decide(LeaseRow("a", 7, expires), "b", NOW, TTL)
        assert d == LeaseDecision(True, 8, takeover=True, write=LeaseRow("b", 8, NOW + TTL))


def test_a_holder_back_after_its_lease_expired_starts_a_new_epoch():
    # It was frozen past its lease: whatever it began under epoch 7 is fenced off, even if nobody took over.
    d = decide(LeaseRow("a", 7, NOW - timedelta(seconds=1)), "a", NOW, TTL)
    assert d.held and d.takeover and d.epoch == 8


def test_an_unused_row_is_taken_at_epoch_1():
    d = decide(LeaseRow("", 0, datetime.min.replace(tzinfo=timezone.utc)), "a", NOW, TTL)
    assert d == LeaseDecision(True, 1, takeover=True, write=LeaseRow("a", 1, NOW + TTL))
