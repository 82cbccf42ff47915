//go:build mpi

package mpi

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/pipecast/pipecast/runner/comm"
)

// initialised records that Init ran: MPI initialises once per process.
var initialised sync.Once

// Init initialises the MPI library (MPI_Init_thread, asking for
// MPI_THREAD_MULTIPLE) and returns the world of the job this process
// belongs to, started by mpirun. A library that provides less than
// MPI_THREAD_SERIALIZED is refused, since goroutines move between
// threads; one that provides MPI_THREAD_SERIALIZED gets every call under
// one mutex. Errors on every communicator of the world and of the
// groups split from it return codes (MPI_ERRORS_RETURN) that become
// *Error values; none aborts the process. Init may be called once.
func Init() (comm.World, error) {
	err := errors.New("init mpi: already initialised in this process")
	var w comm.World
	initialised.Do(func() { w, err = initWorld() })
	return w, err
}

func initWorld() (comm.World, error) {
	provided, err := initThread()
	if err != nil {
		return nil, fmt.Errorf("init mpi: %w", err)
	}
	if provided < threadSerialized {
		_ = finalize()
		return nil, fmt.Errorf("init mpi: the library provides thread level %d, less than MPI_THREAD_SERIALIZED (%d)", provided, threadSerialized)
	}
	serialize = provided < threadMultiple
	world := worldCommunicator()
	if err := world.errorsReturn(); err != nil {
		return nil, fmt.Errorf("init mpi: %w", err)
	}
	about := &group{}
	if about.lib, err = libraryVersion(); err != nil {
		return nil, fmt.Errorf("init mpi: %w", err)
	}
	if about.host, err = processorName(); err != nil {
		return nil, fmt.Errorf("init mpi: %w", err)
	}
	if about.tagUB, err = tagUpperBound(); err != nil {
		return nil, fmt.Errorf("init mpi: %w", err)
	}
	// The world's group works on a duplicate of MPI_COMM_WORLD, which it
	// may then free like any group's.
	data, err := world.dup()
	if err != nil {
		return nil, fmt.Errorf("init mpi: %w", err)
	}
	w := &mpiWorld{}
	if w.group, err = newGroup(data, about); err != nil {
		return nil, fmt.Errorf("init mpi: %w", err)
	}
	return w, nil
}

// mpiWorld is the group of every process of the job.
type mpiWorld struct {
	*group
	finalized bool
}

var _ comm.World = (*mpiWorld)(nil)

// Split returns the group of the world's first n ranks to those ranks
// and nil to the others: after a barrier on the world (which honours
// ctx), MPI_Comm_split with MPI_UNDEFINED for ranks ≥ n. Rank r of the
// world is rank r of the group.
func (w *mpiWorld) Split(ctx context.Context, n int) (comm.Group, error) {
	wrap := func(err error) error { return fmt.Errorf("split the first %d of %d ranks: %w", n, w.size, err) }
	if n < 1 || n > w.size {
		return nil, wrap(errors.New("out of range"))
	}
	if err := w.Barrier(ctx); err != nil {
		return nil, wrap(err)
	}
	color := -1
	if w.rank < n {
		color = 0
	}
	// The barrier was the last of the control communicator's queue, so
	// every collective before it has started: the blocking split is next
	// on every rank.
	c, ok, err := w.ctl.split(color, w.rank)
	if err != nil {
		return nil, wrap(err)
	}
	if !ok {
		return nil, nil
	}
	g, err := newGroup(c, w.group)
	if err != nil {
		return nil, wrap(err)
	}
	return g, nil
}

// Finalize closes the world's group and ends the library
// (MPI_Finalize).
func (w *mpiWorld) Finalize() error {
	if w.finalized {
		return errors.New("finalize mpi: already finalized")
	}
	w.finalized = true
	err := w.Close()
	if ferr := finalize(); ferr != nil {
		err = errors.Join(err, ferr)
	}
	if err != nil {
		return fmt.Errorf("finalize mpi: %w", err)
	}
	return nil
}
