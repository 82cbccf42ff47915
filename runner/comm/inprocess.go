package comm

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pipecast/pipecast/tensor"
)

// ErrClosed is returned by the calls of an endpoint whose transport was
// closed, including calls that were waiting when it closed.
var ErrClosed = errors.New("transport closed")

// ErrMismatch is returned when the two sides of a transfer disagree: a
// received tensor whose element count differs from the destination's, or
// ranks whose collective calls do not match (kind, tag, or which pieces
// are sent and expected).
var ErrMismatch = errors.New("mismatch")

// InProcess is a transport between the devices of one process. Each rank
// has a mailbox; a send posts a retained reference to the sender's tensor
// in the receiver's mailbox, and the receiving rank copies it into its own
// destination with dst.Device().CopyFrom, then releases the reference.
// Nothing is copied on the sender's side, so a sent tensor must not be
// written until the transport has released it (watch Refs): in practice
// the sender hands it over and releases its own reference.
//
// Bytes are counted when they are copied into the receiver's memory, on
// both sides at once: the receiver's ReceivedBytes and Messages and the
// sender's SentBytes. A message that is never received is never counted,
// so the bytes sent by all ranks always equal the bytes received by all.
//
// No call starts a goroutine; a waiting call is woken by the post that
// completes it, by its context, or by Close.
type InProcess struct {
	eps       []*endpoint
	closed    chan struct{}
	closeOnce sync.Once
}

// NewInProcess returns the endpoints of a new in-process transport of
// size ranks, indexed by rank. It panics if size < 1. A caller that wants
// to close the transport uses NewInProcessTransport.
func NewInProcess(size int) []Endpoint { return NewInProcessTransport(size).Endpoints() }

// NewInProcessTransport returns a transport of size ranks. It panics if
// size < 1.
func NewInProcessTransport(size int) *InProcess {
	if size < 1 {
		panic(fmt.Sprintf("comm: in-process transport of %d ranks", size))
	}
	tr := &InProcess{closed: make(chan struct{})}
	tr.eps = make([]*endpoint, size)
	for r := range tr.eps {
		tr.eps[r] = &endpoint{tr: tr, rank: r, box: newMailbox()}
	}
	return tr
}

// Size returns the number of ranks.
func (tr *InProcess) Size() int { return len(tr.eps) }

// Endpoint returns rank's endpoint. It panics for a rank out of range.
func (tr *InProcess) Endpoint(rank int) Endpoint {
	if rank < 0 || rank >= len(tr.eps) {
		panic(fmt.Sprintf("comm: endpoint %d of a transport of %d ranks", rank, len(tr.eps)))
	}
	return tr.eps[rank]
}

// Endpoints returns every rank's endpoint, indexed by rank.
func (tr *InProcess) Endpoints() []Endpoint {
	eps := make([]Endpoint, len(tr.eps))
	for r, e := range tr.eps {
		eps[r] = e
	}
	return eps
}

// Close ends the transport: every waiting call returns ErrClosed, later
// calls fail with ErrClosed, and every message that was posted but never
// received is released. A run that fails closes its transport so that no
// rank waits forever for a peer that is gone. Close reports the messages
// that were never received, which after a successful run means the
// program sent something nobody received. Closing twice does nothing.
func (tr *InProcess) Close() error {
	var pending []*message
	tr.closeOnce.Do(func() {
		// Refuse posts and free what was never received before waking
		// the waiters, so that a caller who sees ErrClosed also sees the
		// stranded tensors released.
		for _, e := range tr.eps {
			pending = append(pending, e.box.shut()...)
		}
		for _, m := range pending {
			m.t.Release()
		}
		close(tr.closed)
	})
	if len(pending) == 0 {
		return nil
	}
	sort.Slice(pending, func(i, j int) bool { return pending[i].String() < pending[j].String() })
	const shown = 5
	names := make([]string, 0, shown+1)
	for i, m := range pending {
		switch {
		case i < shown:
			names = append(names, m.String())
		case i == shown:
			names = append(names, fmt.Sprintf("and %d more", len(pending)-shown))
		}
	}
	b := strings.Join(names, "; ")
	return fmt.Errorf("close in-process transport: %d messages never received: %s", len(pending), b)
}

// endpoint is one rank of an InProcess transport.
type endpoint struct {
	tr   *InProcess
	rank int
	box  *mailbox
	// seq numbers this rank's collective calls: the n-th collective of
	// every rank is the same collective, as on an MPI communicator.
	// Only the goroutine using the endpoint touches it.
	seq int

	sent, received, messages atomic.Int64
}

var _ Endpoint = (*endpoint)(nil)

// Rank returns the endpoint's rank.
func (e *endpoint) Rank() int { return e.rank }

// Size returns the number of ranks of its transport.
func (e *endpoint) Size() int { return len(e.tr.eps) }

// Stats returns the bytes moved so far. Safe from any goroutine.
func (e *endpoint) Stats() Stats {
	return Stats{SentBytes: e.sent.Load(), ReceivedBytes: e.received.Load(), Messages: e.messages.Load()}
}

// Send posts a reference to t in rank to's mailbox. It never blocks.
func (e *endpoint) Send(ctx context.Context, to int, tag Tag, t *tensor.Tensor) error {
	wrap := func(err error) error { return fmt.Errorf("send to %d, %v: %w", to, tag, err) }
	switch {
	case to < 0 || to >= len(e.tr.eps):
		return wrap(fmt.Errorf("no rank %d among %d", to, len(e.tr.eps)))
	case t == nil:
		return wrap(errors.New("nil tensor"))
	}
	if err := ctx.Err(); err != nil {
		return wrap(err)
	}
	m := &message{from: e, to: to, tag: tag, t: t.Retain()}
	if !e.tr.eps[to].box.postP2P(m) {
		m.t.Release()
		return wrap(ErrClosed)
	}
	return nil
}

