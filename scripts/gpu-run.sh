#!/usr/bin/env bash
# gpu-run.sh is the GPU backend's one prepared run, for a machine with an
# NVIDIA GPU, python3 with torch and torchvision, and no Go toolchain: it
# runs the binaries that scripts/gpu-build.sh built elsewhere and writes
# everything it measures under OUT. Within about 8 minutes it
#
#   1. runs the backend suite on the GPU (tensor/tensortest against float64
#      references, with the GPU's libraries and again with pipecast's own
#      kernels only: every kernel family, the decoder transformers' and
#      AdamW's included, on the device's kernels and on the host
#      fallback), and the driver's tests (cuBLAS's strided batch among
#      them): OUT/suite.txt;
#   2. times the single-GPU training step of resnet50, vgg16bn and
#      inceptionv3 at 224×224, batch 64, 1000 classes (SGD), and of gpt2
#      at width 1 with 4 decoder layers, sequences of 128 tokens, batch 4
#      (AdamW; the transformer kernels): pipecast (--schedule single)
#      beside PyTorch on the same GPU (float32, TF32 off): OUT/steps.md,
#      records in OUT/runs.jsonl, PyTorch's in OUT/pytorch.jsonl;
#   3. profiles the three models at 224×224, batch 64, under gpipe and coop
#      for K = 1, 2, 4 (M = 4): OUT/sweep.md and the records in
#      OUT/runs.jsonl. K devices share the machine's GPUs (K devices on one
#      GPU are K streams; each record's environment says which).
#
# cuBLAS and cuDNN are taken from PyTorch's pip packages (nvidia-cublas,
# nvidia-cudnn) when the system has none on its library path; set
# PIPECAST_CUBLAS / PIPECAST_CUDNN to choose others.
#
# Usage: scripts/gpu-run.sh OUT [BINDIR]   (BINDIR: default bin/gpu)
set -uo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ]; then
	echo "usage: scripts/gpu-run.sh OUT [BINDIR]" >&2
	exit 2
fi
out=$1
bin=${2:-bin/gpu}
for f in pipecast cuda-driver.test; do
	if [ ! -x "$bin/$f" ]; then
		echo "gpu-run: $bin/$f is missing: build it with scripts/gpu-build.sh" >&2
		exit 2
	fi
done
mkdir -p "$out"
start=$(date +%s)
log() { echo "gpu-run: [$(($(date +%s) - start)) s] $*" >&2; }

{
	date -u +%Y-%m-%dT%H:%M:%SZ
	nvidia-smi -L 2>&1 || true
	nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 || true
	nproc
} >"$out/machine.txt"

# Libraries: PyTorch's pip wheels carry cuBLAS and cuDNN in
# site-packages/nvidia/*/lib.
if [ -z "${PIPECAST_CUBLAS:-}${PIPECAST_CUDNN:-}" ]; then
	libs=$(python3 - <<'PY' 2>/dev/null
import glob, os, site
roots = site.getsitepackages() + [site.getusersitepackages()]
for pat, var in (("nvidia/cublas/lib/libcublas.so.*", "PIPECAST_CUBLAS"), ("nvidia/cudnn/lib/libcudnn.so.*", "PIPECAST_CUDNN")):
    hits = sorted(h for r in roots for h in glob.glob(os.path.join(r, pat)) if "Lt" not in os.path.basename(h))
    if hits:
        print(f"{var}={hits[-1]}")
PY
	)
	for kv in $libs; do
		export "${kv?}"
		export LD_LIBRARY_PATH="$(dirname "${kv#*=}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	done
fi
log "cublas: ${PIPECAST_CUBLAS:-system search}; cudnn: ${PIPECAST_CUDNN:-system search}"

# 1. The suite (about a minute; the timeout leaves room for the
#    transformer families' cases).
log "backend suite"
timeout 180 "$bin/cuda-driver.test" -test.v -test.timeout 170s >"$out/suite.txt" 2>&1
echo "exit status $?" >>"$out/suite.txt"
grep -E '^(--- FAIL|FAIL|ok|PASS)' "$out/suite.txt" | head -20 >&2
tail -1 "$out/suite.txt" >&2

# 2. One GPU: pipecast beside PyTorch. The CNNs at 224×224, batch 64;
#    gpt2 as scripts/step-vs-pytorch.sh sizes it (50257-token vocabulary,
#    AdamW, GPT-2's dropout on both sides).
common=(--backend cuda --image 224 --width 1 --classes 1000 --batch 64 --out "$out")
gpt2=(--backend cuda --width 1 --layers 4 --seq 128 --batch 4 --out "$out")
{
	echo "| model | pipecast s/step | PyTorch s/step | ratio (pipecast / PyTorch) |"
	echo "|---|---|---|---|"
} >"$out/steps.md"
for m in resnet50 vgg16bn inceptionv3 gpt2; do
	ours_size=("${common[@]}")
	theirs_size=(--image 224 --batch 64 --classes 1000)
	if [ "$m" = gpt2 ]; then
		ours_size=("${gpt2[@]}")
		theirs_size=(--seq 128 --layers 4 --batch 4)
	fi
	log "$m: one GPU, pipecast"
	ours=$(timeout 60 "$bin/pipecast" profile "${ours_size[@]}" --model "$m" --devices 1 --schedule single \
		--microbatches 1 --steps 10 --warmup 3 --rounds 1 --output json 2>>"$out/errors.txt" |
		sed -n 's/.*"step_nanos_median": *\([0-9]*\).*/\1/p' | awk 'NR == 1 { printf "%.4f", $1 / 1e9 }')
	log "$m: one GPU, PyTorch"
	theirs=$(timeout 60 python3 scripts/step_pytorch.py --device cuda --model "$m" "${theirs_size[@]}" \
		--steps 10 --warmup 3 2>>"$out/errors.txt" | tee -a "$out/pytorch.jsonl" |
		sed -n 's/.*"step_seconds_median": *\([0-9.eE+-]*\).*/\1/p' | awk 'NR == 1 { printf "%.4f", $1 }')
	ratio=$(awk -v a="$ours" -v b="$theirs" 'BEGIN { if (a != "" && b > 0) printf "%.2f", a / b }')
	echo "| $m | $ours | $theirs | $ratio |" >>"$out/steps.md"
done
cat "$out/steps.md" >&2

# 3. gpipe against coop for K = 1, 2, 4, with whatever time is left
#    (about 3 minutes).
left=$((470 - ($(date +%s) - start)))
log "sweep: gpipe and coop, K = 1, 2, 4 (${left} s left)"
if [ "$left" -gt 30 ]; then
	timeout -k 30 "$left" "$bin/pipecast" profile "${common[@]}" --model resnet50,vgg16bn,inceptionv3 \
		--devices 1,2,4 --schedule gpipe,coop --microbatches 4 --steps 5 --warmup 2 --rounds 1 \
		--output markdown >"$out/sweep.md" 2>>"$out/errors.txt"
	echo "sweep exit status $?" >>"$out/errors.txt"
fi
log "done: $(wc -l <"$out/runs.jsonl" 2>/dev/null || echo 0) records in $out/runs.jsonl"
