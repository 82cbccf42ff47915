//go:build mpi

// Command mpibench measures pipecast's MPI transport with a ping-pong
// between two ranks, as scripts/pingpong.c measures plain MPI_Send and
// MPI_Recv: a CPU tensor goes from rank 0 to rank 1 with Endpoint.Send
// and Recv and comes back in the same tensor. For each size it prints
//
//	size_bytes one_way_microseconds megabytes_per_second
//
// where one way is half the median round trip and the bandwidth is the
// size over one way (10⁶ bytes per second). scripts/mpi-bench.sh runs
// both and prints them side by side:
//
//	go build -tags mpi ./cmd/mpibench
//	mpirun -np 2 ./mpibench [-max bytes]
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	var o options
	flag.Int64Var(&o.maxBytes, "max", 4<<20, "largest message in bytes")
	flag.IntVar(&o.rounds, "rounds", 0, "round trips timed per size (0: from 20000 for small messages down to 200)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write rank 0's CPU profile to `file`")
	flag.Parse()
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mpibench:", err)
		os.Exit(1)
	}
}
