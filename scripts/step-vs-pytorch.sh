#!/usr/bin/env bash
# step-vs-pytorch.sh times one single-device training step (forward, mean
# cross entropy, backward, the optimizer's update) of pipecast and of
# PyTorch on the same networks, side by side in one run: resnet50 at 64×64
# batch 32, vgg16bn at 64×64 batch 16 and inceptionv3 at 96×96 batch 16,
# width 1, 10 classes, SGD with momentum; and gpt2 at width 1 with 4
# decoder layers, sequences of 128 tokens, batch 4, its 50257-token
# vocabulary and AdamW; on --threads threads. For each model it runs pipecast
# (`pipecast profile --schedule single`, the median of --steps steps after
# one warm-up) and then PyTorch (scripts/step_pytorch.py, the same), and
# prints a markdown table: seconds per step of each and their ratio
# (pipecast / PyTorch; above 1: pipecast is slower). PyTorch's column is
# left empty where /usr/bin/python3 cannot import torch and torchvision
# (Debian: apt-get install python3-torch python3-torchvision
# libopenblas0-pthread — without an optimised BLAS, Debian's torch runs
# its matrix products on the reference BLAS, ten times slower, and the
# script refuses to compare).
#
# With PIPECAST_GEMM_KERNEL=avx2 (pipecast's AVX2 kernel on a CPU that has
# AVX-512) PyTorch's oneDNN is capped at AVX2 too (ONEDNN_MAX_CPU_ISA=AVX2,
# unless set), so that both run as they would on an AVX2-only CPU; the
# header says which ISA each ran.
#
# Usage: scripts/step-vs-pytorch.sh [flags]
#   --steps N        measured steps of each run (default 3)
#   --threads N      threads of both (default 2)
#   --models LIST    comma-separated subset of resnet50,vgg16bn,inceptionv3,gpt2
#   --rounds N       measure every model N times in turn (default 1): each
#                    cell is then the median of the rounds, the ratio the
#                    median of the rounds' own ratios (which pair each
#                    model's two sides in time), and a last column lists
#                    those ratios; a shared machine's speed drifts by
#                    more than the differences measured
#   --openblas       add a column: pipecast with OpenBLAS's GEMM (the
#                    openblas backend; needs libopenblas-dev and cgo), run
#                    with OPENBLAS_THREAD_TIMEOUT=20 unless set, so that
#                    OpenBLAS's idle workers stop spinning within about
#                    0.4 ms rather than 0.1 s and leave the cores to the
#                    pool's kernels that follow a product in the same
#                    process
#   --profile        profile each pipecast run: a CPU profile by function
#                    (perf record, where perf works) whose top functions
#                    it prints, self time and, for the CPU backend's
#                    functions, time including callees; and pipecast's own
#                    profile of the run by block and op (--pprof), whose
#                    top it prints too
#   --out DIR        where profiles go (default: a new directory in /tmp)
#   --pipecast BIN   a pipecast binary to run instead of building one
set -euo pipefail
cd "$(dirname "$0")/.."

steps=3
rounds=1
threads=2
models=resnet50,vgg16bn,inceptionv3,gpt2
openblas=0
profile=0
out=
bin=
python=/usr/bin/python3
# PyTorch's oneDNN runs the ISA pipecast's kernel runs (see above).
torch_isa=${ONEDNN_MAX_CPU_ISA:-ALL}
if [ "${PIPECAST_GEMM_KERNEL:-}" = avx2 ] && [ -z "${ONEDNN_MAX_CPU_ISA:-}" ]; then
	torch_isa=AVX2
fi
torch_isa_note="the fastest"
[ "$torch_isa" != ALL ] && torch_isa_note="capped at $torch_isa"
while [ $# -gt 0 ]; do
	case "$1" in
	--steps) steps=$2; shift 2 ;;
	--threads) threads=$2; shift 2 ;;
	--models) models=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--openblas) openblas=1; shift ;;
	--profile) profile=1; shift ;;
	--out) out=$2; shift 2 ;;
	--pipecast) bin=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "step-vs-pytorch: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done

case $rounds in '' | *[!0-9]* | 0) echo "step-vs-pytorch: --rounds $rounds: want a positive whole number" >&2; exit 2 ;; esac
case $steps in '' | *[!0-9]* | 0) echo "step-vs-pytorch: --steps $steps: want a positive whole number" >&2; exit 2 ;; esac

