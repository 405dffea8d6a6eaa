/* JNI no-ops for benchmarks/java: the cost of the transition alone. */
#include <jni.h>

JNIEXPORT void JNICALL Java_org_kernelbridge_JniNoop_noop(JNIEnv *env, jclass cls) {
  (void)env;
  (void)cls;
}

JNIEXPORT jint JNICALL Java_org_kernelbridge_JniNoop_noopArgs(JNIEnv *env, jclass cls, jlong ctx, jlong n, jfloatArray x,
                                                              jfloatArray y) {
  (void)env;
  (void)cls;
  (void)ctx;
  (void)x;
  (void)y;
  return (jint)n;
}
