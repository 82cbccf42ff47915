package comm

import (
	"context"
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// Tag names a transfer so that a receive matches exactly one send: the
// training step, what is carried, and the micro-batch or stage it belongs
// to. Two transfers between the same pair of devices never share a tag
// within a step.
type Tag struct {
	Step  int
	Kind  string // "activation", "gradient", "weights", "boundary", …
	Stage int
	Micro int
}

// String formats the tag for error messages.
func (t Tag) String() string {
	return fmt.Sprintf("step %d %s stage %d micro %d", t.Step, t.Kind, t.Stage, t.Micro)
}

// Endpoint is one device's side of a transport: rank r of Size ranks.
// Every transfer copies into memory of the receiving device that the
// receiver provides, and is counted in bytes. Methods block until their
// part is done, or until ctx is cancelled, which ends them with
// ctx.Err(); a transport whose peer failed must never leave a caller
// waiting forever. An Endpoint is used by one goroutine at a time.
type Endpoint interface {
	// Rank returns this endpoint's rank, 0 ≤ rank < Size.
	Rank() int
	// Size returns the number of ranks.
	Size() int
	// Send posts t to rank to under tag and returns without waiting for
	// the receiver. The transport holds a reference to t (Retain) until
	// the data is copied out, then releases it: the caller may release
	// its own reference at once.
	Send(ctx context.Context, to int, tag Tag, t *tensor.Tensor) error
	// Probe waits until the tensor that rank from sends under tag has
	// arrived, without receiving it (MPI_Probe), so that a caller can
	// tell time spent waiting for a peer from time spent copying.
	Probe(ctx context.Context, from int, tag Tag) error
	// Recv waits for the tensor that rank from sent under tag and copies
	// it into dst, which lives on the receiving device and has the same
	// number of elements.
	Recv(ctx context.Context, from int, tag Tag, dst *tensor.Tensor) error
	// AllGather is a collective over all ranks: each rank contributes
	// local (nil to contribute nothing) and receives every other rank's
	// contribution into dsts[r] (len(dsts) == Size; dsts[rank] and the
	// entries of ranks that contribute nothing are nil). Every rank must
	// call it with the same tag.
	AllGather(ctx context.Context, tag Tag, local *tensor.Tensor, dsts []*tensor.Tensor) error
	// AllToAll is a collective over all ranks: parts[k] (nil for nothing)
	// goes to rank k and lands in that rank's dsts[rank]; this rank's
	// dsts[p] receives what rank p sent it (nil when nothing is
	// expected). parts[rank] is copied locally into dsts[rank] and not
	// counted as moved. Every rank must call it with the same tag.
	AllToAll(ctx context.Context, tag Tag, parts []*tensor.Tensor, dsts []*tensor.Tensor) error
	// Stats returns the bytes this endpoint has sent and received so far.
	Stats() Stats
}

// Stats counts the bytes an endpoint moved between devices.
type Stats struct {
	SentBytes     int64
	ReceivedBytes int64
	Messages      int64 // point-to-point and collective pieces received
}
