package meerkat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.activemq.artemis.api.core.QueueConfiguration;
import org.apache.activemq.artemis.api.core.RoutingType;
import org.apache.activemq.artemis.api.core.client.ActiveMQClient;
import org.apache.activemq.artemis.api.core.client.ClientConsumer;
import org.apache.activemq.artemis.api.core.client.ClientMessage;
import org.apache.activemq.artemis.api.core.client.ClientProducer;
import org.apache.activemq.artemis.api.core.client.ClientSession;
import org.apache.activemq.artemis.api.core.client.ClientSessionFactory;
import org.apache.activemq.artemis.api.core.client.ServerLocator;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The producer/consumer job of `meerkat bench queue-vs-brokers` (thesis Fig. 5.7) against a
 * broker: producers send MESSAGES messages of SIZE bytes in all, each send waiting for its
 * acknowledgement; consumers take them until all are consumed, acknowledging what they took
 * before taking more. Prints one JSON line with the job's wall time and latencies.
 *
 * <pre>QueueJob kafka|artemis ENDPOINT MESSAGES PRODUCERS CONSUMERS SIZE DEADLINE_SECONDS</pre>
 *
 * A job not done within DEADLINE_SECONDS (set-up included) fails: it prints how far it got and
 * where each client thread stands, and exits 1. Client threads are daemons and every ending
 * goes through System.exit, so no stuck client can keep the JVM alive.
 *
 * Kafka (ENDPOINT: bootstrap servers): a topic with one partition per consumer, replication
 * factor 3, min.insync.replicas=2; producers with acks=all and idempotence; consumers in one
 * group, committing their offsets synchronously after each poll. The clock starts once every
 * consumer has its partitions, as the znode job's starts once every session is open.
 *
 * Artemis (ENDPOINT: a core connector URL listing the live and the backup broker): durable
 * messages on an anycast queue, sends blocking until the live broker has them in its journal
 * and its backup's (blockOnDurableSend), acknowledgements blocking too (blockOnAcknowledge).
 */
public final class QueueJob {
    private static final org.apache.activemq.artemis.api.core.SimpleString ARTEMIS_QUEUE =
            org.apache.activemq.artemis.api.core.SimpleString.toSimpleString("queue");

    public static void main(String[] args) {
        if (args.length != 7 || !(args[0].equals("kafka") || args[0].equals("artemis"))) {
            System.err.println(
                    "usage: QueueJob kafka|artemis ENDPOINT MESSAGES PRODUCERS CONSUMERS SIZE DEADLINE_SECONDS");
            System.exit(2);
        }
        String bootstrap = args[1];
        long messages = Long.parseLong(args[2]);
        int producers = Integer.parseInt(args[3]);
        int consumers = Integer.parseInt(args[4]);
        int size = Integer.parseInt(args[5]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[6]) * 1000;
        QueueJob job = new QueueJob(bootstrap, messages, producers, consumers, size, deadline);
        try {
            if (args[0].equals("kafka")) {
                job.createKafkaTopic();
                job.run(job::produceKafka, job::consumeKafka);
            } else {
                job.run(job::produceArtemis, job::consumeArtemis);
            }
        } catch (Throwable t) {
            System.err.println("the job failed after " + job.claimed.get() + " sends claimed and "
                    + job.taken.get() + " takes of " + messages + ": " + t);
            t.printStackTrace();
            job.printThreads();
            System.exit(1);
        }
        System.exit(0);
    }

    private final String bootstrap;
    private final long messages;
    private final int producers;
    private final int consumers;
    private final byte[] payload;
    private final String topic = "queue-" + System.nanoTime();
    private final AtomicLong claimed = new AtomicLong();
    private final AtomicLong taken = new AtomicLong();
    private final long[] sendMicros;
    private final long[] takeMicros;
    /** When the whole job must be done (System.currentTimeMillis()). */
    private final long deadline;
    private final List<Thread> threads = new ArrayList<>();
    private volatile Throwable failure;

