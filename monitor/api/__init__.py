"""REST API (FastAPI). ``principal.py`` is the shared notion of who is asking; routers of every domain use it."""
