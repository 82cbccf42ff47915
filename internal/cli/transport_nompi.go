//go:build !mpi

package cli

import (
	"errors"

	"github.com/pipecast/pipecast/runner/comm"
)

// mpiBuilt says whether this build has the MPI transport.
const mpiBuilt = false

func init() {
	openWorld = func() (comm.World, error) {
		return nil, errors.New("built without the mpi tag: go build -tags mpi (needs Open MPI's libopenmpi-dev)")
	}
}
