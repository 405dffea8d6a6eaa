/*
 * cuda_example.c - asks the distributed library for CUDA devices, which makes
 * it load lib/libkernelbridge_cuda.so.  Prints the status on the first line
 * and kb_last_error() on the second; dist_link_test checks that the backend
 * was found (the message is then about the driver or devices, never "cannot
 * load the CUDA backend").  Exit status 0 unless the status is unexpected.
 */
#include <stdio.h>

#include "kernelbridge.h"

int main(void) {
  int64_t count = 0;
  kb_status st = kb_cuda_device_count(&count);
  printf("%s\n%s\n", kb_status_string(st), kb_last_error());
  if (st == KB_STATUS_OK) printf("devices: %lld\n", (long long)count);
  return st == KB_STATUS_OK || st == KB_STATUS_BACKEND_UNAVAILABLE ? 0 : 1;
}
