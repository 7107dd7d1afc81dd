package io.staticconsumer.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

/**
 * Java's assignors timed for benchmarks/assignors.py, inputs built inside the JVM.
 *
 * <p>The oracle's "assign" ships every subscription and partition as JSON, which at 2,000 members x
 * 1,000,000 partitions costs far more than the assignment. Here the benchmark names a group instead:
 * topics "topic-%04d" with the same partition count each, members (member id, instance id) all
 * subscribed to every topic, and optionally the previous run whose assignment each member reports
 * (owned partitions, generation 1, and the userData the assignor itself writes for it). Then "run"
 * times one {@code assign} on a fresh assignor instance (System.nanoTime around the call only, the
 * JVM's garbage collector on as it always is; each run gets fresh Subscription objects, since Java's
 * assignors consume the userData buffers they read), and "result" returns the last assignment compactly.
 *
 * <p>JSON lines on stdin/stdout, like the oracle: {"op": "setup", "key", "assignor", "topics",
 * "perTopic", "members": [[memberId, instanceId]...], "previous": key or null} -> {"ok": true};
 * {"op": "run", "key"} -> {"ok": true, "elapsedNanos"}; {"op": "result", "key"} -> {"ok": true,
 * "assignment": {memberId: base64 of big-endian int32 partition ids (topic index * perTopic +
 * partition)}}; {"op": "drop", "key"} forgets a group; {"op": "gc"} runs System.gc().
 */
