package org.kernelbridge;

/**
 * CUDA devices.  The CUDA backend ({@code libkernelbridge_cuda.so}) is loaded by
 * the C library the first time CUDA is asked for; the jar's native library never
 * depends on CUDA.  Without a usable backend (library, NVIDIA driver or device
 * missing) every method here, and {@link Context#cuda(long)}, throws a
 * {@link KernelBridgeException} with {@link Status#BACKEND_UNAVAILABLE} and a
 * message saying which part is missing, e.g.
 * {@code "kb_cuda_device_count: no NVIDIA driver: libcuda.so.1 cannot be loaded ..."}.
 *
 * <pre>{@code
 * if (Cuda.isAvailable()) {
 *   System.out.println(Cuda.deviceName(0) + ", compute capability " + Cuda.computeCapability(0));
 *   try (Context ctx = Context.cuda(0)) { ... }
 * }
 * }</pre>
 *
 * <p>Thread-safe.
 */
public final class Cuda {
  private Cuda() {}

  /**
   * Number of CUDA devices kernelbridge can use (compute capability 8.0 or newer is
   * needed to run kernels on one).
   *
   * @throws KernelBridgeException BACKEND_UNAVAILABLE without a usable CUDA backend
   */
  public static int deviceCount() {
    return (int) KernelBridge.cudaDeviceCount();
  }

  /** Whether CUDA can be used: {@link #deviceCount()} succeeds and is not 0.  Never throws. */
  public static boolean isAvailable() {
    return unavailableReason() == null;
  }

  /**
   * Why CUDA cannot be used (the library's message, e.g. which part is missing), or null
   * when it can.  Never throws.
   */
  public static String unavailableReason() {
    try {
      return deviceCount() > 0 ? null : "no CUDA device";
    } catch (KernelBridgeException e) {
      return e.getMessage();
    }
  }

  /**
   * Name of CUDA device {@code device}, such as "NVIDIA H100 80GB HBM3".
   *
   * @throws KernelBridgeException INVALID_ARGUMENT when device is not in [0, count),
   *     BACKEND_UNAVAILABLE without a usable CUDA backend
   */
  public static String deviceName(int device) {
    return KernelBridge.cudaDeviceName(device);
  }

  /**
   * Compute capability of CUDA device {@code device} (8.0 for sm_80, 9.0 for sm_90).
   *
   * @throws KernelBridgeException as {@link #deviceName(int)}
   */
  public static ComputeCapability computeCapability(int device) {
    long v = KernelBridge.cudaDeviceComputeCapability(device);
    return new ComputeCapability((int) (v / 10), (int) (v % 10));
  }

  /**
   * Total memory of CUDA device {@code device} in bytes.
   *
   * @throws KernelBridgeException as {@link #deviceName(int)}
   */
  public static long totalMemory(int device) {
    return KernelBridge.cudaDeviceTotalMemory(device);
  }

  /**
   * Memory of CUDA device {@code device} that is free now, in bytes.
   *
   * @throws KernelBridgeException as {@link #deviceName(int)}
   */
  public static long freeMemory(int device) {
    return KernelBridge.cudaDeviceFreeMemory(device);
  }

  /** A compute capability, major.minor; ordered by version. */
  public static final class ComputeCapability implements Comparable<ComputeCapability> {
    private final int major;
    private final int minor;

    /** major.minor, such as 9.0. */
    public ComputeCapability(int major, int minor) {
      this.major = major;
      this.minor = minor;
    }

    public int major() {
      return major;
    }

    public int minor() {
      return minor;
    }

    /** Whether this is at least major.minor. */
    public boolean atLeast(int major, int minor) {
      return compareTo(new ComputeCapability(major, minor)) >= 0;
    }

    @Override
    public int compareTo(ComputeCapability o) {
      return major != o.major ? Integer.compare(major, o.major) : Integer.compare(minor, o.minor);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof ComputeCapability && ((ComputeCapability) o).major == major
          && ((ComputeCapability) o).minor == minor;
    }

    @Override
    public int hashCode() {
      return 31 * major + minor;
    }

    /** "major.minor", e.g. "9.0". */
    @Override
    public String toString() {
      return major + "." + minor;
    }
  }
}
