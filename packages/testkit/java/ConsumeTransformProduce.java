/*
 * A consume-transform-produce loop for integration tests, built on Apache Kafka's own Java clients: a
 * read_committed consumer in a group reads an input topic, and a transactional producer writes one output
 * record per input record ("<value>-out", to the same partition number of the output topic) and commits the
 * consumer's offsets in the same transaction with sendOffsetsToTransaction(offsets, groupMetadata()).
 *
 * Transactions are cut the same way on every cluster, whatever the fetches return: each covers the next
 * <chunk> input records of one partition (fewer at the partition's end, the end offset the consumer saw at
 * the start), and every <abort every>-th transaction of a partition is aborted on purpose, after its
 * records were acknowledged; the partition is then rewound to the transaction's first input offset and
 * the same records go into the next transaction. So per partition the committed and the aborted output
 * are the same on every cluster. The last transaction of a partition commits the partition's end offset,
 * so the group ends with no lag.
 *
 * Output, one line each:
 *   ready                               initTransactions() returned and the group assigned every partition
 *   committed <partition> <records>     a transaction was committed
 *   aborted <partition> <records>       a transaction was aborted on purpose
 *   done <commits> <aborts>             every input record is in a committed transaction
 *
 * Arguments: <bootstrap> <input topic> <output topic> <partitions> <group.id> <transactional.id> <chunk>
 * <abort every (0: never)> <timeout ms>. Exits 1 at the timeout, with any exception on stderr.
 */
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class ConsumeTransformProduce {
  private ConsumeTransformProduce() {}

  private static void say(String line) {
    System.out.println(line);
    System.out.flush();
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 9) {
      System.err.println(
          "usage: ConsumeTransformProduce <bootstrap> <input> <output> <partitions> <group.id> <transactional.id> <chunk> <abort every> <timeout ms>");
      System.exit(2);
    }
    String bootstrap = args[0];
    String input = args[1];
    String output = args[2];
    int partitions = Integer.parseInt(args[3]);
    String groupId = args[4];
    String transactionalId = args[5];
    int chunk = Integer.parseInt(args[6]);
    int abortEvery = Integer.parseInt(args[7]);
    long deadline = System.currentTimeMillis() + Long.parseLong(args[8]);

    Properties cp = new Properties();
    cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    cp.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
    cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    Properties pp = new Properties();
    pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
    pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    pp.put(ProducerConfig.LINGER_MS_CONFIG, "5");

    List<TopicPartition> tps = new ArrayList<>();
    for (int p = 0; p < partitions; p++) tps.add(new TopicPartition(input, p));
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp);
        KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
      producer.initTransactions();
      consumer.subscribe(Collections.singletonList(input));
      // The polls that wait for the assignment may already return records; they are kept.
      List<ConsumerRecord<String, String>> early = new ArrayList<>();
      while (consumer.assignment().size() < partitions) {
        if (System.currentTimeMillis() > deadline) fail("the group did not assign every partition");
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) early.add(r);
      }
      // Where each partition ends for a read_committed reader (its last stable offset), and where the
      // group's committed offsets (or the beginning) put the consumer.
      Map<TopicPartition, Long> ends = consumer.endOffsets(tps);
      Map<TopicPartition, Long> next = new HashMap<>();
      Map<TopicPartition, ArrayDeque<ConsumerRecord<String, String>>> buffered = new HashMap<>();
      for (TopicPartition tp : tps) buffered.put(tp, new ArrayDeque<>());
      for (ConsumerRecord<String, String> r : early) {
        TopicPartition tp = new TopicPartition(r.topic(), r.partition());
        if (r.offset() < ends.get(tp)) buffered.get(tp).add(r);
      }
      for (TopicPartition tp : tps) {
        ConsumerRecord<String, String> first = buffered.get(tp).peek();
        next.put(tp, first == null ? consumer.position(tp) : first.offset());
      }
      System.err.println("assigned " + consumer.assignment() + ", from " + next + " to " + ends);
      say("ready");
      Map<TopicPartition, Integer> txnsOf = new HashMap<>();
      int commits = 0;
      int aborts = 0;
      while (true) {
        boolean finished = true;
        for (TopicPartition tp : tps)
          if (!buffered.get(tp).isEmpty() || consumer.position(tp) < ends.get(tp)) finished = false;
        if (finished) break;
        if (System.currentTimeMillis() > deadline) fail("input not processed: committed " + next + ", ends " + ends);
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
          TopicPartition tp = new TopicPartition(r.topic(), r.partition());
          if (r.offset() < ends.get(tp)) buffered.get(tp).add(r);
        }
        for (TopicPartition tp : tps) {
          ArrayDeque<ConsumerRecord<String, String>> queue = buffered.get(tp);
          // A full chunk, or the partition's last records (the consumer reached its end offset).
          boolean atEnd = consumer.position(tp) >= ends.get(tp);
          if (queue.isEmpty() || (queue.size() < chunk && !atEnd)) continue;
          List<ConsumerRecord<String, String>> records = new ArrayList<>();
          while (records.size() < chunk && !queue.isEmpty()) records.add(queue.poll());
          int txn = txnsOf.merge(tp, 1, Integer::sum);
          boolean abort = abortEvery > 0 && txn % abortEvery == 0;
          producer.beginTransaction();
          List<Future<RecordMetadata>> acks = new ArrayList<>();
          for (ConsumerRecord<String, String> r : records)
            acks.add(producer.send(new ProducerRecord<>(output, r.partition(), r.key(), r.value() + "-out")));
          // The last transaction of a partition commits its end offset, past any trailing marker.
          long after = atEnd && queue.isEmpty() ? ends.get(tp) : records.get(records.size() - 1).offset() + 1;
          producer.sendOffsetsToTransaction(
              Collections.singletonMap(tp, new OffsetAndMetadata(after)), consumer.groupMetadata());
          if (abort) {
            producer.flush();
            for (Future<RecordMetadata> ack : acks) ack.get();
            producer.abortTransaction();
            // The aborted records are read again from the transaction's first input offset.
            long first = records.get(0).offset();
            queue.clear();
            consumer.seek(tp, first);
            aborts++;
            say("aborted " + tp.partition() + " " + records.size());
          } else {
            producer.commitTransaction();
            next.put(tp, after);
            commits++;
            say("committed " + tp.partition() + " " + records.size());
          }
        }
      }
      say("done " + commits + " " + aborts);
    }
  }

  private static void fail(String why) {
    System.err.println(why);
    System.exit(1);
  }
}
