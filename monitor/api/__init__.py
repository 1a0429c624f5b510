"""REST API (FastAPI). ``principal.py`` is the shared notion of who is asking; routers of every domain use it.

- ``app.py``        ``mount_api``: the one place that wires the API onto the app ``monitor.serve`` builds
- ``auth.py``       bearer token -> ``Principal`` on ``request.state``, and the per-token rate limit (middleware)
- ``tokens.py``     tokens: model, minting, hashing, authentication, revocation
- ``deps.py``       shared dependencies: ``DbSession``, ``CurrentPrincipal``, ``OperatorPrincipal``, ``Now``
- ``errors.py``     the one error body and the exception handlers
- ``pagination.py`` ``?limit=&cursor=`` in, ``{items, next_cursor}`` out
- ``ratelimit.py``  token buckets (pure)
- ``routes.py``     the mounted routes, flattened (isolation tests, 405 Allow)
- ``launch.py``     run ``serve`` as a child process (tests, benchmarks)

Domain routers live with their domain: ``monitor.tenants.views``, ``alerts.views``, ``monitor.reports.views``.
"""
