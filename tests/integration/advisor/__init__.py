"""The advisor on the session stack: both modules read one run of every client (conftest.py)."""
