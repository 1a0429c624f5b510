package io.kafkahealth.telemetry;

import static io.kafkahealth.telemetry.ClientTelemetryExporterTest.clients;
import static io.kafkahealth.telemetry.ClientTelemetryExporterTest.context;
import static io.kafkahealth.telemetry.ClientTelemetryExporterTest.metric;
import static io.kafkahealth.telemetry.ClientTelemetryExporterTest.payload;
import static io.kafkahealth.telemetry.ClientTelemetryExporterTest.push;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import javax.management.MBeanServer;
import javax.management.MBeanServerFactory;
import javax.management.ObjectName;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetryContext;
import org.apache.kafka.server.telemetry.ClientTelemetryExporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporterProvider;
import org.junit.jupiter.api.Test;

/** Kafka 4.2+'s entry point (compiled and run only against a kafka-clients that has it: see the pom). */
class ProviderClientTelemetryExporterTest {
    private static final String P = "org.apache.kafka.";

    static ClientTelemetryContext told(int intervalMs, AuthorizableRequestContext request) {
        return new ClientTelemetryContext() {
            public int pushIntervalMs() {
                return intervalMs;
            }

            public AuthorizableRequestContext authorizableRequestContext() {
                return request;
            }
        };
    }

    @Test
    void thePushesOfTheProvidersExporterBecomeTheSameMBeans() throws Exception {
        MBeanServer server = MBeanServerFactory.newMBeanServer();
        ProviderClientTelemetryExporter plugin = new ProviderClientTelemetryExporter(server);
        plugin.configure(Map.of(io.kafkahealth.telemetry.ClientTelemetryExporter.EXPIRY_MS, "1000"));
        plugin.init(List.of());
        ClientTelemetryExporterProvider provider = plugin;  // what a 4.2+ broker sees first
        ClientTelemetryExporter exporter = provider.clientTelemetryExporter();
        Uuid id = Uuid.randomUuid();
        exporter.exportMetrics(told(600_000, context("payments-app", "batch-import")), push(id, false,
            payload(metric(P + "producer.record.queue.time.avg", 5, 12.5))));
        ObjectName name = clients(server).iterator().next();
        assertEquals(id.toString(), name.getKeyProperty("client-instance-id"));
        assertEquals("payments-app", name.getKeyProperty("user"));
        assertEquals(12.5, (Double) server.getAttribute(name, "RecordQueueTimeAvgMs"));
        ObjectName self = new ObjectName(io.kafkahealth.telemetry.ClientTelemetryExporter.SELF);
        assertEquals("ClientTelemetryExporterProvider", server.getAttribute(self, "Interface"));
        assertEquals(1L, server.getAttribute(self, "Pushes"));
        assertEquals(0L, server.getAttribute(self, "Failures"));
        // the told interval (10 min) holds the instance well past the 1 s expiry setting
        plugin.expire();
        assertEquals(1, clients(server).size());
        plugin.close();
    }

    @Test
    void aBrokenPushThroughTheProviderIsCountedNeverThrown() {
        MBeanServer server = MBeanServerFactory.newMBeanServer();
        ProviderClientTelemetryExporter plugin = new ProviderClientTelemetryExporter(server);
        plugin.clientTelemetryExporter().exportMetrics(told(10_000, context("u", "c")), push(null, false, null));
        assertEquals(1L, plugin.getFailures());
        assertTrue(plugin.getInterface().endsWith("Provider"));
    }
}
