package io.kafkahealth.telemetry;

/** The plugin's own health, as {@code kafka.health:type=ClientTelemetryExporter}. */
public interface ClientTelemetryExporterMBean {
    /** Client instances held now (at most MaxClients). */
    int getClients();

    int getMaxClients();

    long getPushes();

    /** Pushes the plugin could not read (malformed payload, unexpected error): the broker answered them anyway. */
    long getFailures();

    /** Instances dropped because MaxClients was reached (least recently pushed first). */
    long getEvicted();

    /** Instances dropped because they stopped pushing, or said they were terminating. */
    long getExpired();

    /**
     * The KIP-714 interface through which the broker hands pushes to the plugin: {@code ClientTelemetry} (Kafka 3.7
     * to 4.1) or {@code ClientTelemetryExporterProvider} (4.2+, with {@link ProviderClientTelemetryExporter}); empty
     * until the broker asked for either.
     */
    String getInterface();
}
