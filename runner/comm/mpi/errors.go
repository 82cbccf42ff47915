package mpi

import (
	"errors"
	"fmt"
)

// ErrNotBuilt is returned by Init in a build without the mpi tag.
var ErrNotBuilt = errors.New("built without the mpi tag: go build -tags mpi (needs Open MPI's libopenmpi-dev)")

// Error is a call of the MPI library that returned an error code.
type Error struct {
	Op   string // the MPI function, e.g. "MPI_Isend"
	Code int    // its return code
	Text string // MPI_Error_string of the code
}

// Error returns "MPI_Isend: MPI_ERR_TAG: invalid tag".
func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Op, e.Text) }
