package io.kafkahealth.telemetry;

import java.util.HashMap;
import java.util.Map;

/**
 * The KIP-714 metrics this plugin keeps, and how a push becomes one value per signal.
 *
 * <p>Java clients name their metrics {@code org.apache.kafka.<group without -metrics>.<name with . for ->}
 * (producer-metrics batch-size-avg: {@code org.apache.kafka.producer.batch.size.avg}); librdkafka 2.5+ pushes a
 * fixed subset under the same names. Several sources may feed one signal: the first source in the list that the push
 * carries wins (a Java producer pushes both the client-wide {@code producer.request.latency.avg} and the per-node
 * one; librdkafka's consumer only the per-node one). Points of one source (one per broker node) are averaged.
 * Values stay in the client's units (milliseconds for times); the collector scales them.
 */
final class Signals {
    static final String P = "org.apache.kafka.";

    /** Signal names: the MBean attributes (ClientTelemetryMBean) in this order. */
    static final String[] NAMES = {
        "BatchSizeAvg", "RecordsPerRequestAvg", "RecordQueueTimeAvgMs", "RequestRate", "RequestLatencyAvgMs",
        "ThrottleTimeAvgMs", "PollIdleRatioAvg", "FetchLatencyAvgMs", "CommitLatencyAvgMs",
    };

    /** Sources of each signal, in order of preference. */
    static final String[][] SOURCES = {
        {P + "producer.batch.size.avg"},
        {P + "producer.records.per.request.avg"},
        {P + "producer.record.queue.time.avg"},
        {P + "producer.request.rate", P + "consumer.request.rate"},
        {P + "producer.request.latency.avg", P + "consumer.request.latency.avg",
            P + "producer.node.request.latency.avg", P + "consumer.node.request.latency.avg"},
        {P + "producer.produce.throttle.time.avg", P + "consumer.fetch.manager.fetch.throttle.time.avg"},
        {P + "consumer.poll.idle.ratio.avg"},
        {P + "consumer.fetch.manager.fetch.latency.avg"},
        {P + "consumer.coordinator.commit.latency.avg"},
    };

    /** The metric prefixes a CLIENT_METRICS subscription needs for these signals (kafka-health telemetry apply). */
    static final Map<String, int[]> BY_SOURCE = new HashMap<>();  // source -> {signal, preference}

    static {
        for (int s = 0; s < SOURCES.length; s++) {
            for (int p = 0; p < SOURCES[s].length; p++) {
                BY_SOURCE.put(SOURCES[s][p], new int[] {s, p});
            }
        }
    }

    private Signals() {
    }

    /** One push being read: sums and counts per source, then one value per signal (NaN: not pushed). */
    static final class Push implements OtlpReader.Sink {
        private final String[] sources = new String[BY_SOURCE.size()];
        private final double[] sum = new double[BY_SOURCE.size()];
        private final int[] count = new int[BY_SOURCE.size()];
        private final Map<String, Integer> slots = new HashMap<>();

        @Override
        public int index(String name) {
            if (!BY_SOURCE.containsKey(name)) {
                return -1;
            }
            return slots.computeIfAbsent(name, n -> {
                int i = slots.size();
                sources[i] = n;
                return i;
            });
        }

        @Override
        public void add(int index, double value) {
            if (Double.isFinite(value)) {  // Java clients report NaN averages before their first sample
                sum[index] += value;
                count[index]++;
            }
        }

        double[] values() {
            double[] out = new double[NAMES.length];
            int[] rank = new int[NAMES.length];
            java.util.Arrays.fill(out, Double.NaN);
            java.util.Arrays.fill(rank, Integer.MAX_VALUE);
            for (int i = 0; i < slots.size(); i++) {
                if (count[i] == 0) {
                    continue;
                }
                int[] where = BY_SOURCE.get(sources[i]);
                if (where[1] < rank[where[0]]) {
                    rank[where[0]] = where[1];
                    out[where[0]] = sum[i] / count[i];
                }
            }
            return out;
        }
    }
}
