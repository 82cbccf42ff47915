package commtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
)

// Timeout bounds every test body: a call that should return but hangs
// fails the test within it instead of at go test's deadline.
const Timeout = 20 * time.Second

// Harness runs body on every rank of a fresh group of the transport
// under test, each with its own Rank (see NewRank and Rank.Do), and
// returns once every rank of this process has finished and the group
// is closed.
type Harness func(t *testing.T, body func(r *Rank))

// Rank is one rank's part in a test: its group, its device, and the
// test to report to.
type Rank struct {
	comm.Group
	Device tensor.Device
	// Ctx ends after Timeout.
	Ctx context.Context

	t      *testing.T
	cancel context.CancelFunc
}

// NewRank returns the rank of g on dev reporting to t.
func NewRank(t *testing.T, g comm.Group, dev tensor.Device) *Rank {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	return &Rank{Group: g, Device: dev, Ctx: ctx, t: t, cancel: cancel}
}

// fatal is what Fatalf panics with, to end a rank's body.
type fatal struct{}

// Do runs body as this rank's part: a Fatalf ends it, leaving the other
// ranks to time out where they wait for this one. Do may be called from
// any goroutine.
func (r *Rank) Do(body func(r *Rank)) {
	defer r.cancel()
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(fatal); !ok {
				panic(v)
			}
		}
	}()
	body(r)
}

// Errorf reports a failure of this rank and goes on.
func (r *Rank) Errorf(format string, args ...any) {
	r.t.Helper()
	r.t.Errorf("rank %d: %s", r.Rank(), fmt.Sprintf(format, args...))
}

// Fatalf reports a failure of this rank and ends its body.
func (r *Rank) Fatalf(format string, args ...any) {
	r.t.Helper()
	r.Errorf(format, args...)
	panic(fatal{})
}

// Check ends the body with err's report unless err is nil.
func (r *Rank) Check(what string, err error) {
	r.t.Helper()
	if err != nil {
		r.Fatalf("%s: %v", what, err)
	}
}

// Sync waits until every rank has called it and this rank's transfers
// have completed: a barrier, then Flush where the group has one.
func (r *Rank) Sync() {
	r.t.Helper()
	r.Check("barrier", r.Barrier(r.Ctx))
	if f, ok := r.Group.(interface{ Flush(context.Context) error }); ok {
		r.Check("flush", f.Flush(r.Ctx))
	}
}

// Run runs every test of the suite, each as a subtest of t with a fresh
// group from h.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		body func(r *Rank)
	}{
		{"SendRecvSizes", testSendRecvSizes},
		{"RecvMatchesByTag", testRecvMatchesByTag},
		{"SendRecvAllPairs", testSendRecvAllPairs},
		{"SendRecvErrors", testSendRecvErrors},
		{"RecvCancel", testRecvCancel},
		{"Probe", testProbe},
		{"AllGather", testAllGather},
		{"AllToAll", testAllToAll},
		{"CollectiveMismatch", testCollectiveMismatch},
		{"CollectiveCancel", testCollectiveCancel},
		{"Barrier", testBarrier},
		{"Gather", testGather},
		{"Broadcast", testBroadcast},
		{"ControlMessages", testControlMessages},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { h(t, tt.body) })
	}
}

// fill returns n values that identify (a, b, i), so that a misrouted or
// misplaced element is caught.
func fill(a, b, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(a*1_000_000 + b*10_000 + i%10_000)
	}
	return s
}

// alloc allocates a tensor on r's device holding data.
func (r *Rank) alloc(cat tensor.Category, data []float32) *tensor.Tensor {
	return tensor.FromHost(r.Device, cat, tensor.Shape{len(data)}, data)
}

// equal reports unless got equals want element by element.
func (r *Rank) equal(what string, got, want []float32) {
	r.t.Helper()
	if len(got) != len(want) {
		r.Errorf("%s: got %d elements, want %d", what, len(got), len(want))
		return
	}
	for i := range got {
		if got[i] != want[i] {
			r.Errorf("%s: element %d: got %v, want %v", what, i, got[i], want[i])
			return
		}
	}
}

// stats reports unless this rank's Stats equal want.
func (r *Rank) stats(want comm.Stats) {
	r.t.Helper()
	if got := r.Stats(); got != want {
		r.Errorf("stats: got %+v, want %+v", got, want)
	}
}

// errorIs reports unless err's text is want and, when is is set, err
// wraps it.
func (r *Rank) errorIs(what string, err error, want string, is error) {
	r.t.Helper()
	if err == nil || err.Error() != want {
		r.Errorf("%s: got error %v, want %q", what, err, want)
	}
	if is != nil && !errors.Is(err, is) {
		r.Errorf("%s: error %v is not %v", what, err, is)
	}
}

// errorHasPrefix reports unless err starts with prefix and wraps is.
func (r *Rank) errorHasPrefix(what string, err error, prefix string, is error) {
	r.t.Helper()
	if err == nil || !strings.HasPrefix(err.Error(), prefix) {
		r.Errorf("%s: got error %v, want it to start with %q", what, err, prefix)
	}
	if is != nil && !errors.Is(err, is) {
		r.Errorf("%s: error %v is not %v", what, err, is)
	}
}

// tag returns a distinct tag for message i.
func tag(i int) comm.Tag {
	return comm.Tag{Step: i / 4, Kind: fmt.Sprintf("kind%d", i%2), Stage: i % 4, Micro: i}
}

// syncCollective is a collective that moves nothing: every rank returns once all
// have entered it. Tests use it to check that the ranks' collectives are
// still aligned.
func (r *Rank) syncCollective(i int) {
	r.t.Helper()
	r.Check("empty allgather", r.AllGather(r.Ctx, comm.Tag{Step: i, Kind: "commtest-sync"}, nil, make([]*tensor.Tensor, r.Size())))
}
