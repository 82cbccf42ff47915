#!/usr/bin/env bash
# schedules.sh compares the pipeline schedules the field compares.
#
# At torchvision's ResNet-50 (224×224, width 1, 1000 classes, batch 8,
# the paper-claims batch): GPipe (checkpointing every micro-batch but the
# last), the cooperative schedule (d = 1), 1F1B, Megatron-LM's
# interleaved 1F1B (v = 2), the zero-bubble ZB-H1 and ZB-H2 and the
# V-shaped ZB-V and DualPipeV. It measures every schedule on this machine
# at K = 1 and 2 (M = 2 and 4, partitions balanced by MACs, one thread
# per device), fits the predictor to those runs and forecasts K = 4 at
# M = 4 and 8. Peak memory per device is exact (the schedule program run
# on the meta backend); step times and bubbles are forecasts (the
# predictor's K = 1 → K = 2 forecasts of these schedules are validated on
# the schedules and vshape datasets, see docs/forecasts.md; K = 4 is not
# validated here).
#
# At a GPT-2 (width 0.25, 4 decoder layers, 64 tokens, a vocabulary of
# 2048, batch 16), whose 6 blocks are too few for the V's 8 stages at
# K = 4: 1F1B, ZB-H1, ZB-H2, ZB-V and DualPipeV measured at K = 2 (M = 4
# and 8, 5 rounds; the medians of the rounds).
#
# It prints two markdown tables, every schedule against 1F1B.
#
# Usage: scripts/schedules.sh [DIR]   (records kept in DIR, default a new
# temporary directory; a second call with the same DIR reuses the runs it
# holds). About 6 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/runs_origin.sh
dir=${1:-$(mktemp -d)}
mkdir -p "$dir"
pc="$dir/pipecast"
go build -o "$pc" ./cmd/pipecast
runs="$dir/resnet50"
schedules=gpipe,coop,1f1b,interleaved,zb-h1,zb-h2,zb-v,dualpipev

echo "schedules: resnet50 224px: measuring K = 1, 2 (records in $runs)" >&2
"$pc" profile --model resnet50 --image 224 --width 1 --batch 8 \
	--devices 1,2 --microbatches 2,4 --schedule "$schedules" --virtual-stages 2 \
	--balance macs --steps 2 --warmup 1 --rounds 1 --out "$runs" --resume --output csv >/dev/null
"$pc" predict --data "$runs/runs.jsonl" --devices 4 --microbatches 4,8 \
	--schedule "$schedules" --checkpoint except-last --prefetch 1 --virtual-stages 2 \
	--output csv >"$runs/k4.csv"

# table CSV prints a markdown table of the configurations of a pipecast
# CSV, every schedule against 1F1B at the same M.
table() {
	echo "| M | schedule | step | vs 1f1b | bubble | peak/device | vs 1f1b | moved/step |"
	echo "| --: | --- | --: | --: | --: | --: | --: | --: |"
	awk -F, '
		BEGIN {
			# Rows in the order of pipecast schedule names, gpipe by its modes.
			split("single gpipe coop 1f1b interleaved zb-h1 zb-h2 zb-v dualpipev", names, " ")
			for (i in names) rank[names[i]] = i
		}
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		{
			m = $col["microbatches"]; s = $col["schedule"]
			if (s == "interleaved") s = s " (v=" $col["virtual_stages"] ")"
			if (s == "gpipe") s = s " (" $col["checkpoint"] ")"
			if (s == "coop") s = s " (d=" $col["prefetch"] ")"
			key = m SUBSEP s
			if (!(m in seen)) { seen[m] = 1; ms[++nm] = m }
			if (!(key in step)) { order[m, ++n[m]] = s; r[m, n[m]] = rank[$col["schedule"]] }
			step[key] = $col["step_nanos_median"] / 1e6; bubble[key] = $col["bubble_fraction"] * 100
			peak[key] = $col["peak_bytes_max"] / 2^20; moved[key] = $col["moved_bytes_per_step"] / 2^20
			if ($col["schedule"] == "1f1b") { base[m] = step[key]; basepeak[m] = peak[key] }
		}
		END {
			for (i = 1; i <= nm; i++) {
				m = ms[i]
				for (j = 2; j <= n[m]; j++) # insertion sort by rank, stable
					for (l = j; l > 1 && r[m, l - 1] > r[m, l]; l--) {
						t = order[m, l]; order[m, l] = order[m, l - 1]; order[m, l - 1] = t
						t = r[m, l]; r[m, l] = r[m, l - 1]; r[m, l - 1] = t
					}
				for (j = 1; j <= n[m]; j++) {
					s = order[m, j]; key = m SUBSEP s
					printf "| %s | %s | %.0f ms | %.2f× | %.1f %% | %.0f MiB | %+.0f %% | %.1f MiB |\n",
						m, s, step[key], base[m] / step[key], bubble[key], peak[key], (peak[key] / basepeak[m] - 1) * 100, moved[key]
				}
			}
		}' "$1"
}

echo "# ResNet-50 224×224, batch 8, K = 4: forecast from K = 1, 2 runs measured on $(runs_origin "$runs/runs.jsonl")"
echo
table "$runs/k4.csv"
echo
echo "vs 1f1b: 1F1B's step over this one's (above 1: faster); bubble: the devices' mean idle time over the step; peak/device: the largest device's peak; vs 1f1b (memory): against 1F1B's largest device; moved/step: bytes all devices received per step."

gpt="$dir/gpt2"
echo "schedules: gpt2 ×0.25: measuring K = 2 (records in $gpt)" >&2
"$pc" profile --model gpt2 --width 0.25 --layers 4 --seq 64 --vocab 2048 --batch 16 \
	--devices 2 --microbatches 4,8 --schedule 1f1b,zb-h1,zb-h2,zb-v,dualpipev \
	--balance macs --steps 5 --warmup 1 --rounds 5 --out "$gpt" --resume --output csv >/dev/null
"$pc" report "$gpt/runs.jsonl" --output csv >"$gpt/k2.csv"
echo
echo "# GPT-2 ×0.25 (4 layers, 64 tokens, vocabulary 2048), batch 16, K = 2: measured on $(runs_origin "$gpt/runs.jsonl")"
echo
table "$gpt/k2.csv"
echo
echo "vs 1f1b as above; step: the median over the rounds."
