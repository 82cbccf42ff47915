#!/usr/bin/env bash
# forecast-live.sh measures on this machine what the predictor's
# K = 1 → K = 2 validation measures on the committed dataset: for
# resnet50 and vgg16bn (width 0.25, 32×32, batch 16, one thread per
# device; working sets larger than a core's L2) and a GPT-2 (width 0.25,
# 4 decoder layers, 64 tokens, a vocabulary of 2048, batch 16) it records
# a K = 1 sweep (single, gpipe, coop and 1f1b, and zb-h1 for GPT-2, at
# M = 1, 2, 4, 8 and, for vgg16bn and GPT-2, 16: resnet50 cannot train
# micro-batches of one sample at 32 px, where batch norm sees one value
# per channel) and a K = 2 sweep (gpipe, coop and 1f1b, and zb-h1 for
# GPT-2, at M = 2, 4, 8), each in ROUNDS interleaved rounds (pipecast
# profile --rounds), the two sweeps taking turns round by round; fits on
# the K = 1 records alone and forecasts the K = 2 ones (pipecast predict
# --validate --train). Per workload it
# prints the validation tables and a summary: MAPE, max error, Kendall
# τ, the noise floor (the configurations' odd rounds against their even
# rounds), how many forecasts lie outside their configuration's round
# spread, and PASS where MAPE ≤ 5 % and max error ≤ 10 %, or where
# neither is worse than the floor's, else MISS.
#
# With --replicas the second sweep is data-parallel instead: R = 2
# replicas of K = 1 (single, gpipe, coop and 1f1b at the K = 1 sweep's
# M), forecast from the same K = 1 records of one replica and their
# calibration of the replicas' gradient sums.
#
# With --straggler the second sweep runs on devices that differ: K = 2
# with device 1 computing twice as slowly (profile --straggler 1:2), its
# partition balanced by speed (--balance speed: device 1 gets about a
# third of the work), forecast from the same K = 1 records; a third
# sweep, taking its turn in every round, runs the same configurations
# balanced by time, as if the devices were alike, and the summary gives
# the step of each configuration by speed over by time: measured
# (medians of the rounds) and forecast from the K = 1 records (pipecast
# predict --straggler 1:2, each balance partitioning as the predictor
# does).
#
# Usage: scripts/forecast-live.sh [--quick] [--replicas|--straggler] [OUTDIR]
#   OUTDIR keeps the records (default a new temporary directory); a
#   second call with the same OUTDIR and settings reuses them (profile
#   --resume runs only what is missing) and prints again.
#   ROUNDS (default 5) and STEPS (default 5) set the rounds and measured
#   steps of every configuration; 2 warm-up steps each. WORKLOADS (a
#   space-separated subset of "resnet50 vgg16bn gpt2", default all) picks
#   the workloads.
#   --quick: resnet50 alone, M = 2 and 4, 2 rounds of 1 step after 1
#   warm-up step: a check that the script runs end to end, not of the
#   forecasts.
# Exit status: 0 when every workload passes (always with --quick), 1
# when one misses, 2 on bad arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/runs_origin.sh

usage() {
	echo "forecast-live.sh: $1 (usage: scripts/forecast-live.sh [--quick] [--replicas|--straggler] [OUTDIR])" >&2
	exit 2
}

quick=0
replicas=0
straggler=0
dir=""
for arg in "$@"; do
	case "$arg" in
	--quick) quick=1 ;;
	--replicas) replicas=1 ;;
	--straggler) straggler=1 ;;
	-*) usage "unknown option $arg" ;;
	*)
		[[ -z "$dir" ]] || usage "one OUTDIR at most, got $dir and $arg"
		dir=$arg
		;;
	esac
done

