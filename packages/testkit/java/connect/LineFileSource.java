/*
 * A Kafka Connect source connector for tests: one task reads a text file line by line and sends each
 * complete line (without its line break) as a string value to one topic. The source partition is
 * {"file": <path>}, the source offset {"position": <byte offset after the line>}, so a task restarted
 * from a committed offset goes on with the first line not yet sent. A line only counts once its '\n' is
 * in the file, so a writer appending to the file is never read half-way.
 *
 * Settings: file (required), topic (required), batch.lines (most lines per poll, default 100).
 * It supports exactly-once delivery with the worker's transaction boundaries (poll, interval) and does
 * not define transactions itself.
 */
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.ConnectorTransactionBoundaries;
import org.apache.kafka.connect.source.ExactlyOnceSupport;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

public final class LineFileSource extends SourceConnector {
  static final String FILE = "file";
  static final String TOPIC = "topic";
  static final String BATCH_LINES = "batch.lines";

  static final ConfigDef CONFIG = new ConfigDef()
      .define(FILE, ConfigDef.Type.STRING, ConfigDef.NO_DEFAULT_VALUE, ConfigDef.Importance.HIGH, "The file to read")
      .define(TOPIC, ConfigDef.Type.STRING, ConfigDef.NO_DEFAULT_VALUE, ConfigDef.Importance.HIGH, "The topic to write")
      .define(BATCH_LINES, ConfigDef.Type.INT, 100, ConfigDef.Range.atLeast(1), ConfigDef.Importance.LOW,
          "The most lines one poll returns");

  private Map<String, String> settings;

  @Override
  public void start(Map<String, String> props) {
    CONFIG.parse(props);
    settings = props;
  }

  @Override
  public Class<? extends Task> taskClass() {
    return LineFileSourceTask.class;
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

  @Override
  public ExactlyOnceSupport exactlyOnceSupport(Map<String, String> props) {
    return ExactlyOnceSupport.SUPPORTED;
  }

  @Override
  public ConnectorTransactionBoundaries canDefineTransactionBoundaries(Map<String, String> props) {
    return ConnectorTransactionBoundaries.UNSUPPORTED;
  }

  public static final class LineFileSourceTask extends SourceTask {
    private String file;
    private String topic;
    private int batchLines;
    private Map<String, String> partition;
    private RandomAccessFile in;
    private long position;

    @Override
    public String version() {
      return "1";
    }

    @Override
    public void start(Map<String, String> props) {
      file = props.get(FILE);
      topic = props.get(TOPIC);
      batchLines = props.containsKey(BATCH_LINES) ? Integer.parseInt(props.get(BATCH_LINES)) : 100;
      partition = Collections.singletonMap("file", file);
      Map<String, Object> committed = context.offsetStorageReader().offset(partition);
      Object p = committed == null ? null : committed.get("position");
      position = p instanceof Number ? ((Number) p).longValue() : 0L;
    }

    @Override
    public List<SourceRecord> poll() throws InterruptedException {
      try {
        if (in == null) {
          if (!new java.io.File(file).exists()) {
            Thread.sleep(100);
            return null;
          }
          in = new RandomAccessFile(file, "r");
        }
        long length = in.length();
        if (length <= position) {
          Thread.sleep(100);
          return null;
        }
        int want = (int) Math.min(length - position, 1 << 20);
        byte[] buf = new byte[want];
        in.seek(position);
        in.readFully(buf);
        List<SourceRecord> records = new ArrayList<>();
        int start = 0;
        for (int i = 0; i < want && records.size() < batchLines; i++) {
          if (buf[i] != '\n') continue;
          String line = new String(buf, start, i - start, StandardCharsets.UTF_8);
          position += i + 1 - start;
          start = i + 1;
          records.add(new SourceRecord(partition, Collections.singletonMap("position", position), topic, null,
              null, null, Schema.STRING_SCHEMA, line, System.currentTimeMillis()));
        }
        if (records.isEmpty()) {
          Thread.sleep(100);
          return null;
        }
        return records;
      } catch (IOException e) {
        throw new ConnectException("reading " + file + " failed", e);
      }
    }

    @Override
    public void stop() {
      try {
        if (in != null) in.close();
      } catch (IOException ignored) {
        // Closing a file opened for reading loses nothing.
      }
    }
  }
}
