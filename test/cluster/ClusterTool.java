/*
 * ClusterTool: the Java side of the 3-broker test cluster (test/cluster.sh),
 * built with javac against the kafka-clients jar of the broker's own version.
 *
 *   produce BOOTSTRAP TOPIC DIR [--txn-size N] [--interval-ms MS] [--abort-every K]
 *       A transactional producer (transactional.id eoingest-cluster-<topic>)
 *       writing until DIR/stop exists.  Record seq goes to partition
 *       seq % partitions as the CSV value "s<seq>,<seq>,<flag>": flag 1 in
 *       transactions it means to commit, -1 in every K-th, which it aborts.
 *       Whether a commit that failed with the brokers went through is for a
 *       read_committed consumer to say; a seq is never written twice.
 *       While DIR/pause exists it stops after a committed transaction and
 *       writes DIR/paused; progress lines go to DIR/progress.
 *   create-topic BOOTSTRAP TOPIC P   P partitions, replication factor 3,
 *                               min.insync.replicas 2
 *   quorum-leader BOOTSTRAP     the node id of the active KRaft controller
 *   leader BOOTSTRAP TOPIC P    the node id of the partition's leader
 */
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringSerializer;

public final class ClusterTool {
    private ClusterTool() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            usage();
        }
        switch (args[0]) {
            case "produce" -> produce(args);
            case "quorum-leader" -> quorumLeader(args[1]);
            case "create-topic" -> {
                if (args.length != 4) {
                    usage();
                }
                createTopic(args[1], args[2], Integer.parseInt(args[3]));
            }
            case "leader" -> {
                if (args.length != 4) {
                    usage();
                }
                leader(args[1], args[2], Integer.parseInt(args[3]));
            }
            default -> usage();
        }
    }

    private static void usage() {
        System.err.println("usage: ClusterTool produce BOOTSTRAP TOPIC DIR [--txn-size N] [--interval-ms MS] [--abort-every K]"
                + " | create-topic BOOTSTRAP TOPIC PARTITIONS | quorum-leader BOOTSTRAP | leader BOOTSTRAP TOPIC PARTITION");
        System.exit(2);
    }

    private static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
        return Admin.create(p);
    }

    private static void createTopic(String bootstrap, String topic, int partitions) throws Exception {
        try (Admin a = admin(bootstrap)) {
            NewTopic t = new NewTopic(topic, partitions, (short) 3).configs(Map.of("min.insync.replicas", "2"));
            a.createTopics(List.of(t)).all().get(30, TimeUnit.SECONDS);
        }
    }

    private static void quorumLeader(String bootstrap) throws Exception {
        try (Admin a = admin(bootstrap)) {
            System.out.println(a.describeMetadataQuorum().quorumInfo().get(10, TimeUnit.SECONDS).leaderId());
        }
    }

    private static void leader(String bootstrap, String topic, int partition) throws Exception {
        try (Admin a = admin(bootstrap)) {
            TopicDescription d = a.describeTopics(List.of(topic)).allTopicNames().get(10, TimeUnit.SECONDS).get(topic);
            var info = d.partitions().get(partition);
            System.out.println(info.leader() == null ? -1 : info.leader().id());
        }
    }

    private static KafkaProducer<String, String> newProducer(String bootstrap, String topic) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "eoingest-cluster-" + topic);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "30000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        KafkaProducer<String, String> producer = new KafkaProducer<>(p);
        producer.initTransactions();
        return producer;
    }

    private static void progress(Path dir, String line) throws Exception {
        Path tmp = dir.resolve("progress.tmp");
        Files.writeString(tmp, line + "\n");
        Files.move(tmp, dir.resolve("progress"), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    private static void produce(String[] args) throws Exception {
        if (args.length < 4) {
            usage();
        }
        String bootstrap = args[1];
        String topic = args[2];
        Path dir = Path.of(args[3]);
        int txnSize = 100;
        long intervalMs = 50;
        int abortEvery = 7;
        for (int i = 4; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--txn-size" -> txnSize = Integer.parseInt(args[i + 1]);
                case "--interval-ms" -> intervalMs = Long.parseLong(args[i + 1]);
                case "--abort-every" -> abortEvery = Integer.parseInt(args[i + 1]);
                default -> usage();
            }
        }

        int partitions;
        try (Admin a = admin(bootstrap)) {
            partitions = a.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS)
                    .get(topic).partitions().size();
        }

        long seq = 0;
        long txns = 0, committed = 0, aborted = 0, failed = 0;
        KafkaProducer<String, String> producer = null;
        boolean lastCommitted = false;
        while (!Files.exists(dir.resolve("stop"))) {
            /* Pause only after a commit, so that every partition ends in a commit marker. */
            if (lastCommitted && Files.exists(dir.resolve("pause"))) {
                if (!Files.exists(dir.resolve("paused"))) {
                    Files.writeString(dir.resolve("paused"), seq + "\n");
                }
                Thread.sleep(50);
                continue;
            }
            Files.deleteIfExists(dir.resolve("paused"));
            try {
                if (producer == null) {
                    producer = newProducer(bootstrap, topic);
                }
                boolean abort = abortEvery > 0 && (txns + 1) % abortEvery == 0
                        && !Files.exists(dir.resolve("pause"));
                lastCommitted = false;
                long first = seq;
                producer.beginTransaction();
                txns++;
                for (int i = 0; i < txnSize; i++, seq++) {
                    producer.send(new ProducerRecord<>(topic, (int) (seq % partitions), null,
                            "s" + seq + "," + seq + "," + (abort ? "-1" : "1")));
                }
                if (abort) {
                    producer.abortTransaction();
                    aborted++;
                } else {
                    producer.commitTransaction();
                    committed++;
                    lastCommitted = true;
                }
                progress(dir, "seq " + seq + " txns " + txns + " committed " + committed + " aborted " + aborted
                        + " failed " + failed + " last " + first + "-" + (seq - 1));
            } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException e) {
                /* Fatal for this instance: a new one fences it and aborts what was open. */
                failed++;
                System.err.println("producer: " + e + "; starting a new producer");
                if (producer != null) {
                    producer.close();
                }
                producer = null;
            } catch (Exception e) {
                /*
                 * The brokers failed under us (a leader killed, a timeout):
                 * the transaction's fate is unknown.  A new producer with the
                 * same transactional.id completes or aborts it in
                 * initTransactions; seqs are never reused either way.
                 */
                failed++;
                System.err.println("producer: " + e + "; starting a new producer");
                if (producer != null) {
                    producer.close(java.time.Duration.ofSeconds(5));
                }
                producer = null;
                Thread.sleep(200);
            }
            if (intervalMs > 0) {
                Thread.sleep(intervalMs);
            }
        }
        if (producer != null) {
            producer.close();
        }
        progress(dir, "seq " + seq + " txns " + txns + " committed " + committed + " aborted " + aborted
                + " failed " + failed + " stopped");
    }
}
