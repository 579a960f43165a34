/*
 * A word-count Kafka Streams application for integration tests, built on Apache Kafka Streams:
 *
 *   input (lines) -> flatMapValues(split on whitespace, lower case) -> groupBy(word)   (a repartition topic)
 *                 -> count("counts")                                                   (a changelog topic)
 *                 -> output (word -> count as a decimal string)
 *
 * with processing.guarantee=exactly_once_v2, so the repartition writes, the changelog writes, the output
 * and the input offsets of one commit are one transaction. It prints one line per state change of the
 * application:
 *
 *   state <OLD> <NEW>          e.g. "state REBALANCING RUNNING"
 *
 * and "closed" once it closed after stdin ended or a "close" line arrived (it then leaves the group, so a
 * restart with the same application id gets its tasks at once).
 *
 * Arguments: <bootstrap> <application id> <input topic> <output topic> <state dir> <commit interval ms>
 *            <replication factor> [<key>=<value> ...] (further Streams settings, over the generated ones).
 * Exits 1 if the application fails (a stream thread dies or it reaches ERROR).
 */
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

public final class WordCountStreams {
  private WordCountStreams() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 7) {
      System.err.println(
          "usage: WordCountStreams <bootstrap> <application id> <input> <output> <state dir> <commit interval ms>"
              + " <replication factor> [key=value ...]");
      System.exit(2);
    }
    Properties props = new Properties();
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
    props.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, args[5]);
    props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, args[6]);
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
    props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
    props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
    props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
    for (String kv : Arrays.copyOfRange(args, 7, args.length)) {
      int eq = kv.indexOf('=');
      if (eq <= 0) {
        System.err.println("not a key=value setting: " + kv);
        System.exit(2);
      }
      props.put(kv.substring(0, eq), kv.substring(eq + 1));
    }

    StreamsBuilder builder = new StreamsBuilder();
    KStream<String, String> lines = builder.stream(args[2], Consumed.with(Serdes.String(), Serdes.String()));
    lines
        .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\s+")))
        .filter((key, word) -> !word.isEmpty())
        .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
        .count(Materialized.as("counts"))
        .toStream()
        .mapValues(count -> Long.toString(count))
        .to(args[3], Produced.with(Serdes.String(), Serdes.String()));

    KafkaStreams streams = new KafkaStreams(builder.build(), props);
    CountDownLatch stop = new CountDownLatch(1);
    AtomicBoolean failed = new AtomicBoolean(false);
    streams.setStateListener((next, old) -> {
      System.out.println("state " + old + " " + next);
      System.out.flush();
      if (next == KafkaStreams.State.ERROR || next == KafkaStreams.State.PENDING_ERROR) {
        failed.set(true);
        stop.countDown();
      }
    });
    streams.setUncaughtExceptionHandler(e -> {
      System.err.println("stream thread failed: " + e);
      e.printStackTrace();
      failed.set(true);
      stop.countDown();
      return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
    });
    streams.start();

    Thread stdin = new Thread(() -> {
      try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
        String line;
        while ((line = in.readLine()) != null && !line.trim().equals("close")) {}
      } catch (Exception e) {
        // stdin gone: close as if asked to
      }
      stop.countDown();
    });
    stdin.setDaemon(true);
    stdin.start();
    stop.await();

    streams.close(
        CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
            .withTimeout(Duration.ofSeconds(30)));
    System.out.println("closed");
    System.out.flush();
    System.exit(failed.get() ? 1 : 0);
  }
}
