package io.kafkahealth.telemetry;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Reads the number data points of an OTLP {@code MetricsData} protobuf (the KIP-714 payload, already decompressed
 * by the broker) without any protobuf library: the broker has opentelemetry-proto only shaded inside kafka-clients,
 * which is no API. Only the path to gauge and sum data points is decoded; every other field is skipped by its wire
 * type, and a metric is looked at only when {@link Sink#index} wants its name, so a push of hundreds of metrics
 * costs little more than a scan of its bytes.
 *
 * <pre>
 * MetricsData      1: ResourceMetrics*
 * ResourceMetrics  2: ScopeMetrics*
 * ScopeMetrics     2: Metric*
 * Metric           1: name, 5: Gauge, 7: Sum
 * Gauge / Sum      1: NumberDataPoint*
 * NumberDataPoint  4: as_double (fixed64), 6: as_int (sfixed64)
 * </pre>
 *
 * Malformed input throws {@link IllegalArgumentException}; the caller counts it as a failed push.
 */
final class OtlpReader {
    /** Where the data points go. */
    interface Sink {
        /** The slot of a metric name, or -1 when it is not wanted. */
        int index(String name);

        /** One data point of a wanted metric (several for per-node metrics). */
        void add(int index, double value);
    }

    private static final int VARINT = 0, FIXED64 = 1, LEN = 2, FIXED32 = 5;

    private final ByteBuffer buf;

    private OtlpReader(ByteBuffer buf) {
        this.buf = buf;
    }

    static void read(ByteBuffer data, Sink sink) {
        OtlpReader r = new OtlpReader(data.duplicate());
        r.messages(r.buf.limit(), 1, end -> r.resourceMetrics(end, sink));
    }

    private interface Body {
        void read(int end);
    }

    /** Calls {@code body} for each length-delimited field {@code field} up to {@code end}, skipping the others. */
    private void messages(int end, int field, Body body) {
        while (buf.position() < end) {
            long tag = varint();
            int number = (int) (tag >>> 3), wire = (int) (tag & 7);
            if (number == field && wire == LEN) {
                int stop = lengthEnd(end);
                body.read(stop);
                buf.position(stop);
            } else {
                skip(wire, end);
            }
        }
    }

    private void resourceMetrics(int end, Sink sink) {
        messages(end, 2, scopeEnd -> messages(scopeEnd, 2, metricEnd -> metric(metricEnd, sink)));
    }

    private void metric(int end, Sink sink) {
        int slot = -1;
        while (buf.position() < end) {
            long tag = varint();
            int number = (int) (tag >>> 3), wire = (int) (tag & 7);
            if (number == 1 && wire == LEN) {  // name comes first in every encoder we know; if not, points are lost
                int stop = lengthEnd(end);
                slot = sink.index(new String(bytes(stop - buf.position()), StandardCharsets.UTF_8));
                if (slot < 0) {
                    buf.position(end);  // not wanted: skip the rest of this metric unread
                    return;
                }
            } else if ((number == 5 || number == 7) && wire == LEN && slot >= 0) {
                int stop = lengthEnd(end);
                final int s = slot;
                messages(stop, 1, pointEnd -> dataPoint(pointEnd, s, sink));
                buf.position(stop);
            } else {
                skip(wire, end);
            }
        }
    }

    private void dataPoint(int end, int slot, Sink sink) {
        while (buf.position() < end) {
            long tag = varint();
            int number = (int) (tag >>> 3), wire = (int) (tag & 7);
            if (number == 4 && wire == FIXED64) {
                sink.add(slot, Double.longBitsToDouble(fixed64(end)));
            } else if (number == 6 && wire == FIXED64) {
                sink.add(slot, (double) fixed64(end));
            } else {
                skip(wire, end);
            }
        }
    }

    private long varint() {
        long value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (!buf.hasRemaining()) {
                throw new IllegalArgumentException("truncated varint");
            }
            byte b = buf.get();
            value |= (long) (b & 0x7f) << shift;
            if ((b & 0x80) == 0) {
                return value;
            }
        }
        throw new IllegalArgumentException("varint longer than 10 bytes");
    }

    private long fixed64(int end) {
        if (end - buf.position() < 8) {
            throw new IllegalArgumentException("truncated fixed64");
        }
        long v = 0;
        for (int i = 0; i < 8; i++) {
            v |= (long) (buf.get() & 0xff) << (8 * i);
        }
        return v;
    }

    private int lengthEnd(int end) {
        long len = varint();
        if (len < 0 || len > end - buf.position()) {
            throw new IllegalArgumentException("length beyond its message");
        }
        return buf.position() + (int) len;
    }

    private byte[] bytes(int n) {
        byte[] out = new byte[n];
        buf.get(out);
        return out;
    }

    private void skip(int wire, int end) {
        switch (wire) {
            case VARINT:
                varint();
                break;
            case FIXED64:
                fixed64(end);
                break;
            case LEN:
                buf.position(lengthEnd(end));
                break;
            case FIXED32:
                if (end - buf.position() < 4) {
                    throw new IllegalArgumentException("truncated fixed32");
                }
                buf.position(buf.position() + 4);
                break;
            default:
                throw new IllegalArgumentException("unsupported wire type " + wire);
        }
    }
}
