"""What every router shares: who is asking (``principal``), FastAPI dependencies (``deps``), cursor pagination
(``pagination``) and the response field types (``schema``). Capabilities' views build on these; the app that
mounts the views is ``monitor.api``."""
