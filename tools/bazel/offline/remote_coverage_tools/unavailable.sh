#!/bin/sh
# Stand-in for Bazel's coverage tools, which cannot be downloaded offline.
echo "kernelbridge: Bazel coverage tools are not available in this offline build" \
  "(tools/bazel/offline/README.md)" >&2
exit 1