# Each model's input size and batch, and the size flags both sides take:
# a CNN's image and classes, a language model's sequence and layers.
declare -A image=([resnet50]=64 [vgg16bn]=64 [inceptionv3]=96 [gpt2]=)
declare -A batch=([resnet50]=32 [vgg16bn]=16 [inceptionv3]=16 [gpt2]=4)
declare -A size=([resnet50]="--image 64 --classes 10" [vgg16bn]="--image 64 --classes 10"
	[inceptionv3]="--image 96 --classes 10" [gpt2]="--seq 128 --layers 4")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "$bin" ]; then
	tags=()
	[ "$openblas" = 1 ] && tags=(-tags openblas)
	bin="$tmp/pipecast"
	go build ${tags[@]+"${tags[@]}"} -o "$bin" ./cmd/pipecast
fi
if [ "$openblas" = 1 ] && ! "$bin" version 2>/dev/null | grep -qw openblas; then
	echo "step-vs-pytorch: $bin has no openblas backend (build it with -tags openblas; needs libopenblas-dev)" >&2
	exit 1
fi
torch=0
if "$python" -c 'import torch, torchvision' 2>/dev/null; then
	torch=1
	blas=$("$python" -c 'import torch; print(torch.__config__.show())' 2>/dev/null | sed -n 's/.*BLAS_INFO=\([^,]*\).*/\1/p')
	if [ "$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null)" = /usr/lib/x86_64-linux-gnu/blas/libblas.so.3 ]; then
		echo "step-vs-pytorch: PyTorch's BLAS (${blas:-unknown}) resolves to the reference BLAS: install libopenblas0-pthread so that it compares with an optimised one" >&2
		exit 1
	fi
else
	echo "step-vs-pytorch: $python cannot import torch and torchvision: timing pipecast alone" >&2
fi
perf=()
if [ "$profile" = 1 ]; then
	out=${out:-$(mktemp -d /tmp/step-vs-pytorch.XXXXXX)}
	mkdir -p "$out"
	if perf record -q -o "$tmp/probe.data" -- true >/dev/null 2>&1; then
		perf=(perf record -q -F 499 -g)
	else
		echo "step-vs-pytorch: perf record does not work here: profiles by block and op only" >&2
	fi
fi

# pipecast_step MODEL BACKEND [PROFILE] prints the median seconds per step;
# with PROFILE it writes PROFILE.pprof and, with perf, PROFILE.perf.data.
pipecast_step() {
	local extra=() rec=()
	if [ -n "${3:-}" ]; then
		extra=(--pprof "$3.pprof")
		[ ${#perf[@]} -gt 0 ] && rec=("${perf[@]}" -o "$3.perf.data" --)
	fi
	# shellcheck disable=SC2086 # the size flags split on spaces
	${rec[@]+"${rec[@]}"} "$bin" profile --model "$1" --backend "$2" ${size[$1]} --batch "${batch[$1]}" \
		--width 1 --devices 1 --microbatches 1 --schedule single \
		--threads "$threads" --steps "$steps" --warmup 1 --rounds 1 --balance params --output json \
		${extra[@]+"${extra[@]}"} |
		sed -n 's/.*"step_nanos_median": *\([0-9]*\).*/\1/p' |
		awk 'NR == 1 { printf "%.3f", $1 / 1e9 }'
}

# pytorch_step MODEL prints the median seconds per step.
pytorch_step() {
	# shellcheck disable=SC2086
	"$python" scripts/step_pytorch.py --model "$1" ${size[$1]} --batch "${batch[$1]}" \
		--threads "$threads" --steps "$steps" --warmup 1 |
		sed -n 's/.*"step_seconds_median": *\([0-9.eE+-]*\).*/\1/p' |
		awk 'NR == 1 { printf "%.3f", $1 }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b > 0) printf "%.2f", a / b }'; }

# median DIGITS VALUE... prints the median of the values with DIGITS
# decimals (3 for seconds, 2 for ratios), nothing when there are none.
median() {
	local digits=$1
	shift
	printf '%s\n' "$@" | awk -v d="$digits" 'NF { v[n++] = $1 } END {
		if (n == 0) exit
		for (i = 1; i < n; i++) for (j = i; j > 0 && v[j-1] > v[j]; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
		m = n % 2 ? v[(n-1)/2] : (v[n/2-1] + v[n/2]) / 2
		printf "%.*f", d, m
	}'
}

IFS=, read -r -a list <<<"$models"
for m in "${list[@]}"; do
	if [ -z "${size[$m]:-}" ]; then
		echo "step-vs-pytorch: unknown model $m" >&2
		exit 2
	fi
done
declare -A ours theirs obs ratios obratios
for ((r = 1; r <= rounds; r++)); do
	for m in "${list[@]}"; do
		echo "step-vs-pytorch: round $r of $rounds, $m (${size[$m]}) batch ${batch[$m]}: pipecast" >&2
		prof=
		[ "$profile" = 1 ] && [ "$r" = 1 ] && prof="$out/$m"
		a=$(pipecast_step "$m" cpu "$prof")
		b=
		if [ "$torch" = 1 ]; then
			echo "step-vs-pytorch: $m: PyTorch" >&2
			b=$(ONEDNN_MAX_CPU_ISA=$torch_isa pytorch_step "$m")
		fi
		ours[$m]="${ours[$m]:-} $a"
		theirs[$m]="${theirs[$m]:-} $b"
		ratios[$m]="${ratios[$m]:-} $(ratio "$a" "$b")"
		if [ "$openblas" = 1 ]; then
			echo "step-vs-pytorch: $m: pipecast with OpenBLAS" >&2
			o=$(OPENBLAS_THREAD_TIMEOUT=${OPENBLAS_THREAD_TIMEOUT:-20} pipecast_step "$m" openblas)
			obs[$m]="${obs[$m]:-} $o"
			obratios[$m]="${obratios[$m]:-} $(ratio "$o" "$b")"
		fi
	done
done
rows=()
for m in "${list[@]}"; do
	# shellcheck disable=SC2086 # the lists split on spaces
	row="| $m | ${image[$m]:-seq 128} | ${batch[$m]} | $(median 3 ${ours[$m]}) | $(median 3 ${theirs[$m]}) | $(median 2 ${ratios[$m]}) |"
	if [ "$openblas" = 1 ]; then
		# shellcheck disable=SC2086
		row="$row $(median 3 ${obs[$m]}) | $(median 2 ${obratios[$m]}) |"
	fi
	if [ "$rounds" -gt 1 ]; then
		# shellcheck disable=SC2086
		row="$row $(echo ${ratios[$m]} | sed 's/ /, /g') |"
	fi
	rows+=("$row")
done

# caches prints CPU 0's data and unified caches as sysfs gives them.
caches() {
	local d out=""
	for d in /sys/devices/system/cpu/cpu0/cache/index*; do
		[ -r "$d/size" ] || continue
		case $(cat "$d/type") in Instruction) continue ;; Data) t=d ;; *) t= ;; esac
		out="$out${out:+, }L$(cat "$d/level")$t $(cat "$d/size")"
	done
	echo "${out:-unknown}"
}

