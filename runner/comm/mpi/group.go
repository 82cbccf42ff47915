//go:build mpi

package mpi

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/pipecast/pipecast/runner/comm"
)

// group is one rank's side of a communicator: the comm.Endpoint of its
// tensor transfers and the rest of comm.Group. Tensor transfers and
// AllGather and AllToAll use one duplicate of the communicator, control
// messages and the group's own collectives (Barrier, Gather, Broadcast)
// another, so that control tags never match tensor tags and neither
// kind of collective can be taken for the other.
type group struct {
	data, ctl  communicator
	rank, size int
	tagUB      int
	lib, host  string // see Library and Host

	// p2p holds point-to-point sends and receives, coll the
	// collectives on data, ctls those on ctl.
	p2p, coll, ctls queue
	// late collects errors of ops whose callers stopped waiting; Flush
	// and Close report them.
	late   []error
	closed bool
	// spares are ended point-to-point ops to reuse (see newOp).
	spares []*op

	sent, received, messages atomic.Int64
}

var _ comm.Group = (*group)(nil)

// newGroup returns the group of communicator c, which it takes over as
// its data communicator, duplicating it for control; w is the world's
// group, whose library and host it shares, or nil for the world's own.
// Every rank of c calls it.
func newGroup(c communicator, w *group) (*group, error) {
	g := &group{data: c, coll: queue{ordered: true}, ctls: queue{ordered: true}}
	if w != nil {
		g.tagUB, g.lib, g.host = w.tagUB, w.lib, w.host
	}
	if err := c.errorsReturn(); err != nil {
		return nil, err
	}
	var err error
	if g.rank, g.size, err = c.rankSize(); err != nil {
		return nil, err
	}
	if g.ctl, err = c.dup(); err != nil {
		return nil, err
	}
	if err := g.ctl.errorsReturn(); err != nil {
		return nil, err
	}
	return g, nil
}

// Rank returns this process's rank in the group.
func (g *group) Rank() int { return g.rank }

// Size returns the number of ranks of the group.
func (g *group) Size() int { return g.size }

// Library returns MPI_Get_library_version's string, on one line. Every
// group has it, not only the world, so that a run given a group can
// record its transport.
func (g *group) Library() string { return g.lib }

// Host returns MPI_Get_processor_name's name of this process's machine.
func (g *group) Host() string { return g.host }

// Stats returns the bytes moved so far. Safe from any goroutine.
func (g *group) Stats() comm.Stats {
	return comm.Stats{SentBytes: g.sent.Load(), ReceivedBytes: g.received.Load(), Messages: g.messages.Load()}
}

// usable returns ErrClosed after Close, and advances pending ops: every
// call starts by releasing what completed since the last.
func (g *group) usable() error {
	if g.closed {
		return comm.ErrClosed
	}
	g.progress(nil)
	return nil
}

// checkRank returns an error unless 0 ≤ r < Size.
func (g *group) checkRank(r int) error {
	if r < 0 || r >= g.size {
		return fmt.Errorf("no rank %d among %d", r, g.size)
	}
	return nil
}

// Flush waits until every send of this rank has completed, releasing its
// tensor, and every call that a cancelled context left behind has ended
// (counting what it received); it returns the errors of the latter.
// Every call releases what has completed without waiting; Close waits a
// moment for the rest.
func (g *group) Flush(ctx context.Context) error {
	if g.closed {
		return fmt.Errorf("flush: %w", comm.ErrClosed)
	}
	if err := g.flush(ctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	return nil
}

// Close waits a moment (closeWait) for pending transfers and frees the
// group's communicators; transfers that are still pending then (a send
// nobody received, a collective a peer never joined) are reported, and
// their memory stays pinned and their tensors held, since the library
// may still use them. Closing twice does nothing.
func (g *group) Close() error {
	if g.closed {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	var errs []error
	if err := g.flush(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		errs = append(errs, err)
	}
	if n, list := names(&g.p2p, &g.coll, &g.ctls); n > 0 {
		errs = append(errs, fmt.Errorf("%d transfers never completed within %v: %s", n, closeWait, list))
		stranded.Lock()
		for _, q := range []*queue{&g.p2p, &g.coll, &g.ctls} {
			stranded.ops = append(stranded.ops, q.ops...)
			q.ops = nil
		}
		stranded.Unlock()
	}
	errs = append(errs, errors.Join(g.late...))
	g.late = nil
	g.closed = true
	errs = append(errs, g.ctl.free(), g.data.free())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close mpi group: %w", err)
	}
	return nil
}
