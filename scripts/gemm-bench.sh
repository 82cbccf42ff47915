#!/usr/bin/env bash
# gemm-bench.sh runs cmd/gemmbench: pipecast's GEMM on square and
# convolution products, side by side with OpenBLAS's when libopenblas
# and its cblas.h are installed (Debian: apt-get install libopenblas-dev),
# pipecast alone otherwise. Arguments go to gemmbench:
#
#   scripts/gemm-bench.sh                  # about 3–5 minutes
#   scripts/gemm-bench.sh --quick          # about half a minute
#   scripts/gemm-bench.sh --markdown --threads 4
set -euo pipefail
cd "$(dirname "$0")/.."

tags=()
# A tiny cgo program that includes cblas.h and links -lopenblas tells
# whether the openblas build tag can build here.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
cat >"$probe/main.go" <<'GO'
package main

// #cgo LDFLAGS: -lopenblas
// #include <cblas.h>
import "C"

func main() { C.openblas_set_num_threads(1) }
GO
if (cd "$probe" && CGO_ENABLED=1 GO111MODULE=off GOFLAGS= go build -o /dev/null main.go) >/dev/null 2>&1; then
	tags=(-tags openblas)
else
	echo "gemm-bench: OpenBLAS (libopenblas-dev) not found or cgo unavailable: measuring pipecast alone" >&2
fi
# Built into the temporary directory, removed on exit.
bin="$probe/gemmbench"
go build ${tags[@]+"${tags[@]}"} -o "$bin" ./cmd/gemmbench
"$bin" "$@"
