import java.io.InputStream;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

/**
 * A Java agent for Kafka Connect that ends an idle busy-wait in Debezium 3.x, by changing one
 * comparison when the class is loaded.
 *
 * <p>Debezium's {@code ChangeEventQueue.poll()} waits for records in steps of
 * {@code remaining().toMillis()} milliseconds until its timer says {@code expired()}. The timer
 * ({@code io.debezium.util.Threads.timer}, an anonymous class compiled to {@code Threads$2}) counts
 * whole milliseconds and is expired only once the elapsed time is strictly greater than the limit.
 * For the whole millisecond in which elapsed equals the limit, the remaining time is 0, so the loop
 * does not wait at all: it spins. With {@code poll.interval.ms=5} that is one millisecond in five,
 * ~18 % of a core for an idle connector (measured on this project's 2-core machine).
 *
 * <p>The fix makes {@code expired()} true once the elapsed time reaches the limit ({@code >=}
 * instead of {@code >}): in the bytecode of {@code expired()}, {@code lcmp; ifle} becomes
 * {@code lcmp; iflt}. The branch target, the stack and the frames stay the same, so the class
 * verifies as before. The patch is applied only where the whole instruction sequence of
 * {@code expired()} is found exactly once in that class; otherwise the class is left as it is and
 * the agent says so on standard error (a newer Debezium, fixed or changed).
 *
 * <p>{@code java PollTimerAgent.java --check <debezium-util jar>} runs the same search against a
 * jar without starting anything (the stack's tests use it).
 */
public final class PollTimerAgent implements ClassFileTransformer {
  static final String TARGET = "io/debezium/util/Threads$2";

  /** expired(): lcmp; ifle +7; iconst_1; goto +4; iconst_0; ireturn. */
  private static final byte[] EXPIRED_TAIL = {
    (byte) 0x94, (byte) 0x9e, 0x00, 0x07, 0x04, (byte) 0xa7, 0x00, 0x04, 0x03, (byte) 0xac
  };

  private static final int BRANCH_OFFSET = 1;
  private static final byte IFLT = (byte) 0x9b;

  public static void premain(String args, Instrumentation inst) {
    inst.addTransformer(new PollTimerAgent());
    say("installed: will patch " + TARGET + ".expired() when it is loaded");
  }

  @Override
  public byte[] transform(
      ClassLoader loader, String name, Class<?> redefined, ProtectionDomain domain, byte[] bytes) {
    if (!TARGET.equals(name)) return null;
    byte[] patched = patch(bytes);
    if (patched == null) {
      say("WARNING: " + TARGET + " is not the expected Debezium 3.x timer; left unchanged");
    } else {
      say("patched " + TARGET + ".expired(): elapsed >= limit");
    }
    return patched;
  }

  /** The class with the comparison changed, or null when the sequence is not there exactly once. */
  static byte[] patch(byte[] bytes) {
    int found = -1;
    for (int i = 0; i + EXPIRED_TAIL.length <= bytes.length; i++) {
      if (matchesAt(bytes, i)) {
        if (found >= 0) return null;
        found = i;
      }
    }
    if (found < 0) return null;
    byte[] out = bytes.clone();
    out[found + BRANCH_OFFSET] = IFLT;
    return out;
  }

  private static boolean matchesAt(byte[] bytes, int at) {
    for (int k = 0; k < EXPIRED_TAIL.length; k++) {
      if (bytes[at + k] != EXPIRED_TAIL[k]) return false;
    }
    return true;
  }

  private static void say(String line) {
    System.err.println("[poll-timer-agent] " + line);
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 2 || !"--check".equals(args[0])) {
      System.err.println("usage: java PollTimerAgent.java --check <debezium-util jar>");
      System.exit(2);
    }
    try (JarFile jar = new JarFile(args[1])) {
      JarEntry entry = jar.getJarEntry(TARGET + ".class");
      if (entry == null) {
        System.out.println("absent: " + TARGET);
        System.exit(1);
      }
      byte[] bytes;
      try (InputStream in = jar.getInputStream(entry)) {
        bytes = in.readAllBytes();
      }
      boolean ok = patch(bytes) != null;
      System.out.println((ok ? "patchable: " : "not patchable: ") + TARGET);
      System.exit(ok ? 0 : 1);
    }
  }
}
