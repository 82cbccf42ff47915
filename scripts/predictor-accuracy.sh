#!/usr/bin/env bash
# predictor-accuracy.sh prints the predictor's validation tables on the
# committed validation dataset (or DATA), one per holdout: each device
# count, each micro-batch size and five random folds held out in turn,
# forecast by the simulator and by the black-box baseline.
#
# Usage: scripts/predictor-accuracy.sh [DATA]
#        (default predictor/testdata/validation_runs.jsonl)
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:-predictor/testdata/validation_runs.jsonl}
go build -o "${TMPDIR:-/tmp}/pipecast-accuracy" ./cmd/pipecast
trap 'rm -f "${TMPDIR:-/tmp}/pipecast-accuracy"' EXIT
for holdout in devices microbatch random; do
	echo "## holdout: $holdout"
	echo
	"${TMPDIR:-/tmp}/pipecast-accuracy" predict --data "$data" --validate --holdout "$holdout" --seed 1 --output markdown
	echo
done
