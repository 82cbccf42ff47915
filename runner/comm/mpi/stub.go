//go:build !mpi

package mpi

import "github.com/pipecast/pipecast/runner/comm"

// Init fails in a build without the mpi tag, saying how to build with it:
// the default build never links the MPI library.
func Init() (comm.World, error) { return nil, ErrNotBuilt }
