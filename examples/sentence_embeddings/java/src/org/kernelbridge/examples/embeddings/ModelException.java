package org.kernelbridge.examples.embeddings;

/** A problem with the model files or the input; the message names the file (and tensor). */
public final class ModelException extends Exception {
  private static final long serialVersionUID = 1L;

  public ModelException(String message) {
    super(message);
  }
}
