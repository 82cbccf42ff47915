#!/usr/bin/env bash
# profile-spread.sh measures how well the default `pipecast profile`
# repeats: it runs it REPS times with each of the given --rounds settings
# (interleaved: one run of every setting, then the next repetition, so a
# slow spell of the machine falls on all of them alike) and prints, for
# each setting and schedule, the repetitions' step medians, their spread
# (max − min over the median of them) and the command's median wall time.
#
# Usage: scripts/profile-spread.sh [REPS [ROUNDS…]]   (default: 5 1 3 5)
#        STEPS=N also passes --steps N to every run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/runs_origin.sh
reps=${1:-5}
shift || true
settings=("$@")
[[ ${#settings[@]} -eq 0 ]] && settings=(1 3 5)
if ! [[ "$reps" =~ ^[1-9][0-9]*$ ]]; then
	echo "profile-spread: REPS \"$reps\": want a positive whole number" >&2
	exit 2
fi
for r in "${settings[@]}"; do
	if ! [[ "$r" =~ ^[1-9][0-9]*$ ]]; then
		echo "profile-spread: ROUNDS \"$r\": want a positive whole number" >&2
		exit 2
	fi
done
extra=()
[[ -n "${STEPS:-}" ]] && extra=(--steps "$STEPS")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/pipecast" ./cmd/pipecast
for ((i = 1; i <= reps; i++)); do
	for r in "${settings[@]}"; do
		start=$(date +%s%N)
		"$tmp/pipecast" profile --rounds "$r" "${extra[@]}" --output csv --out "$tmp/r$r-$i" >"$tmp/r$r-$i.csv" 2>/dev/null
		echo $((($(date +%s%N) - start) / 1000000)) >"$tmp/r$r-$i.wall"
	done
done
echo "Default \`pipecast profile\` repeated $reps times per --rounds setting${STEPS:+ (--steps $STEPS)}; $(runs_origin "$tmp"/r*/runs.jsonl)"
echo
echo "| rounds | schedule | step medians (ms) | spread | wall (s) |"
echo "| -----: | -------- | ----------------- | -----: | -------: |"
for r in "${settings[@]}"; do
	wall=$(cat "$tmp"/r$r-*.wall | sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.2f", m/1000}')
	# the columns by name: schedule and step_nanos_median
	cols=$(head -n1 "$tmp/r$r-1.csv" | tr ',' '\n' | awk '$0 == "schedule" {s = NR} $0 == "step_nanos_median" {m = NR} END {print s, m}')
	read -r sc mc <<<"$cols"
	for s in $(tail -q -n +2 "$tmp"/r$r-*.csv | cut -d, -f"$sc" | sort -u); do
		tail -q -n +2 "$tmp"/r$r-*.csv | awk -F, -v s="$s" -v sc="$sc" -v mc="$mc" '$sc == s {print $mc}' | sort -n |
			awk -v r="$r" -v s="$s" -v wall="$wall" '{a[NR]=$1; l=l (NR>1?", ":"") sprintf("%.1f", $1/1e6)}
				END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "| %d | %s | %s | %.1f %% | %s |\n", r, s, l, 100*(a[NR]-a[1])/m, wall}'
	done
done
