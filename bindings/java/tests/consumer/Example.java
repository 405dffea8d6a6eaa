import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import org.kernelbridge.Backend;
import org.kernelbridge.Bf16;
import org.kernelbridge.Context;
import org.kernelbridge.Cuda;
import org.kernelbridge.DeviceBuffer;
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

      // bfloat16 bit patterns in short[]
      short[] h = Bf16.fromFloats(x);
      short[] hy = new short[h.length];
      KernelBridge.siluBf16(ctx, h, hy);
      System.out.println("silu_bf16[4]: " + Bf16.toFloat(hy[4]));
    }

    // Buffers: device memory on a CUDA context, host memory on a CPU context.
    String noCuda = Cuda.unavailableReason();
    System.out.println(noCuda == null ? "CUDA: " + Cuda.deviceName(0) : "CUDA unavailable: " + noCuda);
    try (Context ctx = noCuda == null ? Context.cuda(0) : new Context(Backend.CPU, 1);
        DeviceBuffer dx = DeviceBuffer.of(ctx, x);
        DeviceBuffer dy = new DeviceBuffer(ctx, 4L * x.length)) {
      KernelBridge.silu(ctx, dx, dy); // n = dx.size() / 4
      float[] out = dy.toFloatArray();
      System.out.println("silu on " + dy + ": " + java.util.Arrays.toString(out));
      if (!java.util.Arrays.equals(out, y)) System.exit(1);
    }
    System.out.println("kernelbridge " + KernelBridge.versionString() + " OK");
  }
}
