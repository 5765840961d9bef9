// Records through Kafka Connect's own JsonConverter (schemas.enable=true), as a
// Connect source connector's worker writes them, for test/t/52-connect-json.t.
//   java -cp "$CONNECT_LIBS/*" ConnectProduce.java BROKERS TOPIC FIRST COUNT DECIMAL_FORMAT EVOLVED
// Record i (FIRST <= i < FIRST + COUNT): id i, name "n<i>", price i/100 (Decimal, scale 2),
// born day i % 20000, seen i * 1000 ms, at_time (i % 86400) s, raw the bytes of "r<i>",
// tags ["t<i>", null], doc {a: i} (null when i % 7 == 0); EVOLVED adds an optional field
// note "v2-<i>". DECIMAL_FORMAT: BASE64 (the default) or NUMERIC.
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Date;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.connect.data.Decimal;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Time;
import org.apache.kafka.connect.data.Timestamp;
import org.apache.kafka.connect.json.JsonConverter;

public class ConnectProduce {
    public static void main(String[] args) throws Exception {
        String brokers = args[0], topic = args[1];
        long first = Long.parseLong(args[2]), count = Long.parseLong(args[3]);
        String decimalFormat = args[4];
        boolean evolved = Boolean.parseBoolean(args[5]);

        Schema doc = SchemaBuilder.struct().name("shop.Doc").optional()
            .field("a", Schema.OPTIONAL_INT64_SCHEMA).build();
        SchemaBuilder b = SchemaBuilder.struct().name("shop.Order")
            .field("id", Schema.INT64_SCHEMA)
            .field("name", Schema.OPTIONAL_STRING_SCHEMA)
            .field("price", Decimal.builder(2).optional().build())
            .field("born", org.apache.kafka.connect.data.Date.builder().optional().build())
            .field("seen", Timestamp.builder().optional().build())
            .field("at_time", Time.builder().optional().build())
            .field("raw", Schema.OPTIONAL_BYTES_SCHEMA)
            .field("tags", SchemaBuilder.array(Schema.OPTIONAL_STRING_SCHEMA).optional().build())
            .field("doc", doc);
        if (evolved)
            b.field("note", Schema.OPTIONAL_STRING_SCHEMA);
        Schema schema = b.build();

        JsonConverter converter = new JsonConverter();
        converter.configure(Map.of("schemas.enable", "true", "decimal.format", decimalFormat), false);

        Properties p = new Properties();
        p.put("bootstrap.servers", brokers);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("linger.ms", "5");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (long i = first; i < first + count; i++) {
                Struct s = new Struct(schema)
                    .put("id", i)
                    .put("name", "n" + i)
                    .put("price", BigDecimal.valueOf(i, 2))
                    .put("born", new Date((i % 20000) * 86400000L))
                    .put("seen", new Date(i * 1000L))
                    .put("at_time", new Date((i % 86400) * 1000L))
                    .put("raw", ("r" + i).getBytes(StandardCharsets.UTF_8))
                    .put("tags", Arrays.asList("t" + i, null))
                    .put("doc", i % 7 == 0 ? null : new Struct(doc).put("a", i));
                if (evolved)
                    s.put("note", "v2-" + i);
                byte[] value = converter.fromConnectData(topic, schema, s);
                producer.send(new ProducerRecord<>(topic, value));
            }
            producer.flush();
        }
    }
}
