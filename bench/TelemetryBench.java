// The JVM side of bench/telemetry.py: kafka-health's telemetry plugin in a JVM of its own, fed synthetic pushes.
//   java -cp KAFKA_LIBS/*:PLUGIN_JAR bench/TelemetryBench.java PAYLOAD_FILE CLIENTS ROUNDS
// Prints one JSON line: CPU nanoseconds per push of the plugin and of a receiver that only parses the payload with
// the OTLP classes Kafka ships (the baseline: the least a receiver reading the payload pays), and the heap with CLIENTS instances held against the same heap after the
// plugin dropped them. Then keeps the CLIENTS instances registered (for the collector's measurement over Jolokia) until stdin
// closes.
import io.kafkahealth.telemetry.ClientTelemetryExporter;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.MetricsData;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.apache.kafka.server.telemetry.ClientTelemetryReceiver;

public class TelemetryBench {
    static long sink;  // keeps the baseline's parse from being optimised away

    static AuthorizableRequestContext context(String user, String clientId) {
        KafkaPrincipal principal = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, user);
        return new AuthorizableRequestContext() {
            public String listenerName() { return "SASL_SSL"; }
            public SecurityProtocol securityProtocol() { return SecurityProtocol.SASL_SSL; }
            public KafkaPrincipal principal() { return principal; }
            public InetAddress clientAddress() { return InetAddress.getLoopbackAddress(); }
            public int requestType() { return 72; }
            public int requestVersion() { return 0; }
            public String clientId() { return clientId; }
            public int correlationId() { return 1; }
        };
    }

    static ClientTelemetryPayload payload(Uuid id, byte[] data) {
        return new ClientTelemetryPayload() {
            public Uuid clientInstanceId() { return id; }
            public boolean isTerminating() { return false; }
            public String contentType() { return "application/x-protobuf"; }
            public ByteBuffer data() { return ByteBuffer.wrap(data); }
        };
    }

    static long usedHeapAfterGc() throws InterruptedException {
        for (int i = 0; i < 4; i++) {
            System.gc();
            Thread.sleep(100);
        }
        Runtime rt = Runtime.getRuntime();
        return rt.totalMemory() - rt.freeMemory();
    }

    static double cpuPerPush(ClientTelemetryReceiver receiver, AuthorizableRequestContext[] ctx,
                             ClientTelemetryPayload[] pushes, int rounds) {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long start = threads.getCurrentThreadCpuTime();
        for (int r = 0; r < rounds; r++) {
            for (int i = 0; i < pushes.length; i++) {
                receiver.exportMetrics(ctx[i], pushes[i]);
            }
        }
        return (double) (threads.getCurrentThreadCpuTime() - start) / ((long) rounds * pushes.length);
    }

    public static void main(String[] args) throws Exception {
        byte[] data = Files.readAllBytes(Path.of(args[0]));
        int clients = Integer.parseInt(args[1]);
        int rounds = Integer.parseInt(args[2]);
        AuthorizableRequestContext[] ctx = new AuthorizableRequestContext[clients];
        ClientTelemetryPayload[] pushes = new ClientTelemetryPayload[clients];
        for (int i = 0; i < clients; i++) {
            ctx[i] = context("tenant" + (i % 20) + "-app", "bench-client-" + i);
            pushes[i] = payload(Uuid.randomUuid(), data);
        }
        // The baseline receiver: parses each push with the OTLP classes Kafka itself ships (shaded in kafka-clients),
        // the least any receiver that reads the payload pays; it keeps nothing.
        ClientTelemetryReceiver parseOnly = (c, p) -> {
            try {
                sink += MetricsData.parseFrom(p.data()).getResourceMetricsCount();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        };
        ClientTelemetryExporter plugin = new ClientTelemetryExporter();
        plugin.configure(Map.of("kafka.health.telemetry.max.clients", String.valueOf(Math.max(clients, 1))));
        plugin.init(List.of());
        // warm-up (JIT) of both, then interleaved measured rounds; the median is taken in Python over repeats
        cpuPerPush(parseOnly, ctx, pushes, 3);
        cpuPerPush(plugin, ctx, pushes, 3);
        StringBuilder parseNs = new StringBuilder(), pluginNs = new StringBuilder();
        for (int repeat = 0; repeat < 5; repeat++) {  // interleaved, so machine noise hits both alike
            parseNs.append(repeat == 0 ? "" : ",").append(cpuPerPush(parseOnly, ctx, pushes, rounds));
            pluginNs.append(repeat == 0 ? "" : ",").append(cpuPerPush(plugin, ctx, pushes, rounds));
        }
        // Retained by the instances: the heap holding them minus the same heap once the plugin dropped them all.
        long heapFull = usedHeapAfterGc();
        plugin.close();
        long heapEmpty = usedHeapAfterGc();
        plugin.init(List.of());
        cpuPerPush(plugin, ctx, pushes, 1);  // hold them again for the collector's scrapes
        System.out.println("{\"clients\": " + plugin.getClients() + ", \"failures\": " + plugin.getFailures()
            + ", \"plugin_ns_per_push\": [" + pluginNs + "], \"parse_ns_per_push\": [" + parseNs + "]"
            + ", \"heap_empty_bytes\": " + heapEmpty + ", \"heap_full_bytes\": " + heapFull + "}");
        System.out.flush();
        while (System.in.read() >= 0) {
            // hold the instances until the bench closes stdin
        }
        plugin.close();
    }
}
