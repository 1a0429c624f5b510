// Asks the cluster for a consumer group's coordinator, as Kafka's own group tool does first, run as a single-file
// source program against the stack's Kafka jars (monitor/stack/kafka.py, describe_group):
//
//   java -cp 'JARS/*' FindCoordinator.java --bootstrap-server HOST:PORT [--command-config FILE] --group GROUP
//
// A broker answers the first FindCoordinator of a cluster by creating __consumer_offsets, so the stack makes the topic
// this way while every broker is up. The credentials stay in the --command-config file (Java client properties).
// Exit 0 once the coordinator answered (a group that does not exist is an answer), 1 otherwise.

import java.io.FileInputStream;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.errors.GroupIdNotFoundException;

public class FindCoordinator {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        String group = null;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--bootstrap-server" -> props.put("bootstrap.servers", args[i + 1]);
                case "--command-config" -> {
                    try (FileInputStream in = new FileInputStream(args[i + 1])) {
                        props.load(in);
                    }
                }
                case "--group" -> group = args[i + 1];
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (group == null || !props.containsKey("bootstrap.servers")) {
            throw new IllegalArgumentException("--bootstrap-server and --group are required");
        }
        try (Admin admin = Admin.create(props)) {
            admin.describeConsumerGroups(List.of(group)).all().get(90, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof GroupIdNotFoundException)) {
                System.err.println("FindCoordinator: " + e.getCause());
                System.exit(1);
            }
        }
    }
}
