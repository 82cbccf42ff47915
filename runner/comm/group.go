package comm

import (
	"context"

	"github.com/pipecast/pipecast/tensor"
)

// Group is the processes of one multi-process run: rank r is device r.
// Besides the transfers of an Endpoint it offers what a run needs to act
// as one: barriers, gathering and broadcasting bytes, and small control
// messages such as clock ping-pongs.
type Group interface {
	Endpoint
	// Barrier returns once every rank has called it.
	Barrier(ctx context.Context) error
	// Gather returns, on root, every rank's data in rank order (nil
	// elsewhere).
	Gather(ctx context.Context, root int, data []byte) ([][]byte, error)
	// Broadcast returns root's data on every rank.
	Broadcast(ctx context.Context, root int, data []byte) ([]byte, error)
	// SendBytes and RecvBytes move small control messages by an integer
	// tag ≥ 0, apart from the tensor transfers' tags.
	SendBytes(ctx context.Context, to, tag int, data []byte) error
	RecvBytes(ctx context.Context, from, tag int) ([]byte, error)
	// Close frees the group's resources (not the library's).
	Close() error
}

// World is every process of the job.
type World interface {
	Group
	// Split returns, to the first n ranks, the Group of those ranks
	// (rank r stays r) and nil to the others; every rank of the world
	// calls it.
	Split(ctx context.Context, n int) (Group, error)
	// Library is the transport library's own version string, one line.
	Library() string
	// Host is this process's host (processor) name.
	Host() string
	// Finalize shuts the library down; nothing may use the world after.
	Finalize() error
}

// Reducer is an endpoint whose transport sums a tensor over its ranks
// itself, as MPI_Allreduce does, with the library's own algorithm for its
// network. The runner sums data-parallel replicas' gradients with it
// where the replicas' endpoint has it.
type Reducer interface {
	// AllReduceSum replaces t on every rank with the elementwise sum
	// of every rank's t, the same float32 values on all. Every rank
	// calls it with the same tag and as many elements, the calls of a
	// reducer in the same order on every rank; it does not check them.
	AllReduceSum(ctx context.Context, tag Tag, t *tensor.Tensor) error
}

// Splitter is a group that splits into groups by colour, as
// MPI_Comm_split does. Every rank calls SplitBy: the ranks of one colour
// (≥ 0) form a group, ordered by key and then by their rank here, and a
// rank of colour −1 joins none and gets nil.
type Splitter interface {
	SplitBy(ctx context.Context, color, key int) (Group, error)
}
