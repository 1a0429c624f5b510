// A real Kafka Streams application for the stack tests, run as a single-file source program against the
// kafka-streams jars of one version (deploy/kafka/streams-pom.xml; tests/harness/javaclients.py resolves them):
//
//   java -cp 'JARS/*' KhStreams.java PROPERTIES_FILE INPUT_TOPIC OUTPUT_TOPIC
//
// Every setting (application.id, bootstrap.servers, group.protocol=streams, commit.interval.ms, state.dir, SASL ...)
// comes from PROPERTIES_FILE, so no credential is ever in argv. The topology is one stateless subtopology: each
// record of INPUT_TOPIC is copied to OUTPUT_TOPIC. The application closes (leaving its group) when its stdin
// closes, so it never outlives the test; once a second it prints "state=STATE processed=N".

import java.io.FileInputStream;
import java.io.InputStream;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;

public class KhStreams {
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: KhStreams PROPERTIES_FILE INPUT_TOPIC OUTPUT_TOPIC");
            System.exit(2);
        }
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            props.load(in);
        }
        AtomicLong processed = new AtomicLong();
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[1], Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
            .peek((k, v) -> processed.incrementAndGet())
            .to(args[2], Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.start();
        Thread watcher = new Thread(() -> {
            try {
                while (System.in.read() >= 0) { }
            } catch (Exception ignored) {
            }
            streams.close(Duration.ofSeconds(10));
            System.out.println("state=" + streams.state() + " processed=" + processed.get());
            System.exit(0);
        });
        watcher.setDaemon(true);
        watcher.start();
        while (true) {
            System.out.println("state=" + streams.state() + " processed=" + processed.get());
            System.out.flush();
            Thread.sleep(1000);
        }
    }
}