echo
echo "$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //'), $threads threads, $steps measured steps (median), $rounds round(s), $(date '+%Y-%m-%d')"
echo
echo "ISA: $(grep -m1 -o -w -E 'avx512f|avx2|fma' /proc/cpuinfo 2>/dev/null | sort -u | tr '\n' ' ')(GEMM kernel ${PIPECAST_GEMM_KERNEL:-the fastest}; PyTorch's oneDNN ${torch_isa_note}); caches: $(caches)"
echo
head="| model | px / tokens | batch | pipecast s/step | PyTorch s/step | ratio |"
rule="| --- | --: | --: | --: | --: | --: |"
if [ "$openblas" = 1 ]; then
	head="$head pipecast+OpenBLAS s/step | ratio |"
	rule="$rule --: | --: |"
fi
if [ "$rounds" -gt 1 ]; then
	head="$head each round's ratio |"
	rule="$rule --- |"
fi
echo "$head"
echo "$rule"
printf '%s\n' "${rows[@]}"

if [ "$profile" = 1 ]; then
	for m in "${list[@]}"; do
		if [ -f "$out/$m.perf.data" ]; then
			echo
			echo "## $m: functions by self time ($out/$m.perf.data, warm-up step and model build included)"
			perf report -i "$out/$m.perf.data" --stdio --no-children -g none --sort symbol \
				--percent-limit 0.5 2>/dev/null | grep -v '^#' | grep -v '^$' | sed 's/[ -]*$//' | head -30
			echo
			echo "## $m: the CPU backend's functions, time including callees"
			perf report -i "$out/$m.perf.data" --stdio --children -g none --sort symbol \
				2>/dev/null | grep 'tensor/cpu\.' | sed 's/[ -]*$//' | head -30
		fi
		echo
		echo "## $m: measured steps by block and op ($out/$m.pprof)"
		go tool pprof -top -nodecount=30 "$out/$m.pprof" 2>/dev/null | sed -n '/^ *flat/,$p'
	done
	echo
	echo "profiles: $out (perf report -i $out/<model>.perf.data; go tool pprof -http=: $out/<model>.pprof)"
fi
