package io.kafkahealth.telemetry;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.management.StandardMBean;

/**
 * The client instances a broker holds, bounded: at most {@code maxClients} (the least recently pushed is evicted to
 * make room), each dropped once stale (see {@link ClientInstance#staleAt}) or when its client says it terminates.
 * Each held instance is one MBean; memory is bounded by maxClients times one instance (its name's properties are
 * cut to {@link Identity#MAX_VALUE} characters).
 *
 * <p>Thread-safety: every change takes this object's lock (pushes are rare: one per client per interval); JMX reads
 * the instances' volatile fields without it.
 */
final class ClientRegistry {
    private final MBeanServer server;
    private final int maxClients;
    private final long expiryMs;
    private final LinkedHashMap<String, ClientInstance> byInstance = new LinkedHashMap<>(64, 0.75f, true);
    final AtomicLong evicted = new AtomicLong();
    final AtomicLong expired = new AtomicLong();

    ClientRegistry(MBeanServer server, int maxClients, long expiryMs) {
        this.server = server;
        this.maxClients = maxClients;
        this.expiryMs = expiryMs;
    }

    int maxClients() {
        return maxClients;
    }

    synchronized int size() {
        return byInstance.size();
    }

    /** Records one push. Throws JMException when the MBean server refuses the instance (the caller counts it). */
    synchronized void record(Identity who, double[] values, long nowMs, boolean terminating, String address,
            long intervalMs) throws JMException {
        ClientInstance held = byInstance.get(who.instanceId);
        if (terminating) {  // the client closes: nothing more will come
            if (held != null) {
                drop(who.instanceId, held);
                expired.incrementAndGet();
            }
            return;
        }
        ObjectName name = who.objectName();
        if (held != null && !held.name.equals(name)) {  // same instance, new identity (re-authenticated)
            drop(who.instanceId, held);
            held = null;
        }
        if (held == null) {
            while (byInstance.size() >= maxClients) {
                Iterator<Map.Entry<String, ClientInstance>> eldest = byInstance.entrySet().iterator();
                Map.Entry<String, ClientInstance> e = eldest.next();
                eldest.remove();
                unregister(e.getValue());
                evicted.incrementAndGet();
            }
            held = new ClientInstance(name);
            held.pushed(values, nowMs, address, intervalMs);
            if (server.isRegistered(name)) {
                server.unregisterMBean(name);
            }
            // StandardMBean: the class is not named after its interface (ClientTelemetryMBean)
            server.registerMBean(new StandardMBean(held, ClientTelemetryMBean.class), name);
            byInstance.put(who.instanceId, held);
        } else {
            held.pushed(values, nowMs, address, intervalMs);
        }
    }

    /** Drops every stale instance; returns how many. */
    synchronized int expire(long nowMs) {
        List<String> stale = new ArrayList<>();
        for (Map.Entry<String, ClientInstance> e : byInstance.entrySet()) {
            if (e.getValue().staleAt(nowMs, expiryMs)) {
                stale.add(e.getKey());
            }
        }
        for (String id : stale) {
            drop(id, byInstance.get(id));
        }
        expired.addAndGet(stale.size());
        return stale.size();
    }

    synchronized void clear() {
        for (ClientInstance c : byInstance.values()) {
            unregister(c);
        }
        byInstance.clear();
    }

    private void drop(String id, ClientInstance c) {
        byInstance.remove(id);
        unregister(c);
    }

    private void unregister(ClientInstance c) {
        try {
            server.unregisterMBean(c.name);
        } catch (JMException | RuntimeException e) {
            // already gone (another reporter instance, a JMX client): nothing to undo
        }
    }
}
