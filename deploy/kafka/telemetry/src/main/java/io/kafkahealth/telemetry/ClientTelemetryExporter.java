package io.kafkahealth.telemetry;

import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetry;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.apache.kafka.server.telemetry.ClientTelemetryReceiver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * kafka-health's KIP-714 broker plugin for Kafka 3.7 to 4.1:
 * {@code metric.reporters=io.kafkahealth.telemetry.ClientTelemetryExporter}. On 4.2+ configure its subclass
 * {@link ProviderClientTelemetryExporter} instead (the interface 4.2 added; this one is deprecated there).
 *
 * <p>Kafka 3.7+ hands every PushTelemetry request to the {@link ClientTelemetryReceiver} of a metrics reporter that
 * implements {@link ClientTelemetry}, on a request handler thread. This one keeps, per client instance, the last
 * pushed value of a few signals ({@link Signals}) as an MBean that kafka-health's JMX collector reads through the
 * transport it already uses (jmxquery or Jolokia), with the request's principal, client id and client software.
 *
 * <p>Implementers must not (and this one does not): throw from {@link #exportMetrics} (a failure is counted in
 * {@code Failures} and logged, at most once a minute), block, or hold unbounded state. Bounds: {@code
 * kafka.health.telemetry.max.clients} instances (default 2000; least recently pushed evicted), each expiring after
 * {@code kafka.health.telemetry.expiry.ms} (default 180000) or three of its own push intervals, whichever is longer.
 * Broker metrics ({@link #init}, {@link #metricChange}) are ignored: the plugin exports client telemetry only.
 *
 * <p>This class must reference no type that Kafka 4.2 added (ClientTelemetryExporterProvider, ClientTelemetryContext,
 * Kafka's ClientTelemetryExporter): the jar is compiled against the newest kafka-clients and must still load on a 3.9
 * broker. What needs them lives in the subclass only (a JUnit test reads this class's constant pool).
 */
@SuppressWarnings("deprecation")  // ClientTelemetry: deprecated from 4.2, and what brokers before it offer
public class ClientTelemetryExporter
        implements MetricsReporter, ClientTelemetry, ClientTelemetryReceiver, ClientTelemetryExporterMBean {
    static final String MAX_CLIENTS = "kafka.health.telemetry.max.clients";
    static final String EXPIRY_MS = "kafka.health.telemetry.expiry.ms";
    static final String SELF = Identity.DOMAIN + ":type=ClientTelemetryExporter";
    /** The {@link #getInterface} values: which entry point the broker asked for. */
    static final String RECEIVER = "ClientTelemetry", PROVIDER = "ClientTelemetryExporterProvider";
    private static final Logger LOG = LoggerFactory.getLogger(ClientTelemetryExporter.class);

    private final MBeanServer server;
    private volatile ClientRegistry registry;
    private ScheduledExecutorService sweeper;
    private final AtomicLong pushes = new AtomicLong();
    private final AtomicLong failures = new AtomicLong();
    private volatile long lastWarnMs;
    private volatile String entryPoint = "";

    public ClientTelemetryExporter() {
        this(ManagementFactory.getPlatformMBeanServer());
    }

    ClientTelemetryExporter(MBeanServer server) {
        this.server = server;
        this.registry = new ClientRegistry(server, 2000, 180_000);
    }

    @Override
    public void configure(Map<String, ?> configs) {
        int max = (int) number(configs.get(MAX_CLIENTS), 2000, 1, 1_000_000);
        long expiry = number(configs.get(EXPIRY_MS), 180_000, 1_000, 86_400_000L);
        registry = new ClientRegistry(server, max, expiry);
    }

    private static long number(Object value, long otherwise, long min, long max) {
        if (value == null) {
            return otherwise;
        }
        try {
            long v = Long.parseLong(value.toString().trim());
            return Math.max(min, Math.min(max, v));
        } catch (NumberFormatException e) {
            LOG.warn("kafka-health telemetry: ignoring non-numeric setting {}", value);
            return otherwise;
        }
    }

    @Override
    public void init(List<KafkaMetric> metrics) {
        try {
            ObjectName self = new ObjectName(SELF);
            if (!server.isRegistered(self)) {
                server.registerMBean(this, self);
            }
        } catch (Exception e) {
            LOG.warn("kafka-health telemetry: could not register {}: {}", SELF, e.toString());
        }
        sweeper = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "kafka-health-telemetry-expiry");
            t.setDaemon(true);
            return t;
        });
        sweeper.scheduleWithFixedDelay(this::expire, 10, 10, TimeUnit.SECONDS);
    }

    void expire() {
        try {
            registry.expire(System.currentTimeMillis());
        } catch (Throwable t) {
            failed(t);
        }
    }

    /** Kafka 3.7-4.1 (and 4.2+ given this class itself) ask for the receiver once, when the reporter is added. */
    @Override
    public ClientTelemetryReceiver clientReceiver() {
        servedThrough(RECEIVER);
        return this;
    }

    /** The broker asked for the plugin through {@code entryPoint}: logged once, and readable as {@code Interface}. */
    final void servedThrough(String entryPoint) {
        if (!entryPoint.equals(this.entryPoint)) {
            this.entryPoint = entryPoint;
            LOG.info("kafka-health telemetry: the broker hands client pushes to the plugin through {}", entryPoint);
        }
    }

    @Override
    public void exportMetrics(AuthorizableRequestContext context, ClientTelemetryPayload payload) {
        export(context, payload, 0);  // ClientTelemetry does not tell the push interval
    }

    /**
     * One push, from either entry point. {@code intervalMs}: the client's push interval as the broker told it
     * (ClientTelemetryExporterProvider), 0 when unknown; an expiry hint (see {@link ClientInstance#staleAt}).
     */
    final void export(AuthorizableRequestContext context, ClientTelemetryPayload payload, long intervalMs) {
        pushes.incrementAndGet();
        try {
            if (payload.clientInstanceId() == null || payload.data() == null) {
                throw new IllegalArgumentException("push without client instance id or data");
            }
            Signals.Push push = new Signals.Push();
            OtlpReader.read(payload.data(), push);
            InetAddress address = context.clientAddress();
            registry.record(identity(context, payload), push.values(), System.currentTimeMillis(),
                payload.isTerminating(), address == null ? "" : address.getHostAddress(), intervalMs);
        } catch (Throwable t) {  // never fail the broker's request handling
            failed(t);
        }
    }

    private static Identity identity(AuthorizableRequestContext context, ClientTelemetryPayload payload) {
        String name = "", version = "";
        try {  // KIP-511 software name/version: on the concrete RequestContext only, not on the interface
            if (context instanceof RequestContext) {
                RequestContext rc = (RequestContext) context;
                name = rc.clientInformation.softwareName();
                version = rc.clientInformation.softwareVersion();
            }
        } catch (LinkageError e) {
            // a broker whose RequestContext changed shape: the instance is still recorded, without its software
        }
        String user = context.principal() == null ? "" : context.principal().getName();
        return new Identity(String.valueOf(payload.clientInstanceId()), user, context.clientId(), name, version);
    }

    private void failed(Throwable t) {
        if (t instanceof VirtualMachineError) {
            throw (VirtualMachineError) t;
        }
        failures.incrementAndGet();
        long now = System.currentTimeMillis();
        if (now - lastWarnMs > 60_000) {
            lastWarnMs = now;
            LOG.warn("kafka-health telemetry: a client push could not be read ({} so far): {}", failures.get(),
                t.toString());
        }
    }

    @Override
    public void metricChange(KafkaMetric metric) {
    }

    @Override
    public void metricRemoval(KafkaMetric metric) {
    }

    @Override
    public void close() {
        if (sweeper != null) {
            sweeper.shutdownNow();
        }
        registry.clear();
        try {
            ObjectName self = new ObjectName(SELF);
            if (server.isRegistered(self)) {
                server.unregisterMBean(self);
            }
        } catch (Exception e) {
            // closing: nothing left to do
        }
    }

    @Override
    public int getClients() {
        return registry.size();
    }

    @Override
    public int getMaxClients() {
        return registry.maxClients();
    }

    @Override
    public long getPushes() {
        return pushes.get();
    }

    @Override
    public long getFailures() {
        return failures.get();
    }

    @Override
    public long getEvicted() {
        return registry.evicted.get();
    }

    @Override
    public long getExpired() {
        return registry.expired.get();
    }

    @Override
    public String getInterface() {
        return entryPoint;
    }
}
