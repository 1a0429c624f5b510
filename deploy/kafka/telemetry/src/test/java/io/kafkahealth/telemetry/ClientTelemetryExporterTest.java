package io.kafkahealth.telemetry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import javax.management.MBeanServer;
import javax.management.MBeanServerFactory;
import javax.management.ObjectName;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.junit.jupiter.api.Test;

class ClientTelemetryExporterTest {
    private static final String P = "org.apache.kafka.";

    // ----- a minimal OTLP encoder (the reader's counterpart), enough for the tests

    private static void tag(ByteArrayOutputStream out, int field, int wire) {
        varint(out, ((long) field << 3) | wire);
    }

    private static void varint(ByteArrayOutputStream out, long v) {
        while ((v & ~0x7fL) != 0) {
            out.write((int) ((v & 0x7f) | 0x80));
            v >>>= 7;
        }
        out.write((int) v);
    }

    private static void bytes(ByteArrayOutputStream out, int field, byte[] b) {
        tag(out, field, 2);
        varint(out, b.length);
        out.write(b, 0, b.length);
    }

    private static void fixed64(ByteArrayOutputStream out, int field, long v) {
        tag(out, field, 1);
        for (int i = 0; i < 8; i++) {
            out.write((int) (v >>> (8 * i)) & 0xff);
        }
    }

    /** One metric: gauge (kind 5) or sum (kind 7), one double point per value, each with a node attribute. */
    static byte[] metric(String name, int kind, double... values) {
        ByteArrayOutputStream data = new ByteArrayOutputStream();
        int node = 1;
        for (double v : values) {
            ByteArrayOutputStream point = new ByteArrayOutputStream();
            ByteArrayOutputStream attr = new ByteArrayOutputStream();
            bytes(attr, 1, "node.id".getBytes(StandardCharsets.UTF_8));
            ByteArrayOutputStream any = new ByteArrayOutputStream();
            tag(any, 3, 0);
            varint(any, node++);
            bytes(attr, 2, any.toByteArray());
            bytes(point, 7, attr.toByteArray());
            fixed64(point, 3, 1_700_000_000_000_000_000L);
            fixed64(point, 4, Double.doubleToLongBits(v));
            bytes(data, 1, point.toByteArray());
        }
        ByteArrayOutputStream m = new ByteArrayOutputStream();
        bytes(m, 1, name.getBytes(StandardCharsets.UTF_8));
        bytes(m, 3, "ms".getBytes(StandardCharsets.UTF_8));
        bytes(m, kind, data.toByteArray());
        return m.toByteArray();
    }

    static ByteBuffer payload(byte[]... metrics) {
        ByteArrayOutputStream scope = new ByteArrayOutputStream();
        bytes(scope, 1, new byte[] {10, 3, 'l', 'i', 'b'});  // InstrumentationScope name
        for (byte[] m : metrics) {
            bytes(scope, 2, m);
        }
        ByteArrayOutputStream resource = new ByteArrayOutputStream();
        bytes(resource, 1, new byte[0]);
        bytes(resource, 2, scope.toByteArray());
        ByteArrayOutputStream data = new ByteArrayOutputStream();
        bytes(data, 1, resource.toByteArray());
        return ByteBuffer.wrap(data.toByteArray());
    }

    static AuthorizableRequestContext context(String user, String clientId) {
        return new AuthorizableRequestContext() {
            public String listenerName() {
                return "SASL_SSL";
            }

            public SecurityProtocol securityProtocol() {
                return SecurityProtocol.SASL_SSL;
            }

            public KafkaPrincipal principal() {
                return new KafkaPrincipal(KafkaPrincipal.USER_TYPE, user);
            }

            public InetAddress clientAddress() {
                return InetAddress.getLoopbackAddress();
            }

            public int requestType() {
                return 72;
            }

            public int requestVersion() {
                return 0;
            }

            public String clientId() {
                return clientId;
            }

            public int correlationId() {
                return 1;
            }
        };
    }

    static ClientTelemetryPayload push(Uuid id, boolean terminating, ByteBuffer data) {
        return new ClientTelemetryPayload() {
            public Uuid clientInstanceId() {
                return id;
            }

            public boolean isTerminating() {
                return terminating;
            }

            public String contentType() {
                return "application/x-protobuf";
            }

            public ByteBuffer data() {
                return data;
            }
        };
    }

    static ClientTelemetryExporter exporter(MBeanServer server, int max) {
        ClientTelemetryExporter e = new ClientTelemetryExporter(server);
        e.configure(Map.of(ClientTelemetryExporter.MAX_CLIENTS, String.valueOf(max)));
        return e;
    }

