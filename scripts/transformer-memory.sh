#!/usr/bin/env bash
# transformer-memory.sh prints the tables of docs/transformer-memory.md:
# pipecast's exact activation memory of one decoder layer beside
# Korthikanti et al.'s formula (16-bit, and in float32), and every
# device's peak by category in two whole-model plans beside Megatron-LM's
# theoretical memory in float32.
#
# pipecast's numbers come from its own commands (pipecast models for a
# layer: the activation bytes per sample at 2 layers less those at 1;
# pipecast plan --by-device for the devices), replays on the meta
# backend: exact, and the same on any machine but for the kernels'
# scratch (workspace), which follows the threads per device (the cores
# over K). The closed forms are computed here from each model's
# published config.json. `go test ./predictor -run ClosedForm` checks
# that the difference between the two is exactly the page's terms.
#
# Usage: scripts/transformer-memory.sh   (about 10 s once built)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
pc="$dir/pipecast"
go build -o "$pc" ./cmd/pipecast

rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$(git status --porcelain 2>/dev/null)" ] && rev="$rev with local changes"
cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
echo "pipecast $rev; $(nproc)-core ${cpu:-unknown CPU}; $(date -u +%F)"
echo

# c formats a byte count with thousands separators (mawk's printf has no %'d).
commas='function c(x,  s, out) {
	s = sprintf("%.0f", x); out = ""
	if (x < 0) { s = substr(s, 2) }
	while (length(s) > 3) { out = "," substr(s, length(s) - 2) out; s = substr(s, 1, length(s) - 3) }
	return (x < 0 ? "-" : "") s out
}'

# model seq hidden heads kv-heads intermediate
shapes="gpt2 1024 768 12 12 3072
gpt2-xl 1024 1600 25 25 6400
tinyllama-1.1b 2048 2048 32 4 5632
llama2-7b 4096 4096 32 32 11008"

# layerSaved MODEL SEQ prints one decoder layer's saved bytes per sample.
layerSaved() {
	local one two
	one=$("$pc" models --seq "$2" --layers 1 --output csv | awk -F, -v m="$1" '$1 == m { print $5 }')
	two=$("$pc" models --seq "$2" --layers 2 --output csv | awk -F, -v m="$1" '$1 == m { print $5 }')
	echo $((two - one))
}

echo "## One decoder layer, micro-batch b = 1 (bytes)"
echo
echo "| model | s | Korthikanti, 16-bit | in float32 | pipecast | pipecast − float32 |"
echo "| --- | --: | --: | --: | --: | --: |"
while read -r model s h a g i; do
	saved=$(layerSaved "$model" "$s")
	awk -v m="$model" -v s="$s" -v h="$h" -v a="$a" -v p="$saved" "$commas"'BEGIN {
		sbh = s * h; as2 = a * s * s
		k16 = sbh * 34 + 5 * as2          # 2-byte values 32sbh + 4as²b, masks 2sbh + as²b
		k32 = 2 * (32 * sbh + 4 * as2) + (2 * sbh + as2)
		printf "| %s | %d | %s | %s | %s | %s |\n", m, s, c(k16), c(k32), c(p), c(p - k32)
	}'
done <<<"$shapes"

# devices TITLE MEGATRON-ARGS PLAN-ARGS… prints a plan's devices and
# Megatron's estimate of its most loaded device. MEGATRON-ARGS: "s b h
# heads kv ffn layers vocab pp microbatches norm-params swiglu tied".
devices() {
	local title=$1 meg=$2
	shift 2
	echo
	echo "## $title"
	echo
	echo '```'
	echo "pipecast plan $* --by-device --output csv"
	echo '```'
	echo
	echo "| device | blocks | params | weights + gradients + AdamW | activations | boundary | comm | workspace | peak | peak GiB |"
	echo "| --: | --- | --: | --: | --: | --: | --: | --: | --: | --: |"
	"$pc" plan "$@" --by-device --output csv 2>/dev/null | awk -F, "$commas"'
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		{
			state = $col["peak_weights_bytes"] + $col["peak_gradients_bytes"] + $col["peak_optimizer_bytes"]
			printf "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %.2f |\n", $col["device"], $col["blocks"],
				c($col["params"]), c(state), c($col["peak_activations_bytes"]), c($col["peak_boundary_bytes"]),
				c($col["peak_comm_bytes"]), c($col["peak_workspace_bytes"]), c($col["peak_bytes"]), $col["peak_bytes"] / 2^30
		}'
	echo
	# Megatron-LM's megatron/training/theoretical_memory_usage.py,
	# compute_weight_and_optimizer_memory and compute_activation_memory,
	# in float32: 16 bytes a parameter (weights 4, gradients 4, AdamW's
	# moments 8); the layer's 18 + 4·ffn/h 16-bit bytes a token and
	# hidden unit, of which 2 are dropout masks, become 34 + 8·ffn/h; the
	# ids keep 8 bytes (int64), the embedding's dropout mask 1, the
	# output layer's 4·s·b·h·(1 + V/h) (already 4 bytes) stays.
	read -r s b h a g ffn L V pp M norm swiglu tied <<<"$meg"
	awk -v s="$s" -v b="$b" -v h="$h" -v a="$a" -v g="$g" -v ffn="$ffn" -v L="$L" -v V="$V" \
		-v pp="$pp" -v M="$M" -v norm="$norm" -v swiglu="$swiglu" -v tied="$tied" "$commas"'BEGIN {
		gl = swiglu ? 1.5 : 1
		layer = 2 * h * (ffn * gl + norm) + 2 * h * h * (1 + g / a)
		block = L * layer + norm * h
		emb = h * V
		params = block / pp + emb
		if (!tied && pp == 1) params += emb
		act = L * s * b * h * (34 + 8 * ffn / h) + 8 * s * b * pp + s * b * h * pp
		if (pp > 1) act *= (M < pp ? M / pp : 1)
		if (pp == 1) act += 4 * s * b * h * (1 + V / h)
		printf "Megatron-LM, float32, most loaded device: %s parameters, weights + gradients + AdamW %s, activations %s (%.2f GiB), total %s (%.2f GiB)\n",
			c(params), c(16 * params), c(act), act / 2^30, c(16 * params + act), (16 * params + act) / 2^30
	}'
}

devices "gpt2, seq 1024, batch 1, K = 1" "1024 1 768 12 12 3072 12 50257 1 1 2 0 1" \
	--model gpt2 --seq 1024 --batch 1 --devices 1 --schedule single --microbatches 1
devices "llama2-7b, seq 4096, batch 8, K = 8, 1f1b, M = 8" "4096 1 4096 32 32 11008 32 32000 8 8 1 1 0" \
	--model llama2-7b --seq 4096 --batch 8 --devices 8 --schedule 1f1b --microbatches 8 --partition 5,4,4,4,4,4,4,5
