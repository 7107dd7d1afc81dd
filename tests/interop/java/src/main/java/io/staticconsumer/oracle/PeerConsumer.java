package io.staticconsumer.oracle;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The Java client as a live group member: a KafkaConsumer that reports, as JSON lines on stdout, what a
 * test or benchmark needs to compare it with our consumer (assignments with generations, the first record,
 * record counts, revokes, losses, fencing, an unreleased instance id, any other fatal error). Stops on
 * SIGTERM, or on "stop" read from stdin, with close(): a static Java member sends no LeaveGroup (classic)
 * or a leave heartbeat with epoch -2 (consumer protocol), so it keeps its partitions for a restart.
 *
 * Arguments: key=value pairs: bootstrap, group, topics (comma-separated), instance (optional), assignor
 * (range|roundrobin|sticky|cooperative-sticky), session_ms, heartbeat_ms, metadata_max_age_ms,
 * auto_offset_reset, commit (auto|sync), protocol (classic|consumer, default classic), remote_assignor
 * (uniform|range, consumer protocol only; unset: the broker's default), timeline (true: also report
 * the restart timeline).
 *
 * With protocol=consumer (KIP-848) the broker assigns partitions and owns the session timeout and the
 * heartbeat interval, and Java refuses those client settings, so assignor, session_ms and heartbeat_ms are
 * ignored; the "gen" it reports is then the member epoch.
 *
 * <p>The timeline (for the rolling-bounce benchmark): "imported" once the KafkaConsumer class is
 * loaded and initialised, then "coordinator", "joined", "synced" and "offsets" the first time
 * kafka-clients logs, at INFO, that it discovered the group coordinator, joined, synced, and set a
 * partition's position from its committed offset (or reset it). The KafkaConsumer has no public hook
 * for these steps; its own log records are read as they are written (slf4j-simple on stderr,
 * intercepted in this process), so the timestamps are those of the client's own code paths.
 */
