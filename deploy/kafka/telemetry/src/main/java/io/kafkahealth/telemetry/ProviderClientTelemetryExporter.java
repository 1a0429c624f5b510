package io.kafkahealth.telemetry;

import org.apache.kafka.server.telemetry.ClientTelemetryExporterProvider;

/**
 * kafka-health's KIP-714 broker plugin for Kafka 4.2+:
 * {@code metric.reporters=org.apache.kafka.common.metrics.JmxReporter,io.kafkahealth.telemetry.ProviderClientTelemetryExporter}.
 *
 * <p>The same plugin as {@link ClientTelemetryExporter} (same settings, same MBeans), handed the pushes through the
 * interface Kafka 4.2 added in place of the deprecated {@code ClientTelemetry}. The broker prefers this interface
 * when a reporter implements both (kafka.server.DynamicMetricReporterState in 4.4), so the inherited receiver stays
 * unused; {@code Interface} on {@code kafka.health:type=ClientTelemetryExporter} says which one the broker chose. Its
 * exporter is also told the client's push interval, which the plugin takes as the instance's expiry hint.
 *
 * <p>Loads only on brokers whose kafka-clients has {@link ClientTelemetryExporterProvider} (4.2+); on older ones
 * configure the superclass.
 */
public class ProviderClientTelemetryExporter extends ClientTelemetryExporter
        implements ClientTelemetryExporterProvider {
    // Kafka's ClientTelemetryExporter, named in full: its simple name is the superclass's.
    private final org.apache.kafka.server.telemetry.ClientTelemetryExporter exporter =
        (context, payload) -> export(context.authorizableRequestContext(), payload, context.pushIntervalMs());

    public ProviderClientTelemetryExporter() {
        super();
    }

    ProviderClientTelemetryExporter(javax.management.MBeanServer server) {
        super(server);
    }

    @Override
    public org.apache.kafka.server.telemetry.ClientTelemetryExporter clientTelemetryExporter() {
        servedThrough(PROVIDER);
        return exporter;
    }
}