    static Set<ObjectName> clients(MBeanServer server) throws Exception {
        return server.queryNames(new ObjectName("kafka.health:type=ClientTelemetry,*"), null);
    }

    @Test
    void aProducersPushBecomesItsSignalsAndOnlyThose() throws Exception {
        MBeanServer server = MBeanServerFactory.newMBeanServer();
        ClientTelemetryExporter e = exporter(server, 10);
        Uuid id = Uuid.randomUuid();
        e.exportMetrics(context("payments-app", "batch-import"), push(id, false, payload(
            metric(P + "producer.connection.creation.total", 7, 3),  // not wanted: skipped
            metric(P + "producer.record.queue.time.avg", 5, 12.5),
            metric(P + "producer.node.request.latency.avg", 5, 4, 8),  // per node: averaged
            metric(P + "producer.produce.throttle.time.avg", 5, Double.NaN))));  // NaN: not pushed
        Set<ObjectName> names = clients(server);
        assertEquals(1, names.size());
        ObjectName name = names.iterator().next();
        assertEquals("payments-app", name.getKeyProperty("user"));
        assertEquals("batch-import", name.getKeyProperty("client-id"));
        assertEquals(id.toString(), name.getKeyProperty("client-instance-id"));
        assertEquals(12.5, (Double) server.getAttribute(name, "RecordQueueTimeAvgMs"));
        assertEquals(6.0, (Double) server.getAttribute(name, "RequestLatencyAvgMs"));
        assertTrue(Double.isNaN((Double) server.getAttribute(name, "ThrottleTimeAvgMs")));
        assertTrue(Double.isNaN((Double) server.getAttribute(name, "BatchSizeAvg")));
        assertEquals(0L, e.getFailures());
    }

    @Test
    void theClientWideSourceWinsOverPerNodeOnes() throws Exception {
        MBeanServer server = MBeanServerFactory.newMBeanServer();
        ClientTelemetryExporter e = exporter(server, 10);
        e.exportMetrics(context("u", "c"), push(Uuid.randomUuid(), false, payload(
            metric(P + "producer.node.request.latency.avg", 5, 100),
            metric(P + "producer.request.latency.avg", 5, 7))));
        assertEquals(7.0, (Double) server.getAttribute(clients(server).iterator().next(), "RequestLatencyAvgMs"));
    }

