"""The test harness: what the tests and benches need to break, drive and watch the product, and what users never run.

It lives outside the product packages (``monitor``, ``collectors``, ``alerts``, ``dashboards``), so the wheel does not
ship it (pyproject's ``packages.find``; ``tests/unit/test_architecture.py`` builds the wheel and checks). It may
import the product; the product never imports it.

- ``faults``       fault injection on the local stack: restarts, a tmpfs log dir (root), floods, slow readers
- ``slow_link``    a network namespace behind ``tc`` (root): a slow or lossy link to one port
- ``javaclients``  real Apache Kafka Java clients at a chosen version, and a paced kcat producer
- ``launch``       ``kafka-health serve`` as a child process, awaited on ``/healthz``
- ``fake_source``  ``FakeSource``: the one fake of the Prometheus ``Source`` the unit tests use
- ``engine``       the alert engine on a real stack with a throwaway store (``watched``)
- ``producer``     a background producer feeding a topic at a steady rate
- ``REPO_ROOT``    the checkout's root, for tests and tools that read docs/, deploy/ or the sources
"""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
