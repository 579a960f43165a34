/*
 * Creates one topic with Apache Kafka's own Admin client, with the retry on a controller mutation quota
 * violation turned off (KIP-599's `CreateTopicsOptions.retryOnQuotaViolation(false)`), so a throttled
 * creation shows its error instead of waiting the throttle out. Prints one line:
 *
 *   created                                   the topic was created
 *   error <ExceptionClass> <throttle ms|-1>   the creation failed (throttle time for a quota violation)
 *
 * Arguments: <bootstrap> <client.id> <topic> <partitions>.
 */
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.ThrottlingQuotaExceededException;

public final class CreateTopicNoRetry {
  private CreateTopicNoRetry() {}

  public static void main(String[] args) throws InterruptedException {
    if (args.length != 4) {
      System.err.println("usage: CreateTopicNoRetry <bootstrap> <client.id> <topic> <partitions>");
      System.exit(2);
    }
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(AdminClientConfig.CLIENT_ID_CONFIG, args[1]);
    try (Admin admin = Admin.create(props)) {
      NewTopic topic = new NewTopic(args[2], Integer.parseInt(args[3]), (short) 1);
      admin.createTopics(List.of(topic), new CreateTopicsOptions().retryOnQuotaViolation(false)).all().get();
      System.out.println("created");
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      long throttleMs = cause instanceof ThrottlingQuotaExceededException t ? t.throttleTimeMs() : -1;
      System.out.println("error " + cause.getClass().getSimpleName() + " " + throttleMs);
    }
  }
}
