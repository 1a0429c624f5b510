package io.kafkahealth.telemetry;

import javax.management.ObjectName;

/** One client instance's last push (the MBean). Written under the registry's lock, read by JMX at any time. */
final class ClientInstance implements ClientTelemetryMBean {
    final ObjectName name;
    private volatile double[] values;
    private volatile long lastPushMs;
    private volatile long previousPushMs;
    private volatile long pushes;
    private volatile long intervalMs;
    private volatile String address;

    ClientInstance(ObjectName name) {
        this.name = name;
    }

    /** {@code intervalMs}: the push interval the broker told (0: not told). */
    void pushed(double[] values, long nowMs, String address, long intervalMs) {
        this.values = values;
        this.intervalMs = intervalMs;
        this.previousPushMs = lastPushMs;
        this.lastPushMs = nowMs;
        this.address = address;
        this.pushes++;
    }

    /**
     * Stale when it missed about three of its own push intervals, and never before {@code expiryMs}. The interval is
     * the one the broker told with the last push (Kafka 4.2+), else the gap between its last two pushes: told, a
     * client that pushes rarely is kept from its first push on instead of expiring until its second.
     */
    boolean staleAt(long nowMs, long expiryMs) {
        long interval = intervalMs > 0 ? intervalMs : pushes > 1 ? lastPushMs - previousPushMs : 0;
        return nowMs - lastPushMs > Math.max(expiryMs, 3 * interval);
    }

    long lastPushMs() {
        return lastPushMs;
    }

    private double v(int i) {
        return values[i];
    }

    @Override
    public double getBatchSizeAvg() {
        return v(0);
    }

    @Override
    public double getRecordsPerRequestAvg() {
        return v(1);
    }

    @Override
    public double getRecordQueueTimeAvgMs() {
        return v(2);
    }

    @Override
    public double getRequestRate() {
        return v(3);
    }

    @Override
    public double getRequestLatencyAvgMs() {
        return v(4);
    }

    @Override
    public double getThrottleTimeAvgMs() {
        return v(5);
    }

    @Override
    public double getPollIdleRatioAvg() {
        return v(6);
    }

    @Override
    public double getFetchLatencyAvgMs() {
        return v(7);
    }

    @Override
    public double getCommitLatencyAvgMs() {
        return v(8);
    }

    @Override
    public double getLastPushTimestampSeconds() {
        return lastPushMs / 1000.0;
    }

    @Override
    public long getPushes() {
        return pushes;
    }

    @Override
    public String getClientAddress() {
        return address;
    }
}
