package io.kafkahealth.telemetry;

/**
 * One client instance's last push, as {@code kafka.health:type=ClientTelemetry,client-instance-id=...,user=...,
 * client-id=...,client-software-name=...,client-software-version=...} (empty properties left out, as Kafka's own
 * JmxReporter does). A signal the client did not push reads NaN, which the collector skips: only what a client
 * pushed becomes a series. Times are in milliseconds as clients report them.
 */
public interface ClientTelemetryMBean {
    double getBatchSizeAvg();

    double getRecordsPerRequestAvg();

    double getRecordQueueTimeAvgMs();

    double getRequestRate();

    double getRequestLatencyAvgMs();

    double getThrottleTimeAvgMs();

    double getPollIdleRatioAvg();

    double getFetchLatencyAvgMs();

    double getCommitLatencyAvgMs();

    /** Wall-clock time of the last push, seconds since the epoch. */
    double getLastPushTimestampSeconds();

    /** Pushes received from this instance on this broker. */
    long getPushes();

    /** Source address of the last push (for an operator reading JMX; not exported as a label). */
    String getClientAddress();
}
