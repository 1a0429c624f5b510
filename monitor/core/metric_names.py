"""Every metric name (and label value) the alert engine reads, in ONE place.

Rule expressions (rules.yaml) and detectors refer to these by key (``${under_replicated}`` in PromQL templates,
``M["under_replicated"]`` in Python), so reconciling names with the collectors is an edit here only. Names are those
of docs/metrics.md. Optional inputs are read when present and the detectors fall back without them (e.g. the lag
detector derives commits from produced messages minus lag when committed offsets are missing).
"""

from __future__ import annotations

M: dict[str, str] = {
    # availability
    "broker_up": "kafka_cluster_broker_up",  # Admin API {cluster, broker}: 1 if the broker is in the metadata
    "scrape_success": "kafka_health_scrape_success",  # {cluster, collector, target}
    # {cluster, collector, target, cause}: rounds a cause (series_cap, deadline) left data out of
    "scrape_cut_rounds": "kafka_health_scrape_cut_rounds_total",
    # collectors/component.py {shard, shards}: 1 from the process running that shard; {shard}: 1 per shard expected
    "collector_shard_up": "kafka_health_collector_shard_up",
    "collector_shard_expected": "kafka_health_collector_shard_expected",
    "offline_partitions": "kafka_cluster_offline_partitions",  # controller {cluster, broker}
    "topic_offline_partitions": "kafka_topic_offline_partitions",  # Admin API {cluster, topic, tenant}
    "topic_under_min_isr": "kafka_topic_under_min_isr_partitions",  # Admin API {cluster, topic, tenant}
    # Admin API {cluster, tenant, broker}: the tenant's partitions the broker leads (only where it leads some)
    "tenant_partition_leaders": "kafka_cluster_tenant_led_partitions",
    # end-to-end probe {cluster, broker}: broker = the probe partition's preferred leader; result ok|error|lost
    "probe_messages": "kafka_probe_messages_total",
    "probe_produce_latency": "kafka_probe_produce_latency_seconds",  # histogram
    "probe_roundtrip_latency": "kafka_probe_roundtrip_latency_seconds",  # histogram
    "probe_up": "kafka_health_probe_up",  # {cluster}: 1 when the probe can run
    # the service's contract series (collectors/contract.py) {tenant}: every tenant; its contract's objective if set
    "tenant_info": "kafka_health_tenant_info",
    "tenant_objective": "kafka_health_tenant_availability_objective_ratio",
    "under_replicated": "kafka_broker_under_replicated_partitions",  # {cluster, broker}
    "under_min_isr": "kafka_broker_under_min_isr_partitions",  # {cluster, broker}
    "active_controllers": "kafka_cluster_active_controllers",  # controller {cluster, broker}: 1 on the active one
    # controller {cluster, broker (the broker it is about), controller}: Kafka 4.x; 10 fenced, 20 controlled shutdown,
    # 30 active; and the heartbeat age (active controller only, capped at broker.session.timeout.ms)
    "broker_registration_state": "kafka_cluster_broker_registration_state",
    "broker_heartbeat_age": "kafka_cluster_broker_heartbeat_age_seconds",
    # the collector's controller watch (collectors/controller_watch.py): {cluster, broker, controller, cause}
    "broker_departures": "kafka_cluster_broker_departures_total",
    "broker_last_departure": "kafka_cluster_broker_last_departure_timestamp_seconds",
    "broker_state_unexported": "kafka_cluster_broker_state_unexported",  # KAFKA-20370: the watch is blind to it
    # request path
    "request_handler_idle": "kafka_broker_request_handler_idle_ratio",  # {cluster, broker}, rate of Count
    "request_handler_threads": "kafka_broker_request_handler_threads",  # Admin API {cluster, broker}: num.io.threads
    "network_processor_idle": "kafka_broker_network_processor_avg_idle_ratio",  # {cluster, broker}
    "request_queue_size": "kafka_broker_request_queue_size",  # {cluster, broker}
    "response_queue_size": "kafka_broker_response_queue_size",  # {cluster, broker}
    "request_latency": "kafka_broker_request_latency_seconds",  # {cluster, broker, request, phase, quantile}
    "isr_shrinks": "kafka_broker_isr_shrinks_total",  # {cluster, broker}
    "unclean_elections": "kafka_cluster_unclean_leader_elections_total",  # controller {cluster, broker}
    # JVM / host
    "gc_seconds": "kafka_jvm_gc_collection_seconds_total",  # {cluster, broker, gc}
    "heap_after_gc_used": "kafka_jvm_heap_after_gc_used_bytes",  # {cluster, broker}
    "heap_max": "kafka_jvm_heap_max_bytes",  # {cluster, broker}
    "open_fds": "kafka_jvm_open_fds",  # {cluster, broker}
    "max_fds": "kafka_jvm_max_fds",  # {cluster, broker}
    "fs_avail": "kafka_host_filesystem_avail_bytes",  # {cluster, host, broker, path}: log-dir filesystems
    "fs_size": "kafka_host_filesystem_size_bytes",  # {cluster, host, broker, path}
    "topic_size": "kafka_topic_log_size_bytes",  # {cluster, broker, topic, tenant}: also where replicas are
    "topic_messages_in": "kafka_topic_messages_in_total",  # {cluster, broker, topic, tenant}
    "topic_produce_requests": "kafka_topic_produce_requests_total",  # {cluster, broker, topic, tenant}
    "topic_bytes_in": "kafka_topic_bytes_in_total",  # {cluster, broker, topic, tenant}
    "topic_partitions": "kafka_topic_partitions",  # Admin API {cluster, topic, tenant}
    "topic_replicas": "kafka_topic_replicas",  # Admin API {cluster, topic, tenant}: replicas over all partitions
    "broker_partitions": "kafka_broker_partitions",  # {cluster, broker}
    "broker_leader_partitions": "kafka_broker_leader_partitions",  # {cluster, broker}
    "requests": "kafka_broker_requests_total",  # {cluster, broker, request}
    "request_errors": "kafka_broker_request_errors_total",  # {cluster, broker, request, error}
    # {cluster, broker, request, api_version, client_software_name, client_software_version}: KIP-896
    "deprecated_requests": "kafka_broker_deprecated_requests_total",
    "group_state": "kafka_consumergroup_state",  # Admin API {cluster, group, state, tenant}: 1 in the current state
    # clients: quota sensors, present only once some quota of the type is configured
    "client_request_time": "kafka_client_request_time_ratio",  # {cluster, broker, user, client_id, tenant}
    "client_produce_throttle": "kafka_client_produce_throttle_time_seconds",
    "client_fetch_throttle": "kafka_client_fetch_throttle_time_seconds",
    "client_request_throttle": "kafka_client_request_throttle_time_seconds",
    "client_produce_rate": "kafka_client_produce_bytes_per_second",
    "client_fetch_rate": "kafka_client_fetch_bytes_per_second",
    "client_connections": "kafka_broker_connections",  # {cluster, broker, client_software_name, ..._version}
    # slow readers: socket send queues per peer (host collector, with listener_ports) and who is at that address
    "client_socket_backlog": "kafka_host_tcp_send_queue_bytes",  # {cluster, host, broker, peer}
    "group_member_info": "kafka_consumergroup_member_info",  # {cluster, group, client_id, client_host, tenant}
    # consumer groups (Admin API), per (group, topic)
    "group_lag": "kafka_consumergroup_lag",  # messages, summed over partitions
    "group_lag_seconds": "kafka_consumergroup_lag_seconds",  # worst partition
    "group_members": "kafka_consumergroup_members",  # {cluster, group, tenant}
    "group_committed_offset": "kafka_consumergroup_committed_offset",  # sum over partitions with a commit
    # per (group, topic, client_id, client_host): the members' assigned partitions and their lag
    "group_member_partitions": "kafka_consumergroup_member_partitions",
    "group_member_lag": "kafka_consumergroup_member_lag",
    # every group's kind, and share groups (KIP-932; collectors.group_kinds, issue 29)
    "group_info": "kafka_group_info",  # {cluster, group, type, state, tenant}: 1 per group
    "sharegroup_status": "kafka_sharegroup_status",  # {cluster, group, tenant, status}: 1 in the current status
    "sharegroup_lag": "kafka_sharegroup_lag",  # {cluster, group, topic, tenant}: records not yet acknowledged
    "sharegroup_members": "kafka_sharegroup_members",  # {cluster, group, tenant}
    # {cluster, group, client_id, client_host, tenant}: share-partitions assigned to the members of that client
    "sharegroup_member_partitions": "kafka_sharegroup_member_partitions",
}

# Label values the rules select on.
PHASE_TOTAL = "total"  # kafka_broker_request_latency_seconds{phase}: TotalTimeMs
PHASE_RESPONSE_SEND = "response_send"  # ResponseSendTimeMs


def metric(key: str) -> str:
    try:
        return M[key]
    except KeyError:
        raise KeyError(f"unknown metric key {key!r}; add it to monitor/core/metric_names.py") from None
