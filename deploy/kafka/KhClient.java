// A plain Apache Kafka Java client for the stack tests, run as a single-file source program against the
// kafka-clients jars of one version (monitor/stack/javaclients.py resolves them from Maven Central):
//
//   java -cp 'JARS/*' KhClient.java produce|consume PROPERTIES_FILE TOPIC RATE RECORD_BYTES [PROCESS_MS]
//
// Every client setting (bootstrap.servers, client.id, linger.ms, SASL ...) comes from PROPERTIES_FILE, so no
// credential is ever in argv. produce: RATE records per second of RECORD_BYTES bytes each, keyless. consume:
// subscribes to TOPIC (group.id from the file) and polls; with PROCESS_MS (optional, default 0) it spends that many
// milliseconds on each record it got before polling again, as an application whose processing is its bottleneck
// does (RATE and RECORD_BYTES are ignored when consuming). The client stops when its stdin closes (the parent
// went away or asked it to), so it never outlives the test; once a second it prints one line of counts:
//   produce: "sent=N acked=N errors=N"     consume: "consumed=N"
// Compiles against kafka-clients 2.3 and later (poll(Duration) is 2.0+); nothing here depends on a newer API.

import java.io.FileInputStream;
import java.io.InputStream;
import java.time.Duration;
import java.util.Collections;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class KhClient {
    static final AtomicBoolean stop = new AtomicBoolean(false);

    public static void main(String[] args) throws Exception {
        if (args.length != 5 && args.length != 6) {
            System.err.println("usage: KhClient produce|consume PROPERTIES_FILE TOPIC RATE RECORD_BYTES [PROCESS_MS]");
            System.exit(2);
        }
        String mode = args[0], topic = args[2];
        double rate = Double.parseDouble(args[3]);
        int size = Integer.parseInt(args[4]);
        double processMs = args.length == 6 ? Double.parseDouble(args[5]) : 0.0;
        if (!(processMs >= 0 && processMs <= 60_000)) {
            System.err.println("PROCESS_MS must be 0..60000");
            System.exit(2);
        }
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(args[1])) {
            props.load(in);
        }
        Thread watcher = new Thread(() -> {
            try {
                while (System.in.read() >= 0) { }
            } catch (Exception e) { }
            stop.set(true);
        });
        watcher.setDaemon(true);
        watcher.start();
        if (mode.equals("produce")) {
            produce(props, topic, rate, size);
        } else if (mode.equals("consume")) {
            consume(props, topic, processMs);
        } else {
            System.err.println("unknown mode " + mode);
            System.exit(2);
        }
    }

    static void produce(Properties props, String topic, double rate, int size) throws Exception {
        AtomicLong acked = new AtomicLong(), errors = new AtomicLong();
        long sent = 0;
        byte[] value = new byte[size];
        java.util.Arrays.fill(value, (byte) 'x');
        long start = System.nanoTime(), lastPrint = start;
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(props, new ByteArraySerializer(),
                new ByteArraySerializer())) {
            while (!stop.get()) {
                long now = System.nanoTime();
                long due = (long) ((now - start) / 1e9 * rate);
                while (sent < due && !stop.get()) {
                    p.send(new ProducerRecord<>(topic, value), (md, e) -> {
                        if (e == null) acked.incrementAndGet(); else errors.incrementAndGet();
                    });
                    sent++;
                }
                if (now - lastPrint >= 1_000_000_000L) {
                    System.out.println("sent=" + sent + " acked=" + acked.get() + " errors=" + errors.get());
                    System.out.flush();
                    lastPrint = now;
                }
                Thread.sleep(1);
            }
            p.flush();
        }
        System.out.println("sent=" + sent + " acked=" + acked.get() + " errors=" + errors.get());
    }

    static void consume(Properties props, String topic, double processMs) throws InterruptedException {
        long consumed = 0, lastPrint = System.nanoTime();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(props, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            c.subscribe(Collections.singletonList(topic));
            while (!stop.get()) {
                // A processing application polls with a longer timeout (1 s): the polls that wait while the group is
                // joined count as idle ones in its poll-idle-ratio-avg, an average per poll, not per second
                ConsumerRecords<byte[], byte[]> records = c.poll(Duration.ofMillis(processMs > 0 ? 1000 : 200));
                if (processMs > 0) {  // the application's work on each record, one after another
                    long nanos = (long) (processMs * 1e6);
                    for (int i = 0; i < records.count() && !stop.get(); i++) {
                        Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000));
                        consumed++;
                    }
                } else {
                    consumed += records.count();
                }
                long now = System.nanoTime();
                if (now - lastPrint >= 1_000_000_000L) {
                    System.out.println("consumed=" + consumed);
                    System.out.flush();
                    lastPrint = now;
                }
            }
        }
        System.out.println("consumed=" + consumed);
    }
}
