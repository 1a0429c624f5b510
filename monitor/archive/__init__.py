"""Parquet archive of Prometheus: ``series`` (what is copied), ``lake`` (layout, atomic day writes),
``archive`` (the copy loop), ``cli`` (``kafka-health archive``)."""
