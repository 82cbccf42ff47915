//go:build mpi

package mpi

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
)

// hostFloats returns t's elements in host memory: the storage's own
// memory when the backend keeps tensors in a []float32 (the CPU
// backend), which the library then reads or writes in place, and alias
// true; otherwise a new buffer of t.Len() elements to stage them in.
func hostFloats(t *tensor.Tensor) (buf []float32, alias bool) {
	if s, ok := t.Storage().Mem.([]float32); ok {
		return s[t.Offset() : t.Offset()+t.Len() : t.Offset()+t.Len()], true
	}
	return make([]float32, t.Len()), false
}

// Send starts MPI_Isend of t's memory to rank to and returns. The memory
// is pinned and t retained until the send completes, which a later call
// of this group notices (every call first advances what is pending, and
// Flush waits for it). The bytes count as sent at once, so that a step's
// Stats hold the step's sends however late the library completes them.
// A tensor of a backend whose memory is not host memory is downloaded
// into a staging buffer first and not held.
func (g *group) Send(ctx context.Context, to int, tag comm.Tag, t *tensor.Tensor) error {
	wrap := func(err error) error { return fmt.Errorf("send to %d, %v: %w", to, tag, err) }
	if err := g.checkRank(to); err != nil {
		return wrap(err)
	}
	if t == nil {
		return wrap(errors.New("nil tensor"))
	}
	if err := ctx.Err(); err != nil {
		return wrap(err)
	}
	if err := g.usable(); err != nil {
		return wrap(err)
	}
	buf, alias := hostFloats(t)
	o := g.newOp()
	o.verb, o.peer, o.tag = "send to", to, tag
	if alias {
		o.hold(t)
	} else {
		t.Device().Download(buf, t)
	}
	p := unsafe.Pointer(&buf[0])
	o.pin(p)
	if err := g.data.isend(&o.reqs, p, len(buf), floats, to, mpiTag(tag, g.tagUB)); err != nil {
		return wrap(o.fail(err))
	}
	g.sent.Add(t.Bytes())
	if !g.enqueue(o) {
		g.recycle(o)
	}
	return nil
}

// Probe waits, polling MPI_Iprobe, until the tensor that rank from sends
// under tag has arrived, and leaves it queued.
func (g *group) Probe(ctx context.Context, from int, tag comm.Tag) error {
	wrap := func(err error) error { return fmt.Errorf("probe from %d, %v: %w", from, tag, err) }
	if err := g.checkRank(from); err != nil {
		return wrap(err)
	}
	if err := g.usable(); err != nil {
		return wrap(err)
	}
	mt := mpiTag(tag, g.tagUB)
	var p poller
	for {
		found, _, err := g.data.iprobe(from, mt, floats)
		switch {
		case err != nil:
			return wrap(err)
		case found:
			return nil
		}
		if err := g.idle(ctx, &p); err != nil {
			return wrap(err)
		}
	}
}

// idle is one pause of a wait that has no op yet: it returns ctx's error
// if ctx has ended, advances pending ops now and then, and pauses.
func (g *group) idle(ctx context.Context, p *poller) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.looks%16 == 15 {
		g.progress(nil)
	}
	p.pause()
	return nil
}

// Recv waits for the tensor that rank from sent under tag, polling
// MPI_Improbe, checks its element count with MPI_Get_count, and receives
// it with MPI_Imrecv straight into dst's memory (pinned and dst retained
// meanwhile), polling MPI_Testall. A message of another size is received
// all the same, into a scratch buffer, so that it matches nothing later,
// and reported as comm.ErrMismatch. If ctx ends while the data are
// arriving, the receive completes in a later call, into dst.
func (g *group) Recv(ctx context.Context, from int, tag comm.Tag, dst *tensor.Tensor) error {
	wrap := func(err error) error { return fmt.Errorf("recv from %d, %v: %w", from, tag, err) }
	if err := g.checkRank(from); err != nil {
		return wrap(err)
	}
	if dst == nil {
		return wrap(errors.New("nil destination"))
	}
	if err := g.usable(); err != nil {
		return wrap(err)
	}
	mt := mpiTag(tag, g.tagUB)
	var p poller
	var m message
	var n int
	for {
		var found bool
		var err error
		if m, found, n, err = g.data.improbe(from, mt, floats); err != nil {
			return wrap(err)
		}
		if found {
			break
		}
		if err := g.idle(ctx, &p); err != nil {
			return wrap(err)
		}
	}
	o := g.newOp()
	o.verb, o.peer, o.tag, o.g = "recv from", from, tag, g
	if n != dst.Len() {
		if n < 0 {
			return wrap(fmt.Errorf("%w: a message of a size that is not whole elements", comm.ErrMismatch))
		}
		scratch := make([]float32, n)
		if err := g.receive(ctx, o, &m, scratch); err != nil {
			return wrap(err)
		}
		return wrap(fmt.Errorf("%w: %d elements sent, destination %v holds %d", comm.ErrMismatch, n, dst.Shape(), dst.Len()))
	}
	buf, alias := hostFloats(dst)
	if alias {
		o.hold(dst)
	}
	o.received, o.messages = dst.Bytes(), 1
	if err := g.receive(ctx, o, &m, buf); err != nil {
		return wrap(err)
	}
	if !alias {
		dst.Device().Upload(dst, buf)
	}
	return nil
}

// receive receives the matched message m into buf as op o and waits for
// it.
func (g *group) receive(ctx context.Context, o *op, m *message, buf []float32) error {
	var p unsafe.Pointer
	if len(buf) > 0 {
		p = unsafe.Pointer(&buf[0])
	}
	o.pin(p)
	if err := m.imrecv(&o.reqs, p, len(buf), floats); err != nil {
		return o.fail(err)
	}
	if g.enqueue(o) {
		if err := g.wait(ctx, o); err != nil {
			return err
		}
	}
	g.recycle(o)
	return nil
}

// enqueue queues the point-to-point op o, or ends it at once if its
// request has completed already; it reports whether o is queued. An op
// that ended here is the caller's to recycle.
func (g *group) enqueue(o *op) bool {
	if o.reqs.pending() == 0 {
		o.end()
		return false
	}
	g.p2p.ops = append(g.p2p.ops, o)
	return true
}
