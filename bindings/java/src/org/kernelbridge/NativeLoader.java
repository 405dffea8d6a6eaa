package org.kernelbridge;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads the JNI library that the jar carries as a resource
 * {@code /native/<os>-<arch>/libkernelbridge_jni.so}: it is copied to a
 * temporary file, loaded with {@link System#load}, and the file is deleted at
 * once (the mapping stays valid).
 *
 * <p>System properties:
 * <ul>
 *   <li>{@code kernelbridge.library.path}: load this file instead (a library built
 *       for a platform the jar does not carry);
 *   <li>{@code kernelbridge.tmpdir}: where to extract (default {@code java.io.tmpdir};
 *       it must not be mounted noexec).
 * </ul>
 */
final class NativeLoader {
  private NativeLoader() {}

  static final String LIBRARY = "libkernelbridge_jni.so";

  private static volatile boolean loaded;
  private static String failure;

  /** The platform directory name, e.g. linux-x86_64, or null when unknown. */
  static String platform(String osName, String osArch) {
    String os = osName.toLowerCase(Locale.ROOT);
    String arch = osArch.toLowerCase(Locale.ROOT);
    if (os.startsWith("linux")) {
      os = "linux";
    } else {
      return null;
    }
    switch (arch) {
      case "amd64":
      case "x86_64":
        arch = "x86_64";
        break;
      case "aarch64":
      case "arm64":
        arch = "aarch64";
        break;
      default:
        return null;
    }
    return os + "-" + arch;
  }

  /** Loads the library once; later calls return at once (or repeat the first failure). */
  static void load() {
    if (loaded) return;
    synchronized (NativeLoader.class) {
      if (loaded) return;
      if (failure != null) throw new UnsatisfiedLinkError(failure);
      try {
        loadOnce();
        // Set before the check: the check's native call re-enters load().
        loaded = true;
        int lib = KernelBridge.versionNumber();
        if (lib != KernelBridge.VERSION_NUMBER) {
          loaded = false;
          throw new UnsatisfiedLinkError(
              "kernelbridge: the native library is version " + KernelBridge.versionString()
                  + " but the Java classes were generated for " + KernelBridge.VERSION);
        }
      } catch (UnsatisfiedLinkError e) {
        failure = e.getMessage();
        throw e;
      }
    }
  }

  private static void loadOnce() {
    String explicit = System.getProperty("kernelbridge.library.path");
    if (explicit != null && !explicit.isEmpty()) {
      System.load(Paths.get(explicit).toAbsolutePath().toString());
      return;
    }
    String osName = System.getProperty("os.name", "?");
    String osArch = System.getProperty("os.arch", "?");
    String platform = platform(osName, osArch);
    String resource = platform == null ? null : "/native/" + platform + "/" + LIBRARY;
    InputStream in = resource == null ? null : NativeLoader.class.getResourceAsStream(resource);
    if (in == null) {
      throw new UnsatisfiedLinkError(
          "kernelbridge: unsupported platform os.name=" + osName + ", os.arch=" + osArch
              + (platform == null ? "" : " (" + platform + ")")
              + "; this jar carries a native library for linux-x86_64 only."
              + " Build libkernelbridge_jni.so for this platform and set -Dkernelbridge.library.path=<file>.");
    }
    Path tmp = null;
    try (InputStream stream = in) {
      String dir = System.getProperty("kernelbridge.tmpdir", System.getProperty("java.io.tmpdir"));
      tmp = Files.createTempFile(Paths.get(dir), "kernelbridge_jni", ".so");
      Files.copy(stream, tmp, StandardCopyOption.REPLACE_EXISTING);
      System.load(tmp.toAbsolutePath().toString());
    } catch (IOException e) {
      UnsatisfiedLinkError err =
          new UnsatisfiedLinkError("kernelbridge: cannot extract " + resource + " to a temporary file: " + e);
      err.initCause(e);
      throw err;
    } finally {
      if (tmp != null) {
        try {
          Files.deleteIfExists(tmp);
        } catch (IOException e) {
          tmp.toFile().deleteOnExit();
        }
      }
    }
  }
}
