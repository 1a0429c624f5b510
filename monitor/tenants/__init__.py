"""Tenants: who owns what on the clusters, and how healthy it is.

- ``models.py``  the ``tenants`` table and the API schemas (a tenant = name + ``config.TenantDefinition``)
- ``service.py`` the registry: CRUD, the sync of config-file tenants, the overlap check on every write
- ``health.py``  tenant health as a pure function of firing alerts, engine heartbeats and ``now``
- ``views.py``   ``/api/v1/tenants...`` and ``/api/v1/clusters...``
- ``cli.py``     ``kafka-health tenants ...`` and ``kafka-health tokens ...``

The shared matcher (which tenant owns a topic, client, group) and the overlap rule are ``monitor.core.tenancy``.
"""