    private QueueJob(String bootstrap, long messages, int producers, int consumers, int size,
            long deadline) {
        this.bootstrap = bootstrap;
        this.deadline = deadline;
        this.messages = messages;
        this.producers = producers;
        this.consumers = consumers;
        this.payload = new byte[size];
        Arrays.fill(payload, (byte) 'm');
        this.sendMicros = new long[(int) messages];
        this.takeMicros = new long[(int) messages];
    }

    private void createKafkaTopic() throws Exception {
        Properties admin = new Properties();
        admin.put("bootstrap.servers", bootstrap);
        try (Admin client = Admin.create(admin)) {
            NewTopic queue = new NewTopic(topic, consumers, (short) 3)
                    .configs(Map.of("min.insync.replicas", "2"));
            // A cluster that just started may not have every broker registered yet: retry.
            while (true) {
                try {
                    client.createTopics(List.of(queue)).all().get(millisLeft(), TimeUnit.MILLISECONDS);
                    break;
                } catch (java.util.concurrent.ExecutionException e) {
                    if (millisLeft() <= 1) {
                        throw e;
                    }
                    Thread.sleep(500);
                }
            }
        }
    }

    private interface Producing {
        void run(CountDownLatch start) throws Exception;
    }

    private interface Consuming {
        void run(CountDownLatch assigned, CountDownLatch start) throws Exception;
    }

    private void run(Producing produce, Consuming consume) throws Exception {
        CountDownLatch assigned = new CountDownLatch(consumers);
        CountDownLatch start = new CountDownLatch(1);
        for (int c = 0; c < consumers; c++) {
            threads.add(thread("consumer-" + c, () -> consume.run(assigned, start)));
        }
        for (int p = 0; p < producers; p++) {
            threads.add(thread("producer-" + p, () -> produce.run(start)));
        }
        threads.forEach(Thread::start);
        if (!assigned.await(millisLeft(), TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException(
                    (consumers - assigned.getCount()) + " of " + consumers + " consumers got partitions in time");
        }
        long begin = System.nanoTime();
        start.countDown();
        for (Thread t : threads) {
            t.join(millisLeft());
            if (t.isAlive()) {
                throw new IllegalStateException(t.getName() + " still running at the job's deadline");
            }
        }
        double seconds = (System.nanoTime() - begin) / 1e9;
        if (failure != null) {
            throw new IllegalStateException("a client failed", failure);
        }
        if (taken.get() < messages) {
            throw new IllegalStateException("only " + taken.get() + " of " + messages + " taken");
        }
        Arrays.sort(sendMicros);
        Arrays.sort(takeMicros);
        System.out.printf(
                "{\"messages\":%d,\"producers\":%d,\"consumers\":%d,\"seconds\":%.6f,"
                        + "\"messages_per_sec\":%.3f,\"send_p50_us\":%d,\"send_p99_us\":%d,"
                        + "\"take_p50_us\":%d,\"take_p99_us\":%d}%n",
                messages, producers, consumers, seconds, messages / seconds,
                quantile(sendMicros, 0.5), quantile(sendMicros, 0.99),
                quantile(takeMicros, 0.5), quantile(takeMicros, 0.99));
    }

    private void produceKafka(CountDownLatch start) throws Exception {
        Properties config = new Properties();
        config.put("bootstrap.servers", bootstrap);
        config.put("acks", "all");
        config.put("enable.idempotence", "true");
        config.put("linger.ms", "0");
        try (KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer())) {
            start.await();
            long n;
            while ((n = claimed.getAndIncrement()) < messages && failure == null) {
                long sentAt = System.nanoTime();
                // Synchronous: the next send waits for this one's acknowledgement.
                producer.send(new ProducerRecord<>(topic, payload)).get();
                sendMicros[(int) n] = Math.max(1, (System.nanoTime() - sentAt) / 1000);
            }
        }
    }

