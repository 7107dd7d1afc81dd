package io.staticconsumer.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
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
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.types.RawTaggedField;

/**
 * One JSON request per stdin line, one JSON answer per stdout line. Everything it says about bytes or
 * assignments comes from kafka-clients itself, so Python tests can hold our code to Java's behaviour.
 * See docs/java-oracle.md for the protocol.
 */
public final class Oracle {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String MESSAGE_PACKAGE = "org.apache.kafka.common.message.";
    private static final Map<String, ApiKeys> APIS = new LinkedHashMap<>();

    static {
        for (ApiKeys key : ApiKeys.values()) {
            APIS.put(camel(key.name()), key);
        }
    }

    private Oracle() {}

    public static void main(String[] args) throws Exception {
        // Answers go to a private stream so that nothing a library prints can corrupt the pipe.
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        out.println("{\"ready\":true,\"kafkaVersion\":\"" + org.apache.kafka.common.utils.AppInfoParser.getVersion() + "\"}");
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode answer = JsonNodeFactory.instance.objectNode();
            JsonNode request = null;
            try {
                request = JSON.readTree(line);
                answer.set("id", request.get("id"));
                answer.set("result", handle(request));
                answer.put("ok", true);
            } catch (Throwable t) {
                Throwable cause = t instanceof InvocationTargetException && t.getCause() != null ? t.getCause() : t;
                answer.put("ok", false);
                answer.put("error", cause.getClass().getSimpleName() + ": " + cause.getMessage());
            }
            out.println(JSON.writeValueAsString(answer));
        }
    }

    private static JsonNode handle(JsonNode request) throws Exception {
        String op = request.get("op").asText();
        switch (op) {
            case "encode":
                return encode(request);
            case "decode":
                return decode(request);
            case "apiVersions":
                return apiVersions();
            case "assign":
                return assign(request);
            case "subscriptionUserData":
                return subscriptionUserData(request);
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    // ---- messages -------------------------------------------------------------------------------

    /** JOIN_GROUP -> JoinGroup, the names our Python side uses. */
    private static String camel(String enumName) {
        StringBuilder sb = new StringBuilder();
        for (String part : enumName.toLowerCase().split("_")) {
            sb.append(Character.toUpperCase(part.charAt(0))).append(part.substring(1));
        }
        return sb.toString();
    }

    private static String dataClassName(String api, String kind) {
        switch (kind) {
            case "request":
                return api + "RequestData";
            case "response":
                return api + "ResponseData";
            case "payload":
                return api;
            default:
                throw new IllegalArgumentException("kind must be request, response or payload, not " + kind);
        }
    }

    private static Class<?> dataClass(String api, String kind) throws ClassNotFoundException {
        return Class.forName(MESSAGE_PACKAGE + dataClassName(api, kind));
    }

    private static Class<?> converterClass(String api, String kind) throws ClassNotFoundException {
        return Class.forName(MESSAGE_PACKAGE + dataClassName(api, kind) + "JsonConverter");
    }

    private static Message fromJson(String api, String kind, short version, JsonNode fields) throws Exception {
        Method read = converterClass(api, kind).getMethod("read", JsonNode.class, short.class);
        ObjectNode copy = fields == null ? JsonNodeFactory.instance.objectNode() : ((ObjectNode) fields).deepCopy();
        JsonNode unknown = copy.remove("_unknownTaggedFields");
        // Top-level fields left out take the message's defaults, as a freshly built Java object has them.
        Method write = converterClass(api, kind).getMethod("write", dataClass(api, kind), short.class);
        ObjectNode merged = (ObjectNode) write.invoke(null, dataClass(api, kind).getConstructor().newInstance(), version);
        merged.setAll(copy);
        Message message = (Message) read.invoke(null, merged, version);
        if (unknown != null) {
            for (JsonNode field : unknown) {
                message.unknownTaggedFields().add(
                    new RawTaggedField(field.get("tag").asInt(), Base64.getDecoder().decode(field.get("data").asText())));
            }
        }
        return message;
    }

    private static JsonNode toJson(String api, String kind, short version, Message message) throws Exception {
        Method write = converterClass(api, kind).getMethod("write", dataClass(api, kind), short.class);
        ObjectNode node = (ObjectNode) write.invoke(null, message, version);
        List<RawTaggedField> unknown = message.unknownTaggedFields();
        if (unknown != null && !unknown.isEmpty()) {
            ArrayNode arr = node.putArray("_unknownTaggedFields");
            for (RawTaggedField field : unknown) {
                ObjectNode f = arr.addObject();
                f.put("tag", field.tag());
                f.put("data", Base64.getEncoder().encodeToString(field.data()));
            }
        }
        return node;
    }

    private static byte[] serialize(Message message, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = message.size(cache, version);
        ByteBuffer buffer = ByteBuffer.allocate(size);
        message.write(new ByteBufferAccessor(buffer), cache, version);
        return buffer.array();
    }

    private static ApiKeys apiKey(String api) {
        ApiKeys key = APIS.get(api);
        if (key == null) {
            throw new IllegalArgumentException("unknown api " + api);
        }
        return key;
    }

    private static JsonNode encode(JsonNode request) throws Exception {
        String api = request.get("api").asText();
        String kind = request.get("kind").asText();
        short version = (short) request.get("version").asInt();
        Message message = fromJson(api, kind, version, request.get("fields"));
        ObjectNode result = JsonNodeFactory.instance.objectNode();
        if (kind.equals("payload")) {
            result.put("body", hex(MessageUtil.toVersionPrefixedBytes(version, message)));
            return result;
        }
        byte[] body = serialize(message, version);
        result.put("body", hex(body));
        ApiKeys key = apiKey(api);
        int correlationId = request.has("correlationId") ? request.get("correlationId").asInt() : 1;
        byte[] header;
        if (kind.equals("request")) {
            RequestHeaderData headerData = new RequestHeaderData()
                .setRequestApiKey(key.id)
                .setRequestApiVersion(version)
                .setCorrelationId(correlationId)
                .setClientId(request.has("clientId") && !request.get("clientId").isNull()
                    ? request.get("clientId").asText() : null);
            header = serialize(headerData, key.requestHeaderVersion(version));
        } else {
            header = serialize(new ResponseHeaderData().setCorrelationId(correlationId), key.responseHeaderVersion(version));
        }
        byte[] full = new byte[header.length + body.length];
        System.arraycopy(header, 0, full, 0, header.length);
        System.arraycopy(body, 0, full, header.length, body.length);
        result.put("withHeader", hex(full));
        return result;
    }

    private static JsonNode decode(JsonNode request) throws Exception {
        String api = request.get("api").asText();
        String kind = request.get("kind").asText();
        short version = (short) request.get("version").asInt();
        ByteBuffer buffer = ByteBuffer.wrap(unhex(request.get("hex").asText()));
        Message message;
        if (kind.equals("payload")) {
            short prefixed = buffer.getShort();
            version = prefixed;
            message = (Message) dataClass(api, kind).getConstructor().newInstance();
        } else {
            ApiMessageType type = ApiMessageType.fromApiKey(apiKey(api).id);
            message = kind.equals("request") ? type.newRequest() : type.newResponse();
        }
        message.read(new ByteBufferAccessor(buffer), version);
        if (buffer.hasRemaining()) {
            throw new IllegalArgumentException(buffer.remaining() + " bytes left over after " + api + " v" + version);
        }
        ObjectNode result = JsonNodeFactory.instance.objectNode();
        result.put("version", version);
        result.set("fields", toJson(api, kind, version, message));
        return result;
    }

    private static JsonNode apiVersions() {
        ObjectNode result = JsonNodeFactory.instance.objectNode();
        for (Map.Entry<String, ApiKeys> entry : APIS.entrySet()) {
            ArrayNode range = result.putArray(entry.getKey());
            range.add(entry.getValue().oldestVersion());
            range.add(entry.getValue().latestVersion());
        }
        return result;
    }

    // ---- assignors ------------------------------------------------------------------------------

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

    private static List<TopicPartition> partitions(JsonNode pairs) {
        List<TopicPartition> result = new ArrayList<>();
        if (pairs != null) {
            for (JsonNode pair : pairs) {
                result.add(new TopicPartition(pair.get(0).asText(), pair.get(1).asInt()));
            }
        }
        return result;
    }

    private static String textOrNull(JsonNode node, String field) {
        JsonNode value = node.get(field);
        return value == null || value.isNull() ? null : value.asText();
    }

    /** Cluster metadata as a Java consumer would see it: one node per rack, replicas on their racks. */
    private static Cluster cluster(JsonNode topics) {
        Map<String, Node> nodesByRack = new LinkedHashMap<>();
        Node rackless = new Node(0, "broker-0", 9092, null);
        List<PartitionInfo> infos = new ArrayList<>();
        Iterator<Map.Entry<String, JsonNode>> it = topics.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> topic = it.next();
            for (JsonNode partition : topic.getValue()) {
                List<Node> replicas = new ArrayList<>();
                JsonNode racks = partition.get("racks");
                if (racks != null) {
                    for (JsonNode rack : racks) {
                        String name = rack.asText();
                        replicas.add(nodesByRack.computeIfAbsent(
                            name, r -> new Node(nodesByRack.size() + 1, "broker-" + r, 9092, r)));
                    }
                }
                if (replicas.isEmpty()) {
                    replicas.add(rackless);
                }
                Node[] array = replicas.toArray(new Node[0]);
                infos.add(new PartitionInfo(topic.getKey(), partition.get("partition").asInt(), array[0], array, array));
            }
        }
        List<Node> nodes = new ArrayList<>(nodesByRack.values());
        nodes.add(rackless);
        return new Cluster("oracle-cluster", nodes, infos, new HashSet<>(), new HashSet<>());
    }

    private static JsonNode assign(JsonNode request) {
        ConsumerPartitionAssignor assignor = assignor(request.get("assignor").asText());
        Map<String, ConsumerPartitionAssignor.Subscription> subscriptions = new LinkedHashMap<>();
        for (JsonNode member : request.get("members")) {
            List<String> topics = new ArrayList<>();
            for (JsonNode topic : member.get("topics")) {
                topics.add(topic.asText());
            }
            String userData = textOrNull(member, "userData");
            ConsumerPartitionAssignor.Subscription subscription = new ConsumerPartitionAssignor.Subscription(
                topics,
                userData == null ? null : ByteBuffer.wrap(Base64.getDecoder().decode(userData)),
                partitions(member.get("ownedPartitions")),
                member.has("generation") ? member.get("generation").asInt() : -1,
                Optional.ofNullable(textOrNull(member, "rackId")));
            subscription.setGroupInstanceId(Optional.ofNullable(textOrNull(member, "groupInstanceId")));
            subscriptions.put(member.get("memberId").asText(), subscription);
        }
        Cluster cluster = cluster(request.get("topics"));
        long start = System.nanoTime();
        ConsumerPartitionAssignor.GroupAssignment assignment =
            assignor.assign(cluster, new ConsumerPartitionAssignor.GroupSubscription(subscriptions));
        long elapsed = System.nanoTime() - start;
        ObjectNode result = JsonNodeFactory.instance.objectNode();
        ObjectNode byMember = result.putObject("assignment");
        for (Map.Entry<String, ConsumerPartitionAssignor.Assignment> entry : assignment.groupAssignment().entrySet()) {
            ObjectNode node = byMember.putObject(entry.getKey());
            ArrayNode parts = node.putArray("partitions");
            for (TopicPartition tp : entry.getValue().partitions()) {
                parts.addArray().add(tp.topic()).add(tp.partition());
            }
            ByteBuffer userData = entry.getValue().userData();
            node.put("userData", userData == null ? null : Base64.getEncoder().encodeToString(bytes(userData)));
        }
        result.put("elapsedNanos", elapsed);
        return result;
    }

    private static JsonNode subscriptionUserData(JsonNode request) {
        ConsumerPartitionAssignor assignor = assignor(request.get("assignor").asText());
        Set<String> topics = new HashSet<>();
        for (JsonNode topic : request.get("topics")) {
            topics.add(topic.asText());
        }
        int generation = request.get("generation").asInt();
        assignor.onAssignment(
            new ConsumerPartitionAssignor.Assignment(partitions(request.get("assigned"))),
            new ConsumerGroupMetadata("oracle-group", generation, "oracle-member", Optional.empty()));
        ByteBuffer userData = assignor.subscriptionUserData(topics);
        ObjectNode result = JsonNodeFactory.instance.objectNode();
        result.put("userData", userData == null ? null : Base64.getEncoder().encodeToString(bytes(userData)));
        return result;
    }

    // ---- helpers --------------------------------------------------------------------------------

    private static byte[] bytes(ByteBuffer buffer) {
        ByteBuffer copy = buffer.duplicate();
        byte[] out = new byte[copy.remaining()];
        copy.get(out);
        return out;
    }

    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private static String hex(byte[] data) {
        char[] out = new char[data.length * 2];
        for (int i = 0; i < data.length; i++) {
            out[2 * i] = HEX[(data[i] >> 4) & 0xf];
            out[2 * i + 1] = HEX[data[i] & 0xf];
        }
        return new String(out);
    }

    private static byte[] unhex(String text) {
        byte[] out = new byte[text.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(text.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }
}
