#!/usr/bin/env bash
# cuda-kernels.sh builds and checks the CUDA kernels of pipecast's GPU
# backend, tensor/cuda/kernels/*.cu (compiled as one unit, all.cu), on a
# machine with or without a GPU.
#
#   build  compiles them into tensor/cuda/kernels/kernels.fatbin, which
#          package tensor/cuda/kernels embeds (commit it with the sources):
#          SASS for sm_80 (A100) and sm_90 (H100/H200), and compute_90 PTX
#          that the driver JIT-compiles for newer GPUs. It also writes
#          kernels.fatbin.sources, the SHA-256 of kernels.h and of every
#          .cu file the fatbin was built from (sha256sum's lines, sorted by
#          name), which a test of package tensor/cuda/kernels compares with
#          the files, so that a fatbin not rebuilt after an edit fails it.
#   check  compiles them to PTX for compute_90 and assembles that with
#          ptxas -v, failing on any error, on a kernel count that differs
#          from kernels.h's, or on register spills; it prints one line.
#
# Needs nvcc and ptxas (CUDA 11.8 or later), from Debian's
# nvidia-cuda-toolkit:
#
#   add "contrib non-free" to the apt sources' Components, then
#   apt-get install nvidia-cuda-toolkit
#
# nvcc 11.8 supports host compilers up to GCC 11; the host compiler only
# preprocesses here (no host code is built), but nvcc refuses an
# unsupported one all the same. Debian's nvcc wrapper picks g++-11 when it
# is installed; this script passes -ccbin g++-11 itself when it can, and
# otherwise falls back to the default g++ with -allow-unsupported-compiler.
# Set CUDA_CCBIN to choose another host compiler.
#
# Numerics: no --use_fast_math (IEEE division, square roots, exp and log,
# denormals kept); -fmad=true lets a multiply and an add fuse into an FMA,
# which rounds once instead of twice.
#
# Usage: scripts/cuda-kernels.sh build|check
set -euo pipefail
cd "$(dirname "$0")/.."
dir=tensor/cuda/kernels

usage() {
	echo "usage: scripts/cuda-kernels.sh build|check" >&2
	exit 2
}
[ $# -eq 1 ] || usage

for tool in nvcc ptxas; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "cuda-kernels: $tool is missing: apt-get install nvidia-cuda-toolkit (Debian's non-free section)" >&2
		exit 2
	fi
done

host=()
if [ -n "${CUDA_CCBIN:-}" ]; then
	host=(-ccbin "$CUDA_CCBIN")
elif command -v g++-11 >/dev/null 2>&1; then
	host=(-ccbin g++-11)
else
	host=(-allow-unsupported-compiler)
fi
flags=(-std=c++17 -O3 -fmad=true "${host[@]}")

case "$1" in
build)
	nvcc -fatbin "${flags[@]}" \
		-gencode arch=compute_80,code=sm_80 \
		-gencode arch=compute_90,code=sm_90 \
		-gencode arch=compute_90,code=compute_90 \
		-o "$dir/kernels.fatbin" "$dir/all.cu"
	# The names bare and in C order, as TestFatbinIsCurrent lists them.
	(cd "$dir" && printf '%s\n' kernels.h *.cu | LC_ALL=C sort | xargs sha256sum) >"$dir/kernels.fatbin.sources"
	echo "cuda-kernels: wrote $dir/kernels.fatbin ($(wc -c <"$dir/kernels.fatbin") bytes) and kernels.fatbin.sources"
	;;
check)
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	nvcc -ptx "${flags[@]}" -arch=compute_90 -o "$tmp/all.ptx" "$dir/all.cu"
	if ! ptxas -arch=sm_90 -O3 -v -o "$tmp/all.cubin" "$tmp/all.ptx" 2>"$tmp/ptxas.log"; then
		cat "$tmp/ptxas.log" >&2
		echo "cuda-kernels: ptxas failed" >&2
		exit 1
	fi
	if grep -Eiq 'error|warning' "$tmp/ptxas.log"; then
		grep -Ei 'error|warning' "$tmp/ptxas.log" >&2
		echo "cuda-kernels: ptxas reported problems" >&2
		exit 1
	fi
	# ptxas -v reports, per kernel: "Compiling entry function 'pc_x'",
	# then its spills, then "Used N registers".
	summary=$(awk '
		/Compiling entry function/ { match($0, /'\''[^'\'']*'\''/); fn = substr($0, RSTART + 1, RLENGTH - 2); n++ }
		/spill stores/ { for (i = 1; i <= NF; i++) if ($(i + 1) == "bytes" && $(i + 2) == "spill" && $(i + 3) == "stores,") s += $i }
		/Used [0-9]+ registers/ { for (i = 1; i <= NF; i++) if ($i == "Used") r = $(i + 1); if (r + 0 > max) { max = r + 0; heavy = fn } }
		END { printf "%d %d %s %d\n", n, max, heavy, s }' "$tmp/ptxas.log")
	read -r count regs heavy spills <<<"$summary"
	want=$(grep -Ec '^__global__ void pc_[a-z0-9_]+\(' "$dir/kernels.h")
	if [ "$count" -ne "$want" ]; then
		echo "cuda-kernels: ptxas compiled $count kernels, kernels.h declares $want" >&2
		exit 1
	fi
	if [ "$spills" -ne 0 ]; then
		grep -B2 -E '[1-9][0-9]* bytes spill stores' "$tmp/ptxas.log" >&2 || true
		echo "cuda-kernels: register spills ($spills bytes of spill stores)" >&2
		exit 1
	fi
	echo "cuda-kernels: check ok: $count kernels for sm_90, heaviest $heavy with $regs registers, no spills"
	;;
*)
	usage
	;;
esac
