//go:build mpi

package cli

import "github.com/pipecast/pipecast/runner/comm/mpi"

// mpiBuilt says whether this build has the MPI transport.
const mpiBuilt = true

func init() { openWorld = mpi.Init }
