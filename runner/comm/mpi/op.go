//go:build mpi

package mpi

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
)

// op is MPI work that may outlive the call that started it: the requests
// of its current phase, the Go memory they read or write (pinned until
// the op ends), the tensors that memory belongs to (retained until then),
// and what follows when the phase completes. A send is one phase; a
// collective may be several, each started from what the one before
// received.
type op struct {
	// what names the op in reports, e.g. "barrier"; a point-to-point op
	// leaves it empty and is named by verb, peer and tag instead, which
	// costs nothing until a report asks.
	what    string
	verb    string // "send to", "recv from", "send bytes to", "recv bytes from"
	peer    int
	tag     comm.Tag // of a tensor transfer
	ctlTag  int      // of a control message
	control bool

	reqs requests
	pins runtime.Pinner
	held []*tensor.Tensor
	// next starts the next phase, adding its requests to reqs; nil once
	// every phase has started. An op in a queue starts its first phase
	// through next too, when the ops before it allow.
	next func() error
	// done, if set, runs once when the last phase has completed.
	done func()
	// g's counters grow by these when the op completes.
	g                        *group
	sent, received, messages int64

	finished bool
	err      error
}

// String names the op.
func (o *op) String() string {
	switch {
	case o.what != "":
		return o.what
	case o.control:
		return fmt.Sprintf("%s %d, tag %d", o.verb, o.peer, o.ctlTag)
	}
	return fmt.Sprintf("%s %d, %v", o.verb, o.peer, o.tag)
}

// pin pins the Go object p points into for the op's lifetime; a nil or
// non-Go pointer is ignored.
func (o *op) pin(p unsafe.Pointer) {
	if p != nil {
		o.pins.Pin(p)
	}
}

// hold retains t for the op's lifetime.
func (o *op) hold(t *tensor.Tensor) { o.held = append(o.held, t.Retain()) }

// started reports whether every phase of o has started.
func (o *op) started() bool { return o.next == nil }

// test advances o as far as it can without waiting and reports whether it
// has finished; the error is the op's own, reported once.
func (o *op) test() (bool, error) {
	for !o.finished {
		ok, err := o.reqs.testAll()
		if err != nil {
			o.strand(err)
			return true, o.err
		}
		if !ok {
			return false, nil
		}
		if o.next == nil {
			o.end()
			return true, o.err
		}
		next := o.next
		o.next = nil
		if err := next(); err != nil {
			o.next = nil // no phase after a failed one
			if o.reqs.pending() > 0 {
				// Part of the phase started: wait for it, then fail.
				o.err = err
				continue
			}
			o.err = err
			o.end()
			return true, err
		}
	}
	return true, o.err
}

// fail ends o, which could not start, with err.
func (o *op) fail(err error) error {
	o.err = err
	o.end()
	return err
}

// end finishes o: unless it failed, done runs and g counts its bytes; its
// memory is unpinned and its tensors released.
func (o *op) end() {
	o.finished = true
	if o.err == nil {
		if o.done != nil {
			o.done()
		}
		if o.g != nil {
			o.g.sent.Add(o.sent)
			o.g.received.Add(o.received)
			o.g.messages.Add(o.messages)
		}
	}
	o.pins.Unpin()
	for _, t := range o.held {
		t.Release()
	}
	clear(o.held)
	o.held = o.held[:0]
}

// strand ends o after a request failed: the library may still use the
// memory of the others, so it stays pinned and its tensors retained for
// the rest of the process.
func (o *op) strand(err error) {
	o.finished = true
	o.err = fmt.Errorf("%v: %w", o, err)
	stranded.Lock()
	stranded.ops = append(stranded.ops, o)
	stranded.Unlock()
}

// maxSpares bounds the ended ops a group keeps for reuse.
const maxSpares = 64

// newOp returns an op of g to fill in: a spare one, or a new one. The
// point-to-point calls, many and small, reuse their ops, so that a
// message costs no allocation of its own.
func (g *group) newOp() *op {
	if n := len(g.spares); n > 0 {
		o := g.spares[n-1]
		g.spares = g.spares[:n-1]
		return o
	}
	return &op{}
}

