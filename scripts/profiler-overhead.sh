#!/usr/bin/env bash
# profiler-overhead.sh measures what recording costs a training step: it
# runs BenchmarkStepRecording (every op and block timed and recorded) and
# BenchmarkStepNoRecording (nothing timed) COUNT times each
# and prints the median ns/op of each and the median ratio
# (on − off) / off in percent.
#
# Usage: scripts/profiler-overhead.sh [COUNT] [BENCHTIME]   (default 5, 1s)
set -euo pipefail
count=${1:-5}
benchtime=${2:-1s}
cd "$(dirname "$0")/.."
out=$(go test ./runner -run '^$' -bench '^BenchmarkStep(No)?Recording$' \
	-count "$count" -benchtime "$benchtime")
echo "$out" | grep '^BenchmarkStep' || true
echo "$out" | awk '
	/^BenchmarkStepRecording/   { on[n_on++] = $3 }
	/^BenchmarkStepNoRecording/ { off[n_off++] = $3 }
	function median(a, n,    i, j, t) {
		for (i = 1; i < n; i++)
			for (j = i; j > 0 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		return n % 2 ? a[int(n/2)] : (a[n/2-1] + a[n/2]) / 2
	}
	END {
		if (n_on == 0 || n_off == 0) { print "no benchmark results" > "/dev/stderr"; exit 1 }
		m_on = median(on, n_on); m_off = median(off, n_off)
		printf "recording on:  median %.0f ns/step over %d runs\n", m_on, n_on
		printf "recording off: median %.0f ns/step over %d runs\n", m_off, n_off
		printf "overhead: %+.2f %%\n", (m_on - m_off) / m_off * 100
	}'
