/*
 * A transactional producer for integration tests, built on Apache Kafka's own Java client. It runs a plan
 * of transactions against one topic and reports each step on stdout, one line per step:
 *
 *   ready                      initTransactions() returned
 *   committed <n>              a transaction of n records was committed
 *   aborted <n>                a transaction of n records was aborted
 *   open <n>                   n records were sent and flushed in a transaction left open
 *   sent <n>                   (idempotent mode) n records were sent and acknowledged
 *   done                       the plan is finished (nothing left open)
 *
 * Arguments: <bootstrap> <topic> <partitions> <transactional.id or "-" for idempotent only> <compression>
 * <value prefix> <plan> [<values file>], where the plan is a comma-separated list of commit:N, abort:N and open:N
 * (open only last), or of send:N for an idempotent producer without transactions. Record i of step s goes to
 * partition i % partitions with the value "<prefix>-<s>-<kind>-<i>", or, with a values file (UTF-8, one value
 * a line), the next line of the file: the plan's records take its lines in order.
 *
 * While a transaction is open it reads commands from stdin: "commit" or "abort" end it (and print the
 * matching line, then "done"), "exit" or the end of stdin halts the JVM without ending it, so the
 * transaction stays open on the broker until its timeout.
 */
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

public final class TransactionalProducer {
  private TransactionalProducer() {}

  private static void say(String line) {
    System.out.println(line);
    System.out.flush();
  }

  /** The values file's lines, or null: the generated values. */
  private static List<String> values;
  /** How many of the values file's lines earlier steps took. */
  private static int taken;

  private static List<Future<RecordMetadata>> send(
      KafkaProducer<String, String> producer, String topic, int partitions, String prefix, int step, String kind, int n) {
    List<Future<RecordMetadata>> acks = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String value = values == null ? prefix + "-" + step + "-" + kind + "-" + i : values.get(taken++);
      acks.add(producer.send(new ProducerRecord<>(topic, i % partitions, null, value)));
    }
    return acks;
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 7 && args.length != 8) {
      System.err.println(
          "usage: TransactionalProducer <bootstrap> <topic> <partitions> <transactional.id|-> <compression> <prefix> <plan>"
              + " [<values file>]");
      System.exit(2);
    }
    String bootstrap = args[0];
    String topic = args[1];
    int partitions = Integer.parseInt(args[2]);
    String transactionalId = args[3];
    boolean transactional = !transactionalId.equals("-");
    String compression = args[4];
    String prefix = args[5];
    String[] plan = args[6].split(",");
    if (args.length == 8) {
      values = Files.readAllLines(Paths.get(args[7]), StandardCharsets.UTF_8);
      int records = 0;
      for (String step : plan) records += Integer.parseInt(step.split(":")[1]);
      if (values.size() < records) {
        System.err.println("the values file has " + values.size() + " lines, the plan " + records + " records");
        System.exit(2);
      }
    }

    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    if (transactional) {
      props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
      // An open transaction must outlive the test that leaves it open (the broker caps this at 15 minutes).
      props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "600000");
    }

    KafkaProducer<String, String> producer = new KafkaProducer<>(props);
    if (transactional) producer.initTransactions();
    say("ready");
    for (int s = 0; s < plan.length; s++) {
      String[] step = plan[s].split(":");
      String kind = step[0];
      int n = Integer.parseInt(step[1]);
      if (!transactional) {
        for (Future<RecordMetadata> ack : send(producer, topic, partitions, prefix, s, kind, n)) ack.get();
        say("sent " + n);
        continue;
      }
      producer.beginTransaction();
      List<Future<RecordMetadata>> acks = send(producer, topic, partitions, prefix, s, kind, n);
      switch (kind) {
        case "commit":
          producer.commitTransaction();
          say("committed " + n);
          break;
        case "abort":
          // Every record must be in the log before the abort, so the ABORT marker really has data to cover.
          producer.flush();
          for (Future<RecordMetadata> ack : acks) ack.get();
          producer.abortTransaction();
          say("aborted " + n);
          break;
        case "open":
          producer.flush();
          for (Future<RecordMetadata> ack : acks) ack.get();
          say("open " + n);
          awaitCommand(producer, n);
          return;
        default:
          throw new IllegalArgumentException("unknown plan step " + plan[s]);
      }
    }
    producer.close();
    say("done");
  }

  private static void awaitCommand(KafkaProducer<String, String> producer, int n) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      switch (line.trim()) {
        case "commit":
          producer.commitTransaction();
          producer.close();
          say("committed " + n);
          say("done");
          return;
        case "abort":
          producer.abortTransaction();
          producer.close();
          say("aborted " + n);
          say("done");
          return;
        case "exit":
          Runtime.getRuntime().halt(0);
          return;
        default:
          System.err.println("unknown command " + line);
      }
    }
    // halt, not exit: a normal shutdown would close the producer, which does not end the transaction
    // but takes a while; the point of this path is to leave the transaction open.
    Runtime.getRuntime().halt(0);
  }
}
