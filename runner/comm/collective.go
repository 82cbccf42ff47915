package comm

import (
	"context"
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// collKind says which call posted a message.
type collKind int

const (
	p2p collKind = iota
	allGather
	allToAll
)

func (k collKind) String() string {
	switch k {
	case allGather:
		return "allgather"
	case allToAll:
		return "alltoall"
	default:
		return "send"
	}
}

// AllGather sends local to every other rank and copies every other rank's
// contribution into dsts.
func (e *endpoint) AllGather(ctx context.Context, tag Tag, local *tensor.Tensor, dsts []*tensor.Tensor) error {
	c := e.begin(allGather, tag)
	if len(dsts) != e.Size() {
		return c.fail(fmt.Errorf("%d destinations for %d ranks", len(dsts), e.Size()))
	}
	if dsts[e.rank] != nil {
		return c.fail(fmt.Errorf("dsts[%d] is this rank's own and must be nil", e.rank))
	}
	c.post(func(int) *tensor.Tensor { return local })
	return c.receive(ctx, dsts)
}

// AllToAll sends parts[k] to rank k, copies parts[rank] locally, and
// copies what every other rank sent this one into dsts.
func (e *endpoint) AllToAll(ctx context.Context, tag Tag, parts []*tensor.Tensor, dsts []*tensor.Tensor) error {
	c := e.begin(allToAll, tag)
	switch own, dst := at(parts, e.rank), at(dsts, e.rank); {
	case len(parts) != e.Size() || len(dsts) != e.Size():
		return c.fail(fmt.Errorf("%d parts and %d destinations for %d ranks", len(parts), len(dsts), e.Size()))
	case (own == nil) != (dst == nil):
		return c.fail(fmt.Errorf("%w: parts[%d] and dsts[%d] must both be nil or both be set", ErrMismatch, e.rank, e.rank))
	case own != nil && own.Len() != dst.Len():
		return c.fail(fmt.Errorf("%w: parts[%d] holds %d elements, dsts[%d] %d", ErrMismatch, e.rank, own.Len(), e.rank, dst.Len()))
	case own != nil:
		// The own piece stays on this rank: a copy, but no transfer
		// between devices, so it is not counted.
		dst.Device().CopyFrom(dst, own)
	}
	c.post(func(k int) *tensor.Tensor { return parts[k] })
	return c.receive(ctx, dsts)
}

func at(ts []*tensor.Tensor, i int) *tensor.Tensor {
	if i < len(ts) {
		return ts[i]
	}
	return nil
}

// collective is one rank's part in one collective call.
type collective struct {
	e    *endpoint
	kind collKind
	tag  Tag
	seq  int
	got  int // pieces taken from the mailbox so far
}

// begin numbers the call: every call counts, even one that fails its
// argument checks, so that the ranks' numbering stays aligned.
func (e *endpoint) begin(kind collKind, tag Tag) *collective {
	c := &collective{e: e, kind: kind, tag: tag, seq: e.seq}
	e.seq++
	return c
}

func (c *collective) wrap(err error) error {
	return fmt.Errorf("%s, %v: %w", c.kind, c.tag, err)
}

// fail ends a call whose arguments are wrong: the other ranks are told,
// so that they fail too instead of waiting for pieces that will not come,
// and the pieces they send this rank are released as they arrive.
func (c *collective) fail(err error) error {
	abort := fmt.Errorf("rank %d failed its side: %w", c.e.rank, err)
	for k := range c.e.tr.eps {
		if k != c.e.rank {
			c.send(k, &message{aborted: abort})
		}
	}
	c.abandon()
	return c.wrap(err)
}

// post sends every other rank its piece, piece(k), nil for nothing. An
// empty piece is posted too: it tells rank k that this rank has entered
// the collective and what it called, so that mismatches are caught.
func (c *collective) post(piece func(k int) *tensor.Tensor) {
	for k := range c.e.tr.eps {
		if k == c.e.rank {
			continue
		}
		m := &message{}
		if t := piece(k); t != nil {
			m.t = t.Retain()
		}
		c.send(k, m)
	}
}

func (c *collective) send(to int, m *message) {
	m.from, m.to, m.tag, m.kind, m.seq = c.e, to, c.tag, c.kind, c.seq
	if !c.e.tr.eps[to].box.postColl(m) {
		m.t.Release()
	}
}

// receive takes one piece from every other rank and copies the non-empty
// ones into dsts. A piece that does not match the call is released and
// reported; the rest are still copied, so that nothing is left behind.
// It returns the first error.
func (c *collective) receive(ctx context.Context, dsts []*tensor.Tensor) error {
	var first error
	var ready []*message
	for c.got < len(dsts)-1 {
		err := c.e.box.wait(ctx, c.e.tr.closed, func(b *mailbox) bool {
			ready = b.takeColl(c.seq, len(dsts), ready[:0])
			return len(ready) > 0
		})
		if err != nil {
			c.abandon()
			return c.wrap(err)
		}
		c.got += len(ready)
		for _, m := range ready {
			if err := c.accept(m, dsts[m.from.rank]); err != nil && first == nil {
				first = err
			}
		}
	}
	if first != nil {
		return c.wrap(first)
	}
	return nil
}

// accept checks m against this rank's call and copies it into dst.
func (c *collective) accept(m *message, dst *tensor.Tensor) error {
	p := m.from.rank
	switch {
	case m.aborted != nil:
		return m.aborted
	case m.kind != c.kind || m.tag != c.tag:
		m.t.Release()
		return fmt.Errorf("%w: rank %d called %s, %v", ErrMismatch, p, m.kind, m.tag)
	case m.t == nil && dst != nil:
		return fmt.Errorf("%w: rank %d sent nothing, dsts[%d] expects %d elements", ErrMismatch, p, p, dst.Len())
	case m.t != nil && dst == nil:
		m.t.Release()
		return fmt.Errorf("%w: rank %d sent %d elements, dsts[%d] is nil", ErrMismatch, p, m.t.Len(), p)
	case m.t == nil:
		return nil
	}
	if err := c.e.deliver(m, dst); err != nil {
		return fmt.Errorf("piece from rank %d: %w", p, err)
	}
	return nil
}

// abandon gives up the rest of the call: pieces already posted to this
// rank are released now, those still to come when they arrive.
func (c *collective) abandon() {
	size := len(c.e.tr.eps)
	dropped := c.e.box.abandon(c.seq, size-1-c.got, size)
	for _, m := range dropped {
		m.t.Release()
	}
}

// postColl files m under its sender and number, or refuses it when the
// mailbox is shut or its rank abandoned that collective.
func (b *mailbox) postColl(m *message) bool {
	b.mu.Lock()
	if b.shutDown {
		b.mu.Unlock()
		return false
	}
	if left, ok := b.abandoned[m.seq]; ok {
		if left <= 1 {
			delete(b.abandoned, m.seq)
		} else {
			b.abandoned[m.seq] = left - 1
		}
		b.mu.Unlock()
		return false
	}
	b.coll[collKey{from: m.from.rank, seq: m.seq}] = m
	b.mu.Unlock()
	b.wake()
	return true
}

// takeColl appends to out, and removes, every piece of collective seq
// present. The caller holds b.mu.
func (b *mailbox) takeColl(seq, size int, out []*message) []*message {
	for p := range size {
		k := collKey{from: p, seq: seq}
		if m, ok := b.coll[k]; ok {
			out = append(out, m)
			delete(b.coll, k)
		}
	}
	return out
}

// abandon marks collective seq as given up with left pieces not yet
// taken, and returns those of them already present.
func (b *mailbox) abandon(seq, left, size int) []*message {
	b.mu.Lock()
	defer b.mu.Unlock()
	dropped := b.takeColl(seq, size, nil)
	if left -= len(dropped); left > 0 {
		b.abandoned[seq] = left
	}
	return dropped
}
