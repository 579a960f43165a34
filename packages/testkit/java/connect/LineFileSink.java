/*
 * A Kafka Connect sink connector for tests: every record value (as a string; null as an empty line) is
 * appended to a text file as one line, in the order the task receives them. The file is flushed and
 * synced before the worker commits the consumer offsets, so a record whose offset was committed is in
 * the file; like any sink that only appends, it writes a record again if it is redelivered.
 *
 * Settings: file (required), topics or topics.regex (the worker's).
 */
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;

public final class LineFileSink extends SinkConnector {
  static final String FILE = "file";

  static final ConfigDef CONFIG = new ConfigDef()
      .define(FILE, ConfigDef.Type.STRING, ConfigDef.NO_DEFAULT_VALUE, ConfigDef.Importance.HIGH, "The file to append to");

  private Map<String, String> settings;

  @Override
  public void start(Map<String, String> props) {
    CONFIG.parse(props);
    settings = props;
  }

  @Override
  public Class<? extends Task> taskClass() {
    return LineFileSinkTask.class;
  }

  @Override
  public List<Map<String, String>> taskConfigs(int maxTasks) {
    return Collections.singletonList(settings);
  }

  @Override
  public void stop() {}

  @Override
  public ConfigDef config() {
    return CONFIG;
  }

  @Override
  public String version() {
    return "1";
  }

  public static final class LineFileSinkTask extends SinkTask {
    private String file;
    private FileOutputStream out;

    @Override
    public String version() {
      return "1";
    }

    @Override
    public void start(Map<String, String> props) {
      file = props.get(FILE);
      try {
        out = new FileOutputStream(file, true);
      } catch (IOException e) {
        throw new ConnectException("opening " + file + " failed", e);
      }
    }

    @Override
    public void put(Collection<SinkRecord> records) {
      StringBuilder lines = new StringBuilder();
      for (SinkRecord r : records) lines.append(r.value() == null ? "" : r.value().toString()).append('\n');
      try {
        out.write(lines.toString().getBytes(StandardCharsets.UTF_8));
      } catch (IOException e) {
        throw new ConnectException("appending to " + file + " failed", e);
      }
    }

    @Override
    public void flush(Map<TopicPartition, OffsetAndMetadata> offsets) {
      try {
        out.flush();
        out.getFD().sync();
      } catch (IOException e) {
        throw new ConnectException("syncing " + file + " failed", e);
      }
    }

    @Override
    public void stop() {
      try {
        if (out != null) out.close();
      } catch (IOException e) {
        throw new ConnectException("closing " + file + " failed", e);
      }
    }
  }
}