    private void consumeKafka(CountDownLatch assigned, CountDownLatch start) throws Exception {
        Properties config = new Properties();
        config.put("bootstrap.servers", bootstrap);
        config.put("group.id", topic);
        config.put("auto.offset.reset", "earliest");
        config.put("enable.auto.commit", "false");
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            boolean[] counted = {false};
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {}

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    if (!partitions.isEmpty() && !counted[0]) {
                        counted[0] = true;
                        assigned.countDown();
                    }
                }
            });
            while (taken.get() < messages && failure == null && millisLeft() > 1) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(20));
                if (records.isEmpty()) {
                    continue;
                }
                long polledAt = System.nanoTime();
                // Acknowledged as consumed once the offsets are committed.
                consumer.commitSync();
                long micros = Math.max(1, (System.nanoTime() - polledAt) / 1000);
                for (int i = 0; i < records.count(); i++) {
                    long n = taken.getAndIncrement();
                    if (n < messages) {
                        takeMicros[(int) n] = micros;
                    }
                }
            }
        }
    }

    private ServerLocator artemisLocator() throws Exception {
        ServerLocator locator = ActiveMQClient.createServerLocator(bootstrap);
        locator.setBlockOnDurableSend(true);
        locator.setBlockOnAcknowledge(true);
        // Every acknowledgement goes out at once, and blocks (no batching of acks).
        locator.setAckBatchSize(0);
        return locator;
    }

    private void produceArtemis(CountDownLatch start) throws Exception {
        try (ServerLocator locator = artemisLocator();
                ClientSessionFactory factory = locator.createSessionFactory();
                ClientSession session = factory.createSession(false, true, true)) {
            createArtemisQueue(session);
            ClientProducer producer = session.createProducer(ARTEMIS_QUEUE);
            start.await();
            long n;
            while ((n = claimed.getAndIncrement()) < messages && failure == null) {
                long sentAt = System.nanoTime();
                ClientMessage message = session.createMessage(true);
                message.getBodyBuffer().writeBytes(payload);
                // Durable and blocking: returns once the broker has it in its journal.
                producer.send(message);
                sendMicros[(int) n] = Math.max(1, (System.nanoTime() - sentAt) / 1000);
            }
        }
    }

    private void consumeArtemis(CountDownLatch assigned, CountDownLatch start) throws Exception {
        try (ServerLocator locator = artemisLocator();
                ClientSessionFactory factory = locator.createSessionFactory();
                ClientSession session = factory.createSession(false, true, true)) {
            createArtemisQueue(session);
            ClientConsumer consumer = session.createConsumer(ARTEMIS_QUEUE);
            session.start();
            assigned.countDown();
            start.await();
            while (taken.get() < messages && failure == null && millisLeft() > 1) {
                ClientMessage message = consumer.receive(20);
                if (message == null) {
                    continue;
                }
                long receivedAt = System.nanoTime();
                // Blocking: returns once the broker has recorded the message as consumed.
                message.acknowledge();
                long n = taken.getAndIncrement();
                if (n < messages) {
                    takeMicros[(int) n] = Math.max(1, (System.nanoTime() - receivedAt) / 1000);
                }
            }
        }
    }

    /** Every client declares the durable queue; the first one creates it. */
    private static void createArtemisQueue(ClientSession session) throws Exception {
        if (!session.queueQuery(ARTEMIS_QUEUE).isExists()) {
            try {
                session.createQueue(new QueueConfiguration(ARTEMIS_QUEUE)
                        .setRoutingType(RoutingType.ANYCAST).setDurable(true));
            } catch (org.apache.activemq.artemis.api.core.ActiveMQQueueExistsException raced) {
                // Another client created it first.
            }
        }
    }

    private interface Body {
        void run() throws Exception;
    }

    private Thread thread(String name, Body body) {
        Thread thread = new Thread(() -> {
            try {
                body.run();
            } catch (Throwable t) {
                failure = t;
            }
        }, name);
        // A client stuck in a broker call must not keep the JVM alive past a failed job.
        thread.setDaemon(true);
        return thread;
    }

    /** Milliseconds until the deadline, at least 1 (0 would mean "forever" to join and await). */
    private long millisLeft() {
        return Math.max(1, deadline - System.currentTimeMillis());
    }

    /** Where each client thread stands, for a failed job's report. */
    private void printThreads() {
        for (Thread t : threads) {
            System.err.println("thread " + t.getName() + " " + t.getState());
            for (StackTraceElement frame : t.getStackTrace()) {
                System.err.println("    at " + frame);
            }
        }
    }

    private static long quantile(long[] sorted, double q) {
        return sorted[(int) Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
    }
}
