"""The alert engine: rules and detectors over Prometheus, a pure state machine, grouping, inhibition, silences,
and delivery to Alertmanager and webhooks through an outbox. ``models.py`` holds the persisted types the REST API
reads as well."""
