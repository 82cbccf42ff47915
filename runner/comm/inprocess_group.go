package comm

import (
	"context"
	"fmt"
	"sync"
)

// NewInProcessGroups returns n Groups over one in-process transport, one
// per rank, for running the multi-process code path with goroutines in
// place of processes: each rank's goroutine uses its own Group as a
// process would. Control messages travel through buffered queues, one
// per sender, receiver and tag.
func NewInProcessGroups(n int) []Group {
	tr := NewInProcessTransport(n)
	hub := &groupHub{queues: map[ctlKey]chan []byte{}}
	out := make([]Group, n)
	for r := range out {
		out[r] = &inProcessGroup{Endpoint: tr.Endpoint(r), tr: tr, hub: hub}
	}
	return out
}

// The tags of the collectives built on control messages; callers' tags
// are ≥ 0.
const (
	gatherTag    = -1
	broadcastTag = -2
	barrierTag   = -3
)

// ctlQueueDepth is how many control messages may wait for a receiver on
// one queue before the sender blocks.
const ctlQueueDepth = 1024

type ctlKey struct{ from, to, tag int }

// groupHub holds the control-message queues of a set of groups.
type groupHub struct {
	mu     sync.Mutex
	queues map[ctlKey]chan []byte
}

func (h *groupHub) queue(k ctlKey) chan []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	q, ok := h.queues[k]
	if !ok {
		q = make(chan []byte, ctlQueueDepth)
		h.queues[k] = q
	}
	return q
}

// inProcessGroup is one rank's Group.
type inProcessGroup struct {
	Endpoint
	tr   *InProcess
	hub  *groupHub
	once sync.Once
}

func (g *inProcessGroup) send(ctx context.Context, to, tag int, data []byte) error {
	if to < 0 || to >= g.Size() {
		return fmt.Errorf("no rank %d among %d", to, g.Size())
	}
	select {
	case g.hub.queue(ctlKey{g.Rank(), to, tag}) <- append([]byte(nil), data...):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-g.tr.closed:
		return ErrClosed
	}
}

func (g *inProcessGroup) recv(ctx context.Context, from, tag int) ([]byte, error) {
	if from < 0 || from >= g.Size() {
		return nil, fmt.Errorf("no rank %d among %d", from, g.Size())
	}
	select {
	case b := <-g.hub.queue(ctlKey{from, g.Rank(), tag}):
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-g.tr.closed:
		return nil, ErrClosed
	}
}

// SendBytes posts data to rank to under tag (≥ 0).
func (g *inProcessGroup) SendBytes(ctx context.Context, to, tag int, data []byte) error {
	if tag < 0 {
		return fmt.Errorf("send bytes to %d: tag %d is negative", to, tag)
	}
	if err := g.send(ctx, to, tag, data); err != nil {
		return fmt.Errorf("send bytes to %d, tag %d: %w", to, tag, err)
	}
	return nil
}

// RecvBytes waits for the next data rank from sent under tag (≥ 0).
func (g *inProcessGroup) RecvBytes(ctx context.Context, from, tag int) ([]byte, error) {
	if tag < 0 {
		return nil, fmt.Errorf("recv bytes from %d: tag %d is negative", from, tag)
	}
	b, err := g.recv(ctx, from, tag)
	if err != nil {
		return nil, fmt.Errorf("recv bytes from %d, tag %d: %w", from, tag, err)
	}
	return b, nil
}

// Gather returns every rank's data on root, in rank order.
func (g *inProcessGroup) Gather(ctx context.Context, root int, data []byte) ([][]byte, error) {
	if g.Rank() != root {
		if err := g.send(ctx, root, gatherTag, data); err != nil {
			return nil, fmt.Errorf("gather to %d: %w", root, err)
		}
		return nil, nil
	}
	out := make([][]byte, g.Size())
	for r := range out {
		if r == root {
			out[r] = append([]byte(nil), data...)
			continue
		}
		b, err := g.recv(ctx, r, gatherTag)
		if err != nil {
			return nil, fmt.Errorf("gather from %d: %w", r, err)
		}
		out[r] = b
	}
	return out, nil
}

// Broadcast returns root's data on every rank.
func (g *inProcessGroup) Broadcast(ctx context.Context, root int, data []byte) ([]byte, error) {
	if g.Rank() != root {
		b, err := g.recv(ctx, root, broadcastTag)
		if err != nil {
			return nil, fmt.Errorf("broadcast from %d: %w", root, err)
		}
		return b, nil
	}
	for r := range g.Size() {
		if r != root {
			if err := g.send(ctx, r, broadcastTag, data); err != nil {
				return nil, fmt.Errorf("broadcast to %d: %w", r, err)
			}
		}
	}
	return append([]byte(nil), data...), nil
}

// Barrier returns once every rank has entered it: rank 0 hears from
// every rank, then releases them.
func (g *inProcessGroup) Barrier(ctx context.Context) error {
	if g.Rank() != 0 {
		if err := g.send(ctx, 0, barrierTag, nil); err != nil {
			return fmt.Errorf("barrier: %w", err)
		}
		if _, err := g.recv(ctx, 0, barrierTag); err != nil {
			return fmt.Errorf("barrier: %w", err)
		}
		return nil
	}
	for r := 1; r < g.Size(); r++ {
		if _, err := g.recv(ctx, r, barrierTag); err != nil {
			return fmt.Errorf("barrier: %w", err)
		}
	}
	for r := 1; r < g.Size(); r++ {
		if err := g.send(ctx, r, barrierTag, nil); err != nil {
			return fmt.Errorf("barrier: %w", err)
		}
	}
	return nil
}

// Close closes the shared transport (once, whichever rank calls it):
// every rank's waits end with ErrClosed.
func (g *inProcessGroup) Close() error {
	var err error
	g.once.Do(func() { err = g.tr.Close() })
	return err
}
