#!/usr/bin/env bash
# gpu-build.sh builds, on a machine without a GPU, what scripts/gpu-run.sh
# runs on one that has no Go toolchain: the cuda build of pipecast and the
# GPU backend's test binary (the shared backend suite and the driver's own
# tests), into bin/gpu/ (ignored by git; carry it to the GPU machine).
#
# Needs Debian's nvidia-cuda-dev (the CUDA headers and the libcuda stub
# that the binaries link against; the GPU machine's driver provides the
# real libcuda.so.1):
#
#   add "contrib non-free" to the apt sources' Components, then
#   apt-get install nvidia-cuda-dev
#
# Usage: scripts/gpu-build.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bin/gpu}
if [ ! -f /usr/include/cuda.h ]; then
	echo "gpu-build: /usr/include/cuda.h is missing: apt-get install nvidia-cuda-dev (Debian's non-free section)" >&2
	exit 2
fi
stubs=/usr/lib/x86_64-linux-gnu/stubs
export CGO_ENABLED=1 CGO_LDFLAGS="-L$stubs ${CGO_LDFLAGS:-}"
mkdir -p "$out"
go build -tags cuda -trimpath -o "$out/pipecast" ./cmd/pipecast
go test -c -tags cuda -trimpath -o "$out/cuda-driver.test" ./tensor/cuda/driver
ls -l "$out"
