"""Health answers (``views``) over the alert engine's instances, and what a server may remember of them and of
tokens, and until when (``watch``). Above ``alerts`` and ``monitor.tenants``; below the API app that mounts it."""