((replicas + straggler < 2)) || usage "--replicas and --straggler: one at a time"
rounds=${ROUNDS:-5}
steps=${STEPS:-5}
warmup=2
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || usage "ROUNDS=$rounds: need a whole number of at least 1"
[[ "$steps" =~ ^[1-9][0-9]*$ ]] || usage "STEPS=$steps: need a whole number of at least 1"
workloads=(resnet50 vgg16bn gpt2)
declare -A k1_micro=([resnet50]=1,2,4,8 [vgg16bn]=1,2,4,8,16 [gpt2]=1,2,4,8,16)
k2_micro=2,4,8
# Each workload's sizes, and the schedules its sweeps add to single (K =
# 1), gpipe, coop and 1f1b.
declare -A sizes=([resnet50]="--width 0.25 --image 32" [vgg16bn]="--width 0.25 --image 32"
	[gpt2]="--width 0.25 --layers 4 --seq 64 --vocab 2048")
declare -A extra=([resnet50]= [vgg16bn]= [gpt2]=,zb-h1)
if [[ -n "${WORKLOADS:-}" ]]; then
	read -r -a workloads <<<"$WORKLOADS"
	for w in "${workloads[@]}"; do
		[[ -n "${sizes[$w]:-}" ]] || usage "WORKLOADS: unknown workload $w (want some of resnet50 vgg16bn gpt2)"
	done
fi
if ((quick)); then
	rounds=2 steps=1 warmup=1
	workloads=(resnet50)
	k1_micro[resnet50]=2,4
	k2_micro=2,4
fi

if [[ -z "$dir" ]]; then
	dir=$(mktemp -d)
elif [[ -e "$dir" && ! -d "$dir" ]]; then
	usage "OUTDIR $dir: not a directory"
fi
mkdir -p "$dir"
# Records of other settings in the same files would mix configurations
# measured differently: refuse them.
settings="quick=$quick rounds=$rounds steps=$steps warmup=$warmup"
if ((replicas)); then
	settings+=" replicas"
fi
if ((straggler)); then
	settings+=" straggler"
fi
if [[ -f "$dir/settings" && "$(cat "$dir/settings")" != "$settings" ]]; then
	usage "$dir holds records measured with $(cat "$dir/settings"), not $settings; give another OUTDIR"
fi
echo "$settings" >"$dir/settings"

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
pc="$bin/pipecast"
go build -o "$pc" ./cmd/pipecast

# sweep MODEL K MICRO SCHEDULES ROUND [R [SLOW]]: records the sweep's
# rounds up to ROUND into $dir/MODEL/kK, with R replicas $dir/MODEL/rRkK,
# with SLOW (time or speed) device 1 a straggler of factor 2 balanced by
# SLOW into $dir/MODEL/kK-slow-SLOW (profile --resume runs only those
# missing).
sweep() {
	local r=${6:-1} slow=${7:-} out="$dir/$1/k$2"
	local more=()
	if ((r > 1)); then
		out="$dir/$1/r${r}k$2"
	fi
	if [[ -n "$slow" ]]; then
		out="$dir/$1/k$2-slow-$slow"
		more=(--straggler 1:2 --balance "$slow")
	fi
	echo "forecast-live: $1 R = $r, K = $2, M = $3, $4${slow:+, straggler 1:2 by $slow}: round $5 of $rounds (records in $out)" >&2
	# shellcheck disable=SC2086 # the sizes split on spaces
	"$pc" profile --model "$1" ${sizes[$1]} --batch 16 --threads 1 \
		--devices "$2" --replicas "$r" --microbatches "$3" --schedule "$4" \
		--rounds "$5" --steps "$steps" --warmup "$warmup" "${more[@]}" \
		--out "$out" --resume --output csv >/dev/null
}

# ratios A B: for each configuration (schedule, M) of the report of
# dataset B, its median step over the same configuration's in A.
ratios() {
	"$pc" report "$1" --output csv >"$dir/a.csv"
	"$pc" report "$2" --output csv >"$dir/b.csv"
	ratio_columns
}

# forecast_ratios MODEL: ratios of the forecasts of the straggler sweep
# by speed over by time, from the K = 1 records.
forecast_ratios() {
	local b
	for b in time speed; do
		"$pc" predict --data "$dir/$1/k1/runs.jsonl" --devices 2 --microbatches "$k2_micro" \
			--schedule "gpipe,coop,1f1b${extra[$1]}" --straggler 1:2 --balance "$b" --output csv >"$dir/$b.csv"
	done
	mv "$dir/time.csv" "$dir/a.csv"
	mv "$dir/speed.csv" "$dir/b.csv"
	ratio_columns
}