// recycle keeps o for a later newOp if o ended well and is no longer
// referred to. Its Pinner, request and held slices are kept for reuse;
// the rest is reset.
func (g *group) recycle(o *op) {
	if !o.finished || o.err != nil || len(g.spares) >= maxSpares {
		return
	}
	o.what, o.verb, o.peer, o.tag, o.ctlTag, o.control = "", "", 0, comm.Tag{}, 0, false
	o.reqs.r = o.reqs.r[:0]
	o.next, o.done, o.g = nil, nil, nil
	o.sent, o.received, o.messages = 0, 0, 0
	o.finished, o.err = false, nil
	g.spares = append(g.spares, o)
}

// stranded keeps the ops whose memory the library may still use: failed
// ones, and those still pending when their group closed.
var stranded struct {
	sync.Mutex
	ops []*op
}

// queue is a group's pending ops on one communicator. Ops of a
// collective queue start their phases in order, one op's only once every
// phase of those before it has started, since MPI matches the
// collectives of a communicator by the order in which each rank starts
// them; ops of an unordered queue (point-to-point) progress freely.
type queue struct {
	ops     []*op
	ordered bool
}

// advance advances every op of q that may advance and drops the
// finished ones, handing those nobody waits for to g to reuse; errors of
// ops nobody waits for any longer are appended to g.late.
func (g *group) advance(q *queue, waited *op) {
	keep := q.ops[:0]
	blocked := false
	for _, o := range q.ops {
		if !blocked {
			if done, err := o.test(); done {
				switch {
				case o == waited:
				case err != nil:
					g.late = append(g.late, err)
				default:
					g.recycle(o)
				}
				continue
			}
		}
		keep = append(keep, o)
		if q.ordered && !o.started() {
			blocked = true
		}
	}
	clear(q.ops[len(keep):])
	q.ops = keep
}

// names lists the ops of the queues for a report: sorted, the first few.
func names(qs ...*queue) (n int, list string) {
	var all []string
	for _, q := range qs {
		for _, o := range q.ops {
			all = append(all, o.String())
		}
	}
	sort.Strings(all)
	n = len(all)
	const shown = 5
	if n > shown {
		all = append(all[:shown], fmt.Sprintf("and %d more", n-shown))
	}
	return n, strings.Join(all, "; ")
}

// wait drives o to its end, polling (see poller) every queue of g so that
// other ops progress too. If ctx ends first, o stays in its queue, to end
// in a later call's progress (its memory pinned and tensors held until
// then), and wait returns ctx's error.
func (g *group) wait(ctx context.Context, o *op) error {
	var p poller
	for {
		g.progress(o)
		if o.finished {
			return o.err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		p.pause()
	}
}

// progress advances every pending op of g; waited is the op a call waits
// for, whose error that call reports.
func (g *group) progress(waited *op) {
	g.advance(&g.p2p, waited)
	g.advance(&g.coll, waited)
	g.advance(&g.ctls, waited)
}

// pendingOps returns the number of ops not yet finished.
func (g *group) pendingOps() int { return len(g.p2p.ops) + len(g.coll.ops) + len(g.ctls.ops) }

// flush waits until no op is pending, or ctx ends, and returns the errors
// of ops that ended after their callers stopped waiting.
func (g *group) flush(ctx context.Context) error {
	var p poller
	for {
		g.progress(nil)
		if g.pendingOps() == 0 {
			err := errors.Join(g.late...)
			g.late = nil
			return err
		}
		if err := ctx.Err(); err != nil {
			n, list := names(&g.p2p, &g.coll, &g.ctls)
			return fmt.Errorf("%d transfers pending: %s: %w", n, list, err)
		}
		p.pause()
	}
}

// closeWait bounds how long Close waits for pending transfers: after a
// successful run they have all but completed, after a failed one some
// never will.
const closeWait = time.Second
