"""``kafka-health demo``: the README's main job, on embedded defaults.

Brings the local stack up (or reuses a running one), registers two demo tenants on the shared cluster, runs a small
producer + consumer load per tenant, serves API + exporter + alert engine, prints the URLs, and on Ctrl-C (or after
``--duration``) stops everything it started — and only that: a stack that was already running stays up.

The story (unless ``--calm``): after ``CALM_SECONDS`` the tenant payments starts a badly batching producer
(``BAD_CLIENT``, authenticated as User:payments-app like the tenant's other clients); within a few minutes
KafkaClientHurtsOtherTenants names the tenant and that client, and the advice endpoint says what to change.

The console is for a person: the first screen (URLs, tokens, client configs, where the log is), one line per story
event, and a status line (``Console``): redrawn in place on a terminal, a line at most every 30 s otherwise. Every
log record goes to ``logs/demo.log`` in the stack dir; only errors reach the console.

Modules: ``story`` (the tenants, their load, the story's bad client and what it awaits), ``console`` (what a person
sees), ``lifecycle`` (``run_demo``'s steps: start, serve, announce, watch, end).
"""

from monitor.demo.lifecycle import register, run_demo

__all__ = ["register", "run_demo"]
