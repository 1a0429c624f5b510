"""Every metric name the alert engine reads, in ONE place.

Rule expressions (rules.yaml) and detectors refer to these by key (``${under_replicated}`` in PromQL templates,
``M["under_replicated"]`` in Python), so reconciling names with the collectors' docs/metrics.md is an edit here
only. Names follow DESIGN.md's conventions: namespaces ``kafka_broker_*``, ``kafka_cluster_*``, ``kafka_topic_*``,
``kafka_client_*``, ``kafka_consumergroup_*``, ``kafka_jvm_*``, ``kafka_host_*``, ``kafka_health_*``; labels
``cluster``, ``broker``, ``topic``, ``tenant``, ``user``, ``client_id``, ``group``, ``request``, ``quantile``.
"""

from __future__ import annotations

M: dict[str, str] = {
    # availability (Admin API + JMX)
    "broker_up": "kafka_broker_up",  # 1 if the broker is registered and answers; {cluster, broker}
    "scrape_success": "kafka_health_scrape_success",  # {cluster, broker?, target}
    "offline_partitions": "kafka_cluster_offline_partitions",  # {cluster} from the active controller
    "topic_offline_partitions": "kafka_topic_offline_partitions",  # {cluster, topic} Admin API
    "under_replicated": "kafka_broker_under_replicated_partitions",  # {cluster, broker}
    "under_min_isr": "kafka_broker_under_min_isr_partitions",  # {cluster, broker}
    "active_controllers": "kafka_cluster_active_controllers",  # {cluster}: sum of ActiveControllerCount
    "topic_broker_replicas": "kafka_topic_broker_replicas",  # {cluster, topic, broker}: replicas of topic on broker
    # request path
    "request_handler_idle": "kafka_broker_request_handler_idle_ratio",  # {cluster, broker}, rate of Count
    "network_processor_idle": "kafka_broker_network_processor_idle_ratio",  # {cluster, broker}
    "request_queue_size": "kafka_broker_request_queue_size",  # {cluster, broker}
    "response_queue_size": "kafka_broker_response_queue_size",  # {cluster, broker}
    "request_total_time": "kafka_broker_request_total_time_seconds",  # {cluster, broker, request, quantile}
    "response_queue_time": "kafka_broker_response_queue_time_seconds",  # {cluster, broker, request, quantile}
    "response_send_time": "kafka_broker_response_send_time_seconds",  # {cluster, broker, request, quantile}
    "isr_shrinks": "kafka_broker_isr_shrinks_total",  # {cluster, broker}
    "isr_expands": "kafka_broker_isr_expands_total",  # {cluster, broker}
    "unclean_elections": "kafka_cluster_unclean_leader_elections_total",  # {cluster}
    # JVM / host
    "gc_seconds": "kafka_jvm_gc_collection_seconds_total",  # {cluster, broker, gc}
    "heap_after_gc": "kafka_jvm_heap_after_gc_ratio",  # {cluster, broker}: old gen used after last GC / max
    "open_fds": "kafka_jvm_open_file_descriptors",  # {cluster, broker}
    "max_fds": "kafka_jvm_max_file_descriptors",  # {cluster, broker}
    "fs_avail": "kafka_host_filesystem_avail_bytes",  # {cluster, broker, mountpoint}: log-dir filesystems
    "fs_size": "kafka_host_filesystem_size_bytes",  # {cluster, broker, mountpoint}
    "topic_size": "kafka_topic_size_bytes",  # {cluster, topic}: log size on disk, all replicas
    "topic_log_end_offset": "kafka_topic_log_end_offset",  # {cluster, topic}: sum over partitions
    # clients (quota sensors exist only once a quota of that type is configured)
    "client_request_time": "kafka_client_request_time_ratio",  # {cluster, broker, user, client_id}
    "client_throttle_time": "kafka_client_throttle_time_seconds",  # {cluster, broker, user, client_id, quota}
    "client_produce_rate": "kafka_client_produce_bytes_per_second",  # {cluster, broker, user, client_id}
    "client_fetch_rate": "kafka_client_fetch_bytes_per_second",  # {cluster, broker, user, client_id}
    "client_request_rate": "kafka_client_requests_per_second",  # {cluster, broker, user, client_id}
    "client_connections": "kafka_client_connections",  # {cluster, broker, client_software_name, ..._version}
    # consumer groups (Admin API): per (group, topic), offsets summed over partitions
    "group_committed_offset": "kafka_consumergroup_committed_offset",  # {cluster, group, topic}
    "group_lag": "kafka_consumergroup_lag",  # {cluster, group, topic}: messages
    "group_members": "kafka_consumergroup_members",  # {cluster, group}
}


def metric(key: str) -> str:
    try:
        return M[key]
    except KeyError:
        raise KeyError(f"unknown metric key {key!r}; add it to alerts/inputs.py") from None