    @Test
    void aBrokenPayloadIsCountedNeverThrown() throws Exception {
        MBeanServer server = MBeanServerFactory.newMBeanServer();
        ClientTelemetryExporter e = exporter(server, 10);
        byte[] good = payload(metric(P + "consumer.poll.idle.ratio.avg", 5, 0.5)).array();
        e.exportMetrics(context("u", "c"), push(Uuid.randomUuid(), false,
            ByteBuffer.wrap(java.util.Arrays.copyOf(good, good.length - 3))));  // truncated
        e.exportMetrics(context("u", "c"), push(Uuid.randomUuid(), false,
            ByteBuffer.wrap(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff})));  // garbage
        e.exportMetrics(context("u", "c"), push(null, false, null));  // nothing at all
        assertEquals(3L, e.getFailures());
        assertEquals(3L, e.getPushes());
        // the plugin still works after failures
        e.exportMetrics(context("u", "c"), push(Uuid.randomUuid(), false, ByteBuffer.wrap(good)));
        assertEquals(1, clients(server).size());
    }

    @Test
    void anMBeanServerFailureIsCountedNeverThrown() {
        MBeanServer refusing = (MBeanServer) java.lang.reflect.Proxy.newProxyInstance(
            MBeanServer.class.getClassLoader(), new Class<?>[] {MBeanServer.class}, (proxy, method, args) -> {
                throw new IllegalStateException("JMX is broken");
            });
        ClientTelemetryExporter e = exporter(refusing, 10);
        e.exportMetrics(context("u", "c"), push(Uuid.randomUuid(), false,
            payload(metric(P + "consumer.poll.idle.ratio.avg", 5, 0.5))));
        assertEquals(1L, e.getFailures());
    }

    @Test
    void thousandsOfShortLivedInstancesStayBounded() throws Exception {
        MBeanServer server = MBeanServerFactory.newMBeanServer();
        ClientTelemetryExporter e = exporter(server, 2000);
        ByteBuffer data = payload(metric(P + "producer.batch.size.avg", 5, 16384));
        for (int i = 0; i < 5000; i++) {
            e.exportMetrics(context("tenant" + (i % 7), "client-" + i), push(Uuid.randomUuid(), false, data));
        }
        assertEquals(2000, e.getClients());
        assertEquals(2000, clients(server).size());
        assertEquals(3000L, e.getEvicted());
        // the survivors are the most recently pushed
        assertEquals(1, server.queryNames(new ObjectName("kafka.health:type=ClientTelemetry,client-id=client-4999,*"),
            null).size());
        assertEquals(0, server.queryNames(new ObjectName("kafka.health:type=ClientTelemetry,client-id=client-0,*"),
            null).size());
        assertEquals(0L, e.getFailures());
        e.close();
        assertEquals(0, clients(server).size());
    }

    @Test
    void staleAndTerminatingInstancesExpire() throws Exception {
        MBeanServer server = MBeanServerFactory.newMBeanServer();
        ClientRegistry registry = new ClientRegistry(server, 100, 60_000);
        double[] none = new double[Signals.NAMES.length];
        Identity fast = new Identity("a", "u", "fast", "", "");
        Identity slow = new Identity("b", "u", "slow", "", "");
        registry.record(fast, none, 0, false, "", 0);
        registry.record(fast, none, 5_000, false, "", 0);  // pushes every 5 s: expires after 60 s
        registry.record(slow, none, 0, false, "", 0);
        registry.record(slow, none, 100_000, false, "", 0);  // every 100 s: expires after 300 s
        assertEquals(1, registry.expire(70_000));
        assertEquals(1, registry.size());
        assertEquals(0, registry.expire(300_000));
        assertEquals(1, registry.expire(400_001));
        Identity closing = new Identity("c", "u", "closing", "", "");
        registry.record(closing, none, 0, false, "", 0);
        registry.record(closing, none, 1, true, "", 0);
        assertEquals(0, clients(server).size());
        assertEquals(3L, registry.expired.get());
    }

    @Test
    void aToldPushIntervalKeepsARarePusherFromItsFirstPush() throws Exception {
        MBeanServer server = MBeanServerFactory.newMBeanServer();
        ClientRegistry registry = new ClientRegistry(server, 100, 60_000);
        double[] none = new double[Signals.NAMES.length];
        registry.record(new Identity("told", "u", "told", "", ""), none, 0, false, "", 300_000);  // every 5 min
        registry.record(new Identity("untold", "u", "untold", "", ""), none, 0, false, "", 0);
        assertEquals(1, registry.expire(60_001));  // untold: one push, so only the expiry setting holds it
        assertEquals(0, registry.expire(900_000));  // told: three of its intervals
        assertEquals(1, registry.expire(900_001));
    }

    @Test
    void theBrokerAskingForTheReceiverIsShownAsClientTelemetry() throws Exception {
        MBeanServer server = MBeanServerFactory.newMBeanServer();
        ClientTelemetryExporter e = exporter(server, 10);
        assertEquals("", e.getInterface());
        e.init(java.util.List.of());
        e.clientReceiver().exportMetrics(context("u", "c"), push(Uuid.randomUuid(), false,
            payload(metric(P + "consumer.poll.idle.ratio.avg", 5, 0.5))));
        assertEquals("ClientTelemetry", server.getAttribute(new ObjectName(ClientTelemetryExporter.SELF), "Interface"));
        assertEquals(1, clients(server).size());
        e.close();
    }

    /** The shipped jar is compiled against the newest kafka-clients and must load on 3.9: see the class's doc. */
    @Test
    void theClientTelemetryClassNamesNoTypeThatKafka42Added() throws Exception {
        byte[] code;
        try (java.io.InputStream in = ClientTelemetryExporter.class.getResourceAsStream(
                "ClientTelemetryExporter.class")) {
            code = in.readAllBytes();
        }
        String pool = new String(code, StandardCharsets.ISO_8859_1);  // class names are plain UTF-8 in the pool
        assertTrue(pool.contains("org/apache/kafka/server/telemetry/ClientTelemetryReceiver"));
        // ClientTelemetryExporter (Kafka's, and by prefix ...Provider) and ClientTelemetryContext, as types; the
        // string "ClientTelemetryExporterProvider" (the Interface attribute's value) is no reference
        for (String added : new String[] {"org/apache/kafka/server/telemetry/ClientTelemetryExporter",
                "org/apache/kafka/server/telemetry/ClientTelemetryContext"}) {
            assertFalse(pool.contains(added), added);
        }
    }

    @Test
    void clientControlledNamesCannotBreakTheObjectName() throws Exception {
        Identity who = new Identity("id", "User \"x\",y=*", "", "lib:rd", "2.16\n" + "x".repeat(500));
        ObjectName name = who.objectName();
        assertEquals("User__x__y__", name.getKeyProperty("user"));
        assertEquals(null, name.getKeyProperty("client-id"));
        assertEquals(Identity.MAX_VALUE, name.getKeyProperty("client-software-version").length());
    }
}
