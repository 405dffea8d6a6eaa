package org.kernelbridge.examples.textgen;

/** A bad command line: Main prints "error: MESSAGE" and the usage line, and exits with status 2. */
final class UsageException extends Exception {
  private static final long serialVersionUID = 1L;

  UsageException(String message) {
    super(message);
  }
}
