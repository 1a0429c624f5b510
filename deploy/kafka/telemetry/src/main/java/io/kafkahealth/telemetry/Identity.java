package io.kafkahealth.telemetry;

import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;

/**
 * Who pushed: from the request context (principal, client id, KIP-511 software name and version) and the payload
 * (client instance id). Values are client-controlled, so each is cut to {@link #MAX_VALUE} characters and every
 * character outside {@code [A-Za-z0-9._@+/~-]} becomes {@code _}: the MBean name needs no quoting, and no JMX
 * transport (jmxquery does not escape its JSON) can be broken by a client's choice of name.
 */
final class Identity {
    static final String DOMAIN = "kafka.health";
    static final int MAX_VALUE = 128;

    final String instanceId;
    final String user;
    final String clientId;
    final String softwareName;
    final String softwareVersion;

    Identity(String instanceId, String user, String clientId, String softwareName, String softwareVersion) {
        this.instanceId = clean(instanceId);
        this.user = clean(user);
        this.clientId = clean(clientId);
        this.softwareName = clean(softwareName);
        this.softwareVersion = clean(softwareVersion);
    }

    static String clean(String value) {
        if (value == null) {
            return "";
        }
        int n = Math.min(value.length(), MAX_VALUE);
        StringBuilder out = new StringBuilder(n);
        for (int i = 0; i < n; i++) {
            char c = value.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                || c == '.' || c == '_' || c == '@' || c == '+' || c == '/' || c == '~' || c == '-';
            out.append(ok ? c : '_');
        }
        return out.toString();
    }

    ObjectName objectName() throws MalformedObjectNameException {
        StringBuilder b = new StringBuilder(DOMAIN).append(":type=ClientTelemetry");
        prop(b, "client-instance-id", instanceId);
        prop(b, "user", user);
        prop(b, "client-id", clientId);
        prop(b, "client-software-name", softwareName);
        prop(b, "client-software-version", softwareVersion);
        return new ObjectName(b.toString());
    }

    private static void prop(StringBuilder b, String key, String value) {
        if (!value.isEmpty()) {  // an empty value is no valid ObjectName property; Kafka's JmxReporter drops them too
            b.append(',').append(key).append('=').append(value);
        }
    }
}
