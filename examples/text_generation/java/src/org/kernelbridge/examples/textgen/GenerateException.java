package org.kernelbridge.examples.textgen;

/**
 * A problem with the model file, the prompt or a kernel call: Main prints "error: MESSAGE" and exits
 * with status 1.  The message names the key, tensor, file or token, as the C driver's does.
 */
final class GenerateException extends Exception {
  private static final long serialVersionUID = 1L;

  GenerateException(String message) {
    super(message);
  }
}
