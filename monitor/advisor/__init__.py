"""Client advisor and capacity planning.

- ``types``: samples the rules read, ``Finding`` they produce.
- ``findings``: pure rules (poor batching, request storms, polling, rebalances, outdated software, quota
  throttling, connection churn), ``advise`` runs them.
- ``capacity``: pure capacity formulas and the plan / what-if.
- ``source``: the thin Prometheus shell building samples and usage; ``service``: what the API and CLI call.
- ``exported``: the findings as ``kafka_client_advisor_finding`` (published by the alerts role's detector).
- ``views`` (``/tenants/{tenant}/advice``, ``/clusters/{cluster}/capacity``), ``cli`` (``advice``, ``capacity``).

docs/advisor.md explains every finding and formula with its source.
"""
