//go:build mpi

package mpi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
)

var (
	_ comm.Reducer  = (*group)(nil)
	_ comm.Splitter = (*group)(nil)
)

// AllReduceSum sums t over the group's ranks in place, with
// MPI_Iallreduce (MPI_IN_PLACE, MPI_FLOAT, MPI_SUM) on the data
// communicator, queued with AllGather and AllToAll so that every rank
// starts its collectives in one order. Unlike those it exchanges no
// headers first: the ranks must call it alike (comm.Reducer). A tensor
// whose memory is not host memory is summed in a staging buffer,
// downloaded first and uploaded back. Each rank counts as sent and
// received what a reduce-scatter and an all-gather move, 2(n−1)/n of
// t's bytes, the least any algorithm moves.
func (g *group) AllReduceSum(ctx context.Context, tag comm.Tag, t *tensor.Tensor) error {
	wrap := func(err error) error { return fmt.Errorf("allreduce, %v: %w", tag, err) }
	if err := g.usable(); err != nil {
		return wrap(err)
	}
	if t == nil {
		return wrap(errors.New("nil tensor"))
	}
	n := t.Len()
	if n > math.MaxInt32 {
		return wrap(fmt.Errorf("%d elements, more than one call sums", n))
	}
	if g.size == 1 || n == 0 {
		return nil
	}
	o := &op{what: fmt.Sprintf("allreduce, %v", tag), g: g}
	o.hold(t)
	buf, alias := hostFloats(t)
	if !alias {
		t.Device().Download(buf, t)
		o.after(func() { t.Device().Upload(t, buf) })
	}
	o.pin(unsafe.Pointer(&buf[0]))
	moved := 2 * int64(g.size-1) * int64(n) * tensor.BytesPerElement / int64(g.size)
	o.sent, o.received, o.messages = moved, moved, int64(2*(g.size-1))
	o.next = func() error { return g.data.iallreduceSumInPlace(&o.reqs, unsafe.Pointer(&buf[0]), n) }
	g.coll.ops = append(g.coll.ops, o)
	if err := g.wait(ctx, o); err != nil {
		return wrap(err)
	}
	return nil
}

// SplitBy returns the group of the ranks that call it with the same
// colour, ordered by key, after a barrier on this group (which honours
// ctx): MPI_Comm_split on its control communicator, whose queue the
// barrier emptied, so that the blocking split comes next on every rank.
// Colour −1 returns nil.
func (g *group) SplitBy(ctx context.Context, color, key int) (comm.Group, error) {
	wrap := func(err error) error { return fmt.Errorf("split by colour %d: %w", color, err) }
	if color < -1 {
		return nil, wrap(errors.New("a colour is ≥ 0, or −1 for none"))
	}
	if err := g.Barrier(ctx); err != nil {
		return nil, wrap(err)
	}
	c, ok, err := g.ctl.split(color, key)
	if err != nil {
		return nil, wrap(err)
	}
	if !ok {
		return nil, nil
	}
	sub, err := newGroup(c, g)
	if err != nil {
		return nil, wrap(err)
	}
	return sub, nil
}
