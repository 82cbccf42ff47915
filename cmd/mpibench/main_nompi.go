//go:build !mpi

// Command mpibench measures pipecast's MPI transport against a plain MPI
// ping-pong; it needs the mpi build tag (see scripts/mpi-bench.sh).
package main

import (
	"fmt"
	"os"

	"github.com/pipecast/pipecast/runner/comm/mpi"
)

func main() {
	_, err := mpi.Init()
	fmt.Fprintln(os.Stderr, "mpibench:", err)
	os.Exit(2)
}
