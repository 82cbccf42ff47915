//go:build mpi

package mpi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// The group's own calls use the control communicator: its collectives
// queue in order there (ctls), its messages travel with their integer
// tags, apart from every tensor transfer. Control messages are not
// counted in Stats.

// Barrier returns once every rank has called it (MPI_Ibarrier), then
// releases the tensors of sends that have completed meanwhile.
func (g *group) Barrier(ctx context.Context) error {
	if err := g.usable(); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	o := &op{what: "barrier"}
	o.next = func() error { return g.ctl.ibarrier(&o.reqs) }
	g.ctls.ops = append(g.ctls.ops, o)
	if err := g.wait(ctx, o); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	g.progress(nil)
	return nil
}

// Gather returns, on root, every rank's data in rank order: the sizes
// first (MPI_Igather), then the bytes (MPI_Igatherv). Elsewhere it
// returns nil. A root out of range is the library's error (MPI_ERR_ROOT).
func (g *group) Gather(ctx context.Context, root int, data []byte) ([][]byte, error) {
	wrap := func(err error) error { return fmt.Errorf("gather to %d: %w", root, err) }
	if err := g.usable(); err != nil {
		return nil, wrap(err)
	}
	if len(data) > math.MaxInt32 {
		return nil, wrap(fmt.Errorf("%d bytes, more than an MPI count holds", len(data)))
	}
	mine := append([]byte(nil), data...)
	size := []int64{int64(len(mine))}
	sizes := make([]int64, g.size)
	var out []byte
	var displs []int32
	o := &op{what: fmt.Sprintf("gather to %d", root)}
	o.pin(bytePtr(mine))
	o.pin(unsafe.Pointer(&size[0]))
	o.pin(unsafe.Pointer(&sizes[0]))
	o.next = func() error {
		o.next = func() error {
			var counts []int32
			if g.rank == root {
				counts, displs = make([]int32, g.size), make([]int32, g.size)
				total := int64(0)
				for r, n := range sizes {
					counts[r], displs[r] = int32(n), int32(total)
					total += n
				}
				if total > math.MaxInt32 {
					return fmt.Errorf("%d bytes in all, more than an MPI displacement reaches", total)
				}
				out = make([]byte, total)
				o.pin(bytePtr(out))
				o.pin(unsafe.Pointer(&counts[0]))
				o.pin(unsafe.Pointer(&displs[0]))
			}
			return g.ctl.igatherv(&o.reqs, bytePtr(mine), len(mine), bytePtr(out), counts, displs, bytes, root)
		}
		return g.ctl.igather(&o.reqs, unsafe.Pointer(&size[0]), 1, unsafe.Pointer(&sizes[0]), int64s, root)
	}
	g.ctls.ops = append(g.ctls.ops, o)
	if err := g.wait(ctx, o); err != nil {
		return nil, wrap(err)
	}
	if g.rank != root {
		return nil, nil
	}
	all := make([][]byte, g.size)
	for r, n := range sizes {
		d := int64(displs[r])
		all[r] = out[d : d+n : d+n]
	}
	return all, nil
}

// Broadcast returns root's data on every rank: the size first, then the
// bytes (MPI_Ibcast both). A root out of range is the library's error
// (MPI_ERR_ROOT).
func (g *group) Broadcast(ctx context.Context, root int, data []byte) ([]byte, error) {
	wrap := func(err error) error { return fmt.Errorf("broadcast from %d: %w", root, err) }
	if err := g.usable(); err != nil {
		return nil, wrap(err)
	}
	size := []int64{int64(len(data))}
	var buf []byte
	o := &op{what: fmt.Sprintf("broadcast from %d", root)}
	o.pin(unsafe.Pointer(&size[0]))
	o.next = func() error {
		o.next = func() error {
			switch {
			case size[0] > math.MaxInt32:
				return fmt.Errorf("%d bytes, more than an MPI count holds", size[0])
			case g.rank == root:
				buf = append([]byte(nil), data...)
			default:
				buf = make([]byte, size[0])
			}
			o.pin(bytePtr(buf))
			return g.ctl.ibcast(&o.reqs, bytePtr(buf), len(buf), bytes, root)
		}
		return g.ctl.ibcast(&o.reqs, unsafe.Pointer(&size[0]), 1, int64s, root)
	}
	g.ctls.ops = append(g.ctls.ops, o)
	if err := g.wait(ctx, o); err != nil {
		return nil, wrap(err)
	}
	return buf, nil
}

// SendBytes starts MPI_Isend of a copy of data to rank to under tag on
// the control communicator and returns.
func (g *group) SendBytes(ctx context.Context, to, tag int, data []byte) error {
	wrap := func(err error) error { return fmt.Errorf("send bytes to %d, tag %d: %w", to, tag, err) }
	if err := checkControlTag(tag); err != nil {
		return wrap(err)
	}
	if err := g.checkRank(to); err != nil {
		return wrap(err)
	}
	if err := ctx.Err(); err != nil {
		return wrap(err)
	}
	if err := g.usable(); err != nil {
		return wrap(err)
	}
	buf := append([]byte(nil), data...)
	o := &op{verb: "send bytes to", peer: to, ctlTag: tag, control: true}
	o.pin(bytePtr(buf))
	if err := g.ctl.isend(&o.reqs, bytePtr(buf), len(buf), bytes, to, tag); err != nil {
		return wrap(o.fail(err))
	}
	g.enqueue(o)
	return nil
}

// RecvBytes waits for the control message that rank from sent under tag,
// polling MPI_Improbe, and receives it.
func (g *group) RecvBytes(ctx context.Context, from, tag int) ([]byte, error) {
	wrap := func(err error) error { return fmt.Errorf("recv bytes from %d, tag %d: %w", from, tag, err) }
	if err := checkControlTag(tag); err != nil {
		return nil, wrap(err)
	}
	if err := g.checkRank(from); err != nil {
		return nil, wrap(err)
	}
	if err := g.usable(); err != nil {
		return nil, wrap(err)
	}
	var p poller
	for {
		m, found, n, err := g.ctl.improbe(from, tag, bytes)
		if err != nil {
			return nil, wrap(err)
		}
		if found {
			buf := make([]byte, n)
			o := &op{verb: "recv bytes from", peer: from, ctlTag: tag, control: true}
			o.pin(bytePtr(buf))
			if err := m.imrecv(&o.reqs, bytePtr(buf), n, bytes); err != nil {
				return nil, wrap(o.fail(err))
			}
			if g.enqueue(o) {
				if err := g.wait(ctx, o); err != nil {
					return nil, wrap(err)
				}
			}
			return buf, nil
		}
		if err := g.idle(ctx, &p); err != nil {
			return nil, wrap(err)
		}
	}
}

// checkControlTag refuses tags that are negative (MPI_ANY_TAG is −1) or
// do not fit a C int; the library checks the upper bound, MPI_TAG_UB.
func checkControlTag(tag int) error {
	if tag < 0 || tag > math.MaxInt32 {
		return errors.New("control tags are ints ≥ 0")
	}
	return nil
}

// bytePtr returns the address of b's first byte, nil for an empty b.
func bytePtr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}
