import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import org.kernelbridge.Backend;
import org.kernelbridge.Context;
import org.kernelbridge.KernelBridge;
import org.kernelbridge.KernelBridgeException;
import org.kernelbridge.Status;

/** What a user of kernelbridge.jar writes: the example of docs/java.md. */
public class Example {
  public static void main(String[] args) {
    float[] x = {-2f, -1f, 0f, 1f, 2f};
    float[] y = new float[x.length];
    KernelBridge.silu(x, y); // n = x.length, thread's default context
    System.out.println("silu: " + java.util.Arrays.toString(y));

    try (Context ctx = new Context(Backend.CPU, 0)) { // 0: one thread per CPU
      float[] logits = {1f, 2f, 3f, 1f, 1f, 1f};
      float[] probs = new float[6];
      KernelBridge.softmax(ctx, 2, 3, logits, probs);
      System.out.println("softmax: " + java.util.Arrays.toString(probs));

      FloatBuffer bx = ByteBuffer.allocateDirect(4 * 5).order(ByteOrder.nativeOrder()).asFloatBuffer();
      bx.put(x).flip();
      KernelBridge.geluTanh(ctx, bx, bx); // in place, zero copy
      System.out.println("gelu_tanh[4]: " + bx.get(4));

      try {
        KernelBridge.softmax(ctx, 2, 3, logits, new float[5]);
      } catch (KernelBridgeException e) {
        System.out.println("error: " + e.status() + ": " + e.getMessage());
        if (e.status() != Status.SHAPE_MISMATCH) System.exit(1);
      }
    }
    System.out.println("kernelbridge " + KernelBridge.versionString() + " OK");
  }
}