public final class PeerConsumer {
    private static final PrintStream OUT =
        new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);

    private PeerConsumer() {}

    private static synchronized void say(String event, String fields) {
        OUT.println("{\"e\":\"" + event + "\",\"t\":" + (System.currentTimeMillis() / 1000.0)
            + (fields.isEmpty() ? "" : "," + fields) + "}");
    }

    private static String partitions(Collection<TopicPartition> partitions) {
        List<String> items = new ArrayList<>();
        for (TopicPartition tp : partitions) {
            items.add("[\"" + tp.topic() + "\"," + tp.partition() + "]");
        }
        return "\"partitions\":[" + String.join(",", items) + "],\"n\":" + partitions.size();
    }

    private static String assignorClass(String name) {
        switch (name) {
            case "range":
                return "org.apache.kafka.clients.consumer.RangeAssignor";
            case "roundrobin":
                return "org.apache.kafka.clients.consumer.RoundRobinAssignor";
            case "sticky":
                return "org.apache.kafka.clients.consumer.StickyAssignor";
            case "cooperative-sticky":
                return "org.apache.kafka.clients.consumer.CooperativeStickyAssignor";
            default:
                throw new IllegalArgumentException("unknown assignor " + name);
        }
    }

    /** kafka-clients' INFO messages that mark each timeline step (their start, as logged). */
    private static final String[][] TIMELINE = {
        {"Discovered group coordinator", "coordinator"},
        {"Successfully joined group with generation", "joined"},
        {"Successfully synced group in generation", "synced"},
        // group.protocol=consumer (KIP-848): the join answered, then the first assignment reconciled
        {"transitioned from JOINING to RECONCILING", "joined"},
        {"transitioned from RECONCILING to ACKNOWLEDGING", "synced"},
        {"to the committed offset", "offsets"},
        {"Resetting offset for partition", "offsets"},
    };

    /** Reads the client's log lines as slf4j-simple writes them and reports each step once. */
    private static final class TimelineStream extends java.io.OutputStream {
        private final java.io.ByteArrayOutputStream line = new java.io.ByteArrayOutputStream();
        private final java.util.Set<String> seen = new java.util.HashSet<>();

        @Override
        public synchronized void write(int b) {
            if (b == '\n') {
                String text = line.toString(StandardCharsets.UTF_8);
                line.reset();
                for (String[] step : TIMELINE) {
                    if (text.contains(step[0]) && seen.add(step[1])) {
                        say(step[1], "");
                    }
                }
            } else {
                line.write(b);
            }
        }
    }

    private static void startTimeline() throws ClassNotFoundException {
        // Before any logger exists: slf4j-simple reads its configuration once, at the first logger.
        System.setProperty("org.slf4j.simpleLogger.log.org.apache.kafka.clients.consumer.internals", "info");
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        System.setErr(new PrintStream(new TimelineStream(), true, StandardCharsets.UTF_8));
        Class.forName("org.apache.kafka.clients.consumer.KafkaConsumer", true, PeerConsumer.class.getClassLoader());
        say("imported", "");
    }

    public static void main(String[] args) throws Exception {
        Properties options = new Properties();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            options.setProperty(arg.substring(0, eq), arg.substring(eq + 1));
        }
        if ("true".equals(options.getProperty("timeline"))) {
            startTimeline();
        }
        Properties config = new Properties();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, options.getProperty("bootstrap"));
        config.put(ConsumerConfig.GROUP_ID_CONFIG, options.getProperty("group"));
        if (options.getProperty("instance") != null) {
            config.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, options.getProperty("instance"));
        }
        String protocol = options.getProperty("protocol", "classic");
        if (protocol.equals("consumer")) {
            config.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            if (options.getProperty("remote_assignor") != null) {
                config.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, options.getProperty("remote_assignor"));
            }
        } else if (protocol.equals("classic")) {
            config.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
                assignorClass(options.getProperty("assignor", "range")));
            config.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, options.getProperty("session_ms", "10000"));
            config.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, options.getProperty("heartbeat_ms", "1000"));
        } else {
            throw new IllegalArgumentException("protocol must be classic or consumer, not " + protocol);
        }
        config.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, options.getProperty("metadata_max_age_ms", "300000"));
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, options.getProperty("auto_offset_reset", "earliest"));
        boolean syncCommit = "sync".equals(options.getProperty("commit", "auto"));
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, Boolean.toString(!syncCommit));
        config.put(ConsumerConfig.AUTO_COMMIT_INTERVAL_MS_CONFIG, "1000");
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());

        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config);
        AtomicBoolean stopping = new AtomicBoolean(false);
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping.set(true);
            consumer.wakeup();
            try {
                closed.await();
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
        }));
        Thread stdin = new Thread(() -> {
            try (java.io.BufferedReader in = new java.io.BufferedReader(
                    new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.trim().equals("stop")) {
                        break;
                    }
                }
            } catch (java.io.IOException ignored) {
                // stdin closed: stop as well
            }
            stopping.set(true);
            consumer.wakeup();
        });
        stdin.setDaemon(true);
        stdin.start();

        List<String> topics = List.of(options.getProperty("topics").split(","));
        consumer.subscribe(topics, new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
                say("revoked", partitions(revoked));
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
                say("assigned", partitions(assigned) + ",\"gen\":" + consumer.groupMetadata().generationId()
                    + ",\"member\":\"" + consumer.groupMetadata().memberId() + "\"");
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> lost) {
                say("lost", partitions(lost));
            }
        });
        say("started", "");
        boolean first = true;
        long total = 0;
        try {
            while (!stopping.get()) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                if (!records.isEmpty()) {
                    if (first) {
                        say("first_record", "\"gen\":" + consumer.groupMetadata().generationId());
                        first = false;
                    }
                    total += records.count();
                    List<String> seen = new ArrayList<>();
                    records.partitions().forEach(tp -> seen.add("[\"" + tp.topic() + "\"," + tp.partition() + ","
                        + records.records(tp).size() + "]"));
                    say("records", "\"count\":" + records.count() + ",\"total\":" + total + ",\"by\":[" + String.join(",", seen) + "]");
                    if (syncCommit) {
                        consumer.commitSync();
                    }
                }
            }
        } catch (WakeupException expected) {
            // asked to stop
        } catch (org.apache.kafka.common.errors.FencedInstanceIdException fenced) {
            say("fenced", "\"message\":\"" + fenced.getMessage().replace("\"", "'") + "\"");
        } catch (org.apache.kafka.common.errors.UnreleasedInstanceIdException unreleased) {
            say("unreleased", "\"message\":\"" + String.valueOf(unreleased.getMessage()).replace("\"", "'") + "\"");
        } catch (org.apache.kafka.common.KafkaException failure) {
            say("failed", "\"error\":\"" + failure.getClass().getSimpleName() + "\",\"message\":\""
                + String.valueOf(failure.getMessage()).replace("\"", "'") + "\"");
        } finally {
            try {
                consumer.close(Duration.ofSeconds(10));
            } catch (RuntimeException error) {
                say("close_failed", "\"message\":\"" + String.valueOf(error.getMessage()).replace("\"", "'") + "\"");
            }
            say("stopped", "");
            closed.countDown();
        }
    }
}
