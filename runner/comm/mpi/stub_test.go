//go:build !mpi

package mpi

import (
	"errors"
	"testing"
)

func TestInitWithoutTheTag(t *testing.T) {
	w, err := Init()
	const want = "built without the mpi tag: go build -tags mpi (needs Open MPI's libopenmpi-dev)"
	if w != nil || !errors.Is(err, ErrNotBuilt) || err.Error() != want {
		t.Errorf("Init: got %v, %v, want nil and %q", w, err, want)
	}
}
