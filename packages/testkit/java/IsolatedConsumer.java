/*
 * A one-shot consumer for integration tests, built on Apache Kafka's own Java client: it assigns every
 * partition of a topic (no group), reads from the beginning up to the end offsets the broker reports for
 * the chosen isolation level (the LSO for read_committed, the high watermark for read_uncommitted), and
 * prints what it read:
 *
 *   record <partition> <offset> <value>     one line per record, in partition then offset order
 *   end <partition> <end offset>            one line per partition, after its records
 *
 * Arguments: <bootstrap> <topic> <partitions> <read_committed|read_uncommitted> <timeout ms>.
 * Exits 1 if the end offsets are not reached within the timeout.
 */
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public final class IsolatedConsumer {
  private IsolatedConsumer() {}

  public static void main(String[] args) {
    if (args.length != 5) {
      System.err.println("usage: IsolatedConsumer <bootstrap> <topic> <partitions> <isolation.level> <timeout ms>");
      System.exit(2);
    }
    String topic = args[1];
    int partitions = Integer.parseInt(args[2]);
    long deadline = System.currentTimeMillis() + Long.parseLong(args[4]);
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, args[3]);
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    List<TopicPartition> tps = new ArrayList<>();
    for (int p = 0; p < partitions; p++) tps.add(new TopicPartition(topic, p));
    Map<Integer, List<String>> read = new TreeMap<>();
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
      consumer.assign(tps);
      consumer.seekToBeginning(tps);
      Map<TopicPartition, Long> ends = consumer.endOffsets(tps);
      for (TopicPartition tp : tps) read.put(tp.partition(), new ArrayList<>());
      while (!reached(consumer, tps, ends)) {
        if (System.currentTimeMillis() > deadline) {
          System.err.println("end offsets " + ends + " not reached");
          System.exit(1);
        }
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200)))
          read.get(r.partition()).add("record " + r.partition() + " " + r.offset() + " " + r.value());
      }
      StringBuilder out = new StringBuilder();
      for (TopicPartition tp : tps) {
        for (String line : read.get(tp.partition())) out.append(line).append('\n');
        out.append("end ").append(tp.partition()).append(' ').append(ends.get(tp)).append('\n');
      }
      System.out.print(out);
      System.out.flush();
    }
  }

  private static boolean reached(KafkaConsumer<String, String> consumer, List<TopicPartition> tps, Map<TopicPartition, Long> ends) {
    for (TopicPartition tp : tps) if (consumer.position(tp) < ends.get(tp)) return false;
    return true;
  }
}
