#!/usr/bin/env bash
# paper-claims.sh checks the cooperative schedule's published claims at the
# paper's scale: with 4 devices, coop trains VGG16-BN 15.3 %, ResNet-50
# 34.5 % and Inception-v3 25.8 % faster than GPipe and uses up to 75 % less
# memory (C. Yu and K. Park, IEEE Access 11, 2023; the abstract's figures,
# the only ones public).
#
# For vgg16bn and resnet50 at 224×224 and inceptionv3 at 299×299 (width 1,
# 1000 classes, batch 8), it measures gpipe and coop runs on this machine
# at K = 1 and 2 (M = 2 and 4, partitions balanced by MACs), fits the
# predictor to them and forecasts K = 4, M = 4 for gpipe in every
# checkpoint mode and coop (d = 1). Each device is one of this machine's
# devices (1 thread), so K = 4 means four such devices, not four sharing
# this machine. Peak memory per device is exact (the schedule program run
# on the meta backend); step times are forecasts. It prints, per model,
# coop against each gpipe mode beside the paper's figures.
#
# Usage: scripts/paper-claims.sh [DIR]   (records kept in DIR, default a
# new temporary directory; a second call with the same DIR reuses the
# runs it holds). About 4–5 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/runs_origin.sh
dir=${1:-$(mktemp -d)}
mkdir -p "$dir"
pc="$dir/pipecast"
go build -o "$pc" ./cmd/pipecast

rows="$dir/rows.md"
: >"$rows"
for spec in vgg16bn:224:15.3 resnet50:224:34.5 inceptionv3:299:25.8; do
	IFS=: read -r model px claim <<<"$spec"
	runs="$dir/$model"
	echo "paper-claims: $model ${px}px: measuring K = 1, 2 (records in $runs)" >&2
	"$pc" profile --model "$model" --image "$px" --width 1 --batch 8 \
		--devices 1,2 --microbatches 2,4 --schedule gpipe,coop --balance macs \
		--steps 2 --warmup 1 --rounds 1 --out "$runs" --resume --output csv >/dev/null
	"$pc" predict --data "$runs/runs.jsonl" --devices 4 --microbatches 4 \
		--schedule gpipe,coop --checkpoint never,except-last,always --prefetch 1 \
		--output csv >"$runs/k4.csv"
	awk -F, -v model="$model" -v px="$px" -v claim="$claim" '
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		{
			s = $col["schedule"]; c = $col["checkpoint"]
			step = $col["step_nanos_median"] / 1e6; peak = $col["peak_bytes_max"] / 2^30
			if (s == "coop") { cstep = step; cpeak = peak } else { gstep[c] = step; gpeak[c] = peak }
		}
		END {
			n = split("never except-last always", modes, " ")
			for (i = 1; i <= n; i++) {
				m = modes[i]
				if (!(m in gstep)) continue
				printf "| %s | %s | %s | %.0f ms | %.0f ms | %+.1f %% | +%s %% | %.2f GiB | %.2f GiB | %+.0f %% | ≤ −75 %% |\n",
					model, px, m, gstep[m], cstep, (gstep[m] / cstep - 1) * 100, claim, gpeak[m], cpeak, (cpeak / gpeak[m] - 1) * 100
			}
		}' "$runs/k4.csv" >>"$rows"
done
echo "# coop against GPipe at K = 4, M = 4, batch 8: forecast from K = 1, 2 runs measured on $(runs_origin "$dir"/{vgg16bn,resnet50,inceptionv3}/runs.jsonl)"
echo
echo "| model | px | gpipe mode | gpipe step | coop step | coop speed-up | paper | gpipe peak/device | coop peak/device | coop memory | paper |"
echo "| --- | --: | --- | --: | --: | --: | --: | --: | --: | --: | --: |"
cat "$rows"
echo
echo "coop speed-up: how much faster coop's forecast step is than gpipe's in that mode (the paper's \"faster\"); coop memory: coop's largest device's peak against gpipe's (negative: less)."