public final class AssignorBench {
    private static final PrintStream OUT =
        new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);

    private AssignorBench() {}

    /** One named group: its metadata, its subscriptions and its latest assignment. */
    private static final class Group {
        String assignor;
        int perTopic;
        Cluster cluster;
        ConsumerPartitionAssignor.GroupSubscription subscription;
        Map<String, List<TopicPartition>> last;
    }

    private static final Map<String, Group> GROUPS = new HashMap<>();

    private static ConsumerPartitionAssignor assignor(String name) {
        switch (name) {
            case "range":
                return new RangeAssignor();
            case "roundrobin":
                return new RoundRobinAssignor();
            case "sticky":
                return new StickyAssignor();
            case "cooperative-sticky":
                return new CooperativeStickyAssignor();
            default:
                throw new IllegalArgumentException("unknown assignor " + name);
        }
    }

    private static String topic(int index) {
        return String.format("topic-%04d", index);
    }

    private static void setup(JsonNode request) {
        Group group = new Group();
        group.assignor = request.get("assignor").asText();
        int topics = request.get("topics").asInt();
        group.perTopic = request.get("perTopic").asInt();
        Node node = new Node(0, "broker-0", 9092, null);
        Node[] replicas = {node};
        List<PartitionInfo> infos = new ArrayList<>(topics * group.perTopic);
        List<String> names = new ArrayList<>(topics);
        for (int t = 0; t < topics; t++) {
            names.add(topic(t));
            for (int p = 0; p < group.perTopic; p++) {
                infos.add(new PartitionInfo(topic(t), p, node, replicas, replicas));
            }
        }
        group.cluster = new Cluster("bench-cluster", List.of(node), infos, new HashSet<>(), new HashSet<>());
        JsonNode previousKey = request.get("previous");
        Map<String, List<TopicPartition>> previous =
            previousKey == null || previousKey.isNull() ? null : GROUPS.get(previousKey.asText()).last;
        Map<String, ConsumerPartitionAssignor.Subscription> subscriptions = new LinkedHashMap<>();
        for (JsonNode member : request.get("members")) {
            String memberId = member.get(0).asText();
            List<TopicPartition> owned = previous == null ? List.of() : previous.getOrDefault(memberId, List.of());
            int generation = previous == null ? -1 : 1;
            ByteBuffer userData = null;
            if (previous != null) {
                // The userData this member's own assignor writes after being given ``owned``.
                ConsumerPartitionAssignor own = assignor(group.assignor);
                own.onAssignment(
                    new ConsumerPartitionAssignor.Assignment(owned),
                    new ConsumerGroupMetadata("bench-group", generation, memberId, Optional.empty()));
                userData = own.subscriptionUserData(new HashSet<>(names));
            }
            ConsumerPartitionAssignor.Subscription subscription = new ConsumerPartitionAssignor.Subscription(
                names, userData, owned, generation, Optional.empty());
            subscription.setGroupInstanceId(Optional.of(member.get(1).asText()));
            subscriptions.put(memberId, subscription);
        }
        group.subscription = new ConsumerPartitionAssignor.GroupSubscription(subscriptions);
        GROUPS.put(request.get("key").asText(), group);
    }

    /** The subscriptions as a JoinGroup would give them: userData buffers unread (assign reads them). */
    private static ConsumerPartitionAssignor.GroupSubscription fresh(ConsumerPartitionAssignor.GroupSubscription group) {
        Map<String, ConsumerPartitionAssignor.Subscription> copies = new LinkedHashMap<>();
        for (Map.Entry<String, ConsumerPartitionAssignor.Subscription> entry : group.groupSubscription().entrySet()) {
            ConsumerPartitionAssignor.Subscription s = entry.getValue();
            ConsumerPartitionAssignor.Subscription copy = new ConsumerPartitionAssignor.Subscription(
                s.topics(), s.userData() == null ? null : s.userData().duplicate(), s.ownedPartitions(),
                s.generationId().orElse(-1), s.rackId());
            copy.setGroupInstanceId(s.groupInstanceId());
            copies.put(entry.getKey(), copy);
        }
        return new ConsumerPartitionAssignor.GroupSubscription(copies);
    }

    private static long run(JsonNode request) {
        Group group = GROUPS.get(request.get("key").asText());
        ConsumerPartitionAssignor assignor = assignor(group.assignor);
        ConsumerPartitionAssignor.GroupSubscription subscription = fresh(group.subscription);
        long start = System.nanoTime();
        ConsumerPartitionAssignor.GroupAssignment assignment = assignor.assign(group.cluster, subscription);
        long elapsed = System.nanoTime() - start;
        Map<String, List<TopicPartition>> last = new HashMap<>();
        for (Map.Entry<String, ConsumerPartitionAssignor.Assignment> entry : assignment.groupAssignment().entrySet()) {
            last.put(entry.getKey(), entry.getValue().partitions());
        }
        group.last = last;
        return elapsed;
    }

    private static ObjectNode result(JsonNode request) {
        Group group = GROUPS.get(request.get("key").asText());
        ObjectNode byMember = JsonNodeFactory.instance.objectNode();
        for (Map.Entry<String, List<TopicPartition>> entry : group.last.entrySet()) {
            ByteBuffer ids = ByteBuffer.allocate(4 * entry.getValue().size());
            for (TopicPartition tp : entry.getValue()) {
                int topicIndex = Integer.parseInt(tp.topic().substring("topic-".length()));
                ids.putInt(topicIndex * group.perTopic + tp.partition());
            }
            byMember.put(entry.getKey(), Base64.getEncoder().encodeToString(ids.array()));
        }
        return byMember;
    }

    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        OUT.println("{\"ready\":true,\"java\":\"" + System.getProperty("java.version") + "\"}");
        String line;
        while ((line = in.readLine()) != null) {
            ObjectNode answer = JsonNodeFactory.instance.objectNode();
            try {
                JsonNode request = mapper.readTree(line);
                String op = request.get("op").asText();
                switch (op) {
                    case "setup":
                        setup(request);
                        break;
                    case "run":
                        answer.put("elapsedNanos", run(request));
                        break;
                    case "result":
                        answer.set("assignment", result(request));
                        break;
                    case "drop":
                        GROUPS.remove(request.get("key").asText());
                        break;
                    case "gc":
                        System.gc();
                        break;
                    default:
                        throw new IllegalArgumentException("unknown op " + op);
                }
                answer.put("ok", true);
            } catch (RuntimeException error) {
                answer.put("ok", false);
                answer.put("error", String.valueOf(error));
            }
            OUT.println(mapper.writeValueAsString(answer));
        }
    }
}