// Probe waits until a message from rank from under tag is queued, and
// leaves it there.
func (e *endpoint) Probe(ctx context.Context, from int, tag Tag) error {
	if from < 0 || from >= len(e.tr.eps) {
		return fmt.Errorf("probe from %d, %v: no rank %d among %d", from, tag, from, len(e.tr.eps))
	}
	err := e.box.wait(ctx, e.tr.closed, func(b *mailbox) bool {
		return len(b.p2p[p2pKey{from: from, tag: tag}]) > 0
	})
	if err != nil {
		return fmt.Errorf("probe from %d, %v: %w", from, tag, err)
	}
	return nil
}

// Recv waits for the message from rank from under tag and copies it into
// dst.
func (e *endpoint) Recv(ctx context.Context, from int, tag Tag, dst *tensor.Tensor) error {
	wrap := func(err error) error { return fmt.Errorf("recv from %d, %v: %w", from, tag, err) }
	switch {
	case from < 0 || from >= len(e.tr.eps):
		return wrap(fmt.Errorf("no rank %d among %d", from, len(e.tr.eps)))
	case dst == nil:
		return wrap(errors.New("nil destination"))
	}
	var m *message
	err := e.box.wait(ctx, e.tr.closed, func(b *mailbox) bool {
		m = b.takeP2P(p2pKey{from: from, tag: tag})
		return m != nil
	})
	if err != nil {
		return wrap(err)
	}
	if err := e.deliver(m, dst); err != nil {
		return wrap(err)
	}
	return nil
}

// deliver copies m's tensor into dst, counts the bytes on both sides and
// releases the transport's reference, also when the sizes differ.
func (e *endpoint) deliver(m *message, dst *tensor.Tensor) error {
	defer m.t.Release()
	if m.t.Len() != dst.Len() {
		return fmt.Errorf("%w: %d elements sent, destination %v holds %d", ErrMismatch, m.t.Len(), dst.Shape(), dst.Len())
	}
	dst.Device().CopyFrom(dst, m.t)
	n := m.t.Bytes()
	e.received.Add(n)
	e.messages.Add(1)
	m.from.sent.Add(n)
	return nil
}

// message is a posted transfer: a point-to-point send, or one rank's piece
// of a collective for one other rank.
type message struct {
	from *endpoint
	to   int
	tag  Tag
	t    *tensor.Tensor // retained by the transport; nil for an empty piece

	// Collective pieces only.
	kind    collKind
	seq     int
	aborted error // the sender failed its call; t is nil
}

// String names the message for error reports.
func (m *message) String() string {
	if m.kind == p2p {
		return fmt.Sprintf("send from %d to %d, %v", m.from.rank, m.to, m.tag)
	}
	return fmt.Sprintf("%s piece from %d to %d, %v", m.kind, m.from.rank, m.to, m.tag)
}

type p2pKey struct {
	from int
	tag  Tag
}

type collKey struct {
	from, seq int
}

// mailbox holds what was posted to one rank and not yet taken.
type mailbox struct {
	mu   sync.Mutex
	p2p  map[p2pKey][]*message // FIFO per sender and tag
	coll map[collKey]*message
	// abandoned counts, per collective this rank gave up on, the pieces
	// still to come; they are released as they arrive.
	abandoned map[int]int
	shutDown  bool
	// notify wakes the rank's one waiting call after a post; a token
	// left over from an earlier post only costs one more look.
	notify chan struct{}
}

func newMailbox() *mailbox {
	return &mailbox{
		p2p:       map[p2pKey][]*message{},
		coll:      map[collKey]*message{},
		abandoned: map[int]int{},
		notify:    make(chan struct{}, 1),
	}
}

// postP2P queues m; it reports false if the mailbox is shut.
func (b *mailbox) postP2P(m *message) bool {
	b.mu.Lock()
	if b.shutDown {
		b.mu.Unlock()
		return false
	}
	k := p2pKey{from: m.from.rank, tag: m.tag}
	b.p2p[k] = append(b.p2p[k], m)
	b.mu.Unlock()
	b.wake()
	return true
}

// takeP2P removes the oldest message under k, or returns nil. The caller
// holds b.mu.
func (b *mailbox) takeP2P(k p2pKey) *message {
	q := b.p2p[k]
	if len(q) == 0 {
		return nil
	}
	m := q[0]
	if len(q) == 1 {
		delete(b.p2p, k)
	} else {
		q[0] = nil
		b.p2p[k] = q[1:]
	}
	return m
}

func (b *mailbox) wake() {
	select {
	case b.notify <- struct{}{}:
	default:
	}
}

// wait calls take under the lock until it reports success, sleeping
// between posts; it ends early when ctx is done or closed is closed.
func (b *mailbox) wait(ctx context.Context, closed <-chan struct{}, take func(*mailbox) bool) error {
	for {
		b.mu.Lock()
		ok := take(b)
		b.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-b.notify:
		case <-ctx.Done():
			return ctx.Err()
		case <-closed:
			return ErrClosed
		}
	}
}

// shut refuses further posts and returns every message still queued.
func (b *mailbox) shut() []*message {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.shutDown = true
	var out []*message
	for k, q := range b.p2p {
		out = append(out, q...)
		delete(b.p2p, k)
	}
	for k, m := range b.coll {
		if m.t != nil {
			out = append(out, m)
		}
		delete(b.coll, k)
	}
	return out
}
