#!/usr/bin/env bash
# mpi-bench.sh compares pipecast's MPI transport with plain MPI: it builds
# scripts/pingpong.c (MPI_Send/MPI_Recv) with mpicc and cmd/mpibench (the
# same ping-pong over pipecast's mpi Endpoint, Send and Recv of CPU
# tensors) with the mpi build tag, runs each under mpirun with two ranks
# bound to cores, alternating, and prints one table: for each size the
# one-way latency and bandwidth of both and pipecast's share of C's
# bandwidth, each the median over the runs. Both sides keep the message in
# memory on transparent huge pages, as pipecast's CPU tensors are; with
# PAGES=4k both use 4 KiB pages instead.
#
#   scripts/mpi-bench.sh             # one run of each, about 10 seconds
#   RUNS=3 scripts/mpi-bench.sh      # the median of three
#   PAGES=4k scripts/mpi-bench.sh
#   PROFILE=0 scripts/mpi-bench.sh   # the ping-pong alone
#
# Then, unless PROFILE=0, it runs one round of the default `pipecast profile` (ResNet-50
# at width 0.25, 32×32, batch 16, 2 devices, gpipe and coop) in one process
# and as two processes under mpirun (--transport mpi), alternating, and
# prints each schedule's median step time both ways.
#
# Needs Open MPI's mpicc and mpirun (Debian: libopenmpi-dev, openmpi-bin).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RUNS:-1}
pages=${PAGES:-huge}
for tool in mpicc mpirun go; do
	command -v "$tool" >/dev/null || { echo "mpi-bench: $tool not found" >&2; exit 1; }
done

tmp=$(mktemp -d)
trap 'status=$?; if [ $status != 0 ] && [ -s "$tmp/err" ]; then cat "$tmp/err" >&2; fi; rm -rf "$tmp"' EXIT
mpicc -O2 -o "$tmp/pingpong" scripts/pingpong.c
go build -tags mpi -o "$tmp/mpibench" ./cmd/mpibench

launch=(mpirun -np 2 --bind-to core)
if [ "$(id -u)" = 0 ]; then
	launch+=(--allow-run-as-root)
fi
# Two ranks on a machine of fewer cores than that still run.
launch+=(--oversubscribe)
env=()
if [ "$pages" = 4k ]; then
	env=(-x PINGPONG_HUGEPAGES=off -x PIPECAST_CPU_HUGEPAGES=off)
fi

for ((i = 1; i <= runs; i++)); do
	# Alternate which goes first, so that drifts of the machine hit both.
	if ((i % 2)); then
		"${launch[@]}" ${env[@]+"${env[@]}"} "$tmp/pingpong" >"$tmp/c.$i"
		"${launch[@]}" ${env[@]+"${env[@]}"} "$tmp/mpibench" >"$tmp/go.$i"
	else
		"${launch[@]}" ${env[@]+"${env[@]}"} "$tmp/mpibench" >"$tmp/go.$i"
		"${launch[@]}" ${env[@]+"${env[@]}"} "$tmp/pingpong" >"$tmp/c.$i"
	fi
done

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
echo "CPU: $cpu ($(nproc) cores)"
echo "MPI: $(mpirun --version | head -1)"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "pages: $pages; median of $runs run(s); one way = half the median round trip; MB/s = 10^6 bytes/s"
echo

# Every file holds lines "size microseconds MB/s"; the table takes each
# cell's median over the runs.
awk -v runs="$runs" '
function median(key,    n, i, j, v, t) {
	n = split(vals[key], v, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
			t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
		}
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function human(b) {
	if (b >= 1048576) return (b / 1048576) " MiB"
	if (b >= 1024) return (b / 1024) " KiB"
	return b " B"
}
{
	side = FILENAME ~ /\/c\.[0-9]+$/ ? "c" : "go"
	if (!($1 in seen)) { seen[$1] = 1; sizes[++nsizes] = $1 }
	vals[side, "us", $1] = vals[side, "us", $1] " " $2
	vals[side, "bw", $1] = vals[side, "bw", $1] " " $3
}
END {
	printf "%-8s %12s %12s %14s %14s %8s\n", "size", "C µs", "C MB/s", "pipecast µs", "pipecast MB/s", "ratio"
	for (i = 1; i <= nsizes; i++) {
		s = sizes[i]
		cbw = median("c" SUBSEP "bw" SUBSEP s); gbw = median("go" SUBSEP "bw" SUBSEP s)
		printf "%-8s %12.3f %12.1f %14.3f %14.1f %8.2f\n", human(s),
			median("c" SUBSEP "us" SUBSEP s), cbw, median("go" SUBSEP "us" SUBSEP s), gbw, gbw / cbw
	}
	print ""
	print "ratio: pipecast'\''s bandwidth over C'\''s (1 = as fast)"
}' "$tmp"/c.* "$tmp"/go.*

if [ "${PROFILE:-1}" = 0 ]; then
	exit 0
fi
go build -tags mpi -o "$tmp/pipecast" ./cmd/pipecast
for ((i = 1; i <= runs; i++)); do
	if ((i % 2)); then
		"$tmp/pipecast" profile --rounds 1 --output csv >"$tmp/inproc.$i" 2>"$tmp/err"
		"${launch[@]}" "$tmp/pipecast" profile --rounds 1 --transport mpi --output csv >"$tmp/mpi.$i" 2>"$tmp/err"
	else
		"${launch[@]}" "$tmp/pipecast" profile --rounds 1 --transport mpi --output csv >"$tmp/mpi.$i" 2>"$tmp/err"
		"$tmp/pipecast" profile --rounds 1 --output csv >"$tmp/inproc.$i" 2>"$tmp/err"
	fi
done
echo
echo "default pipecast profile, median step of each run's 5, median over $runs run(s):"
awk -F, '
function median(key,    n, i, j, v, t) {
	n = split(vals[key], v, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
			t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
		}
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
FNR == 1 { for (c = 1; c <= NF; c++) col[$c] = c; next }
{
	side = FILENAME ~ /\/mpi\.[0-9]+$/ ? "mpi" : "in"
	s = $col["schedule"]
	if (!(s in seen)) { seen[s] = 1; scheds[++n] = s }
	vals[side, s] = vals[side, s] " " $col["step_nanos_median"]
}
END {
	printf "%-10s %16s %16s %8s\n", "schedule", "in-process ms", "mpi ms", "ratio"
	for (i = 1; i <= n; i++) {
		s = scheds[i]; a = median("in" SUBSEP s) / 1e6; b = median("mpi" SUBSEP s) / 1e6
		printf "%-10s %16.2f %16.2f %8.2f\n", s, a, b, b / a
	}
	print ""
	print "ratio: the MPI run'\''s step time over the in-process one'\''s (below 1: MPI faster)"
}' "$tmp"/inproc.* "$tmp"/mpi.*