# ratio_columns joins $dir/a.csv and $dir/b.csv on schedule and M.
ratio_columns() {
	awk -F, '
		FNR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		{ key = $col["schedule"] " M=" $col["microbatches"] }
		FILENAME ~ /a.csv$/ { a[key] = $col["step_nanos_median"]; next }
		key in a { printf "%s%s %.2f×", sep, key, $col["step_nanos_median"] / a[key]; sep = ", " }
		END { print "" }' "$dir/a.csv" "$dir/b.csv"
}

status=0
summaries=()
for model in "${workloads[@]}"; do
	# The K = 1 and K = 2 sweeps take turns, a round of each, so that a
	# change in the machine's load between them falls on both: measured
	# one after the other, a slow spell during either sweep would read
	# as a forecast error.
	for ((r = 1; r <= rounds; r++)); do
		sweep "$model" 1 "${k1_micro[$model]}" "single,gpipe,coop,1f1b${extra[$model]}" "$r"
		if ((replicas)); then
			sweep "$model" 1 "${k1_micro[$model]}" "single,gpipe,coop,1f1b${extra[$model]}" "$r" 2
		elif ((straggler)); then
			sweep "$model" 2 "$k2_micro" "gpipe,coop,1f1b${extra[$model]}" "$r" 1 speed
			sweep "$model" 2 "$k2_micro" "gpipe,coop,1f1b${extra[$model]}" "$r" 1 time
		else
			sweep "$model" 2 "$k2_micro" "gpipe,coop,1f1b${extra[$model]}" "$r"
		fi
	done
	k1="$dir/$model/k1/runs.jsonl" k2="$dir/$model/k2/runs.jsonl"
	target="K = 2"
	if ((replicas)); then
		k2="$dir/$model/r2k1/runs.jsonl" target="R = 2 × K = 1"
	elif ((straggler)); then
		k2="$dir/$model/k2-slow-speed/runs.jsonl" target="K = 2, device 1 ×2 slower, balanced by speed,"
	fi
	echo "## $model: $target forecast from K = 1"
	echo
	"$pc" predict --validate --train "$k1" --data "$k2" --output markdown
	echo
	"$pc" predict --validate --train "$k1" --data "$k2" --output csv >"$dir/$model/validate.csv"
	# The row "all" of the summary, by column name.
	line=$(awk -F, -v model="$model" -v quick="$quick" '
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		$col["schedule"] == "all" {
			mape = 100 * $col["mape"]; mx = 100 * $col["max_err"]
			fm = $col["floor_mape"]; fx = $col["floor_max"]
			tau = $col["kendall_tau"] == "" ? "—" : sprintf("%.2f", $col["kendall_tau"])
			floor = "no configuration measured in two rounds"
			if (fm != "") floor = sprintf("%.1f %%, max %.1f %%", 100 * fm, 100 * fx)
			if (mape <= 5 && mx <= 10) verdict = "PASS (MAPE ≤ 5 %, max ≤ 10 %)"
			else if (fm != "" && mape <= 100 * fm && mx <= 100 * fx) verdict = "PASS (no worse than the floor)"
			else verdict = "MISS"
			if (quick) verdict = verdict " (--quick: not a check of the forecasts)"
			printf "%s: MAPE %.1f %%, max error %.1f %%, τ %s; floor MAPE %s; %d of %d forecasts outside their round spread: %s\n",
				model, mape, mx, tau, floor, $col["outside"], $col["judged"], verdict
		}' "$dir/$model/validate.csv")
	if ((straggler)); then
		line+="; step by speed over by time, measured: $(ratios "$dir/$model/k2-slow-time/runs.jsonl" "$k2")"
		line+="; forecast: $(forecast_ratios "$model")"
	fi
	summaries+=("$line")
	if [[ "$line" == *": MISS"* ]] && ((!quick)); then
		status=1
	fi
done

echo "## Summary: $target forecast from K = 1 records of $(runs_origin "$dir"/*/k1/runs.jsonl)"
echo
for s in "${summaries[@]}"; do
	echo "- $s"
done
echo
echo "Records in $dir."
exit "$status"
