#!/usr/bin/env bash
# readme-figures.sh measures the README's figures again: one sweep of the
# default workload (resnet50 at width 0.25, 32×32, batch 16, K = 2, M = 4)
# under gpipe, coop, 1f1b, interleaved (v = 2) and zb-h1, drawn as their
# timelines on one time axis
# (docs/img/timelines.svg) and the coop run's memory over its first
# measured step (docs/img/memory.svg). About 10 seconds once built.
#
# Usage: scripts/readme-figures.sh [OUTDIR]   (default docs/img)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/img}
mkdir -p "$out"
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
go build -o "$runs/pipecast" ./cmd/pipecast
"$runs/pipecast" profile --schedule gpipe,coop,1f1b,interleaved,zb-h1 --virtual-stages 2 --rounds 1 --out "$runs" --output markdown
"$runs/pipecast" report "$runs/runs.jsonl" --output markdown --svg "$out/timelines.svg" >/dev/null
"$runs/pipecast" report "$runs/runs.jsonl" --schedule coop --output markdown --svg-memory "$out/memory.svg" >/dev/null
echo "readme-figures: wrote $out/timelines.svg and $out/memory.svg ($(date '+%Y-%m-%d'), $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //'))"
