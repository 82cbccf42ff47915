package comm_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
)

func TestAllGather(t *testing.T) {
	tests := []struct {
		name        string
		contributes func(p, k int) bool
	}{
		{name: "every rank", contributes: func(int, int) bool { return true }},
		// coop's synchronisation: the last device's stage is not gathered.
		{name: "all but the last", contributes: func(p, k int) bool { return p < k-1 }},
		{name: "rank 0 only", contributes: func(p, _ int) bool { return p == 0 }},
		{name: "nobody", contributes: func(int, int) bool { return false }},
	}
	for _, tt := range tests {
		for k := 1; k <= 5; k++ {
			t.Run(fmt.Sprintf("%s/K=%d", tt.name, k), func(t *testing.T) {
				testAllGather(t, k, func(p int) bool { return tt.contributes(p, k) })
			})
		}
	}
}

func testAllGather(t *testing.T, k int, contributes func(p int) bool) {
	devs := newDevices(t, k)
	tr := comm.NewInProcessTransport(k)
	eps := tr.Endpoints()
	ctx := testContext(t)
	size := func(p int) int { return 2 + 3*p } // every rank's piece has its own size

	dsts := make([][]*tensor.Tensor, k)
	errs := runRanks(t, k, func(r int) error {
		var local *tensor.Tensor
		if contributes(r) {
			local = alloc(devs[r], tensor.Weights, fill(r, 0, size(r)))
		}
		dsts[r] = make([]*tensor.Tensor, k)
		for p := range k {
			if p != r && contributes(p) {
				dsts[r][p] = devs[r].Alloc(tensor.Comm, size(p))
			}
		}
		err := eps[r].AllGather(ctx, tag(3), local, dsts[r])
		local.Release() // others may still be copying it
		return err
	})
	noErrors(t, errs)

	var wantBytes, wantMessages int64
	for r := range k {
		var comm int64
		for p, dst := range dsts[r] {
			if dst == nil {
				continue
			}
			equal(t, fmt.Sprintf("rank %d's piece from %d", r, p), tensor.ToHost(dst), fill(p, 0, size(p)))
			comm += dst.Bytes()
			dst.Release()
		}
		wantBytes += comm
		if contributes(r) {
			wantMessages += int64(k - 1)
		}
		// Received bytes sit in the receiver's comm category; every
		// contribution was released after its last copy.
		m := devs[r].Memory()
		if m.LiveBytes[tensor.Comm] != 0 || m.PeakBytes[tensor.Comm] != comm || m.LiveBytes[tensor.Weights] != 0 {
			t.Errorf("rank %d: %d comm bytes (peak %d, want %d), %d weight bytes; want all released",
				r, m.LiveBytes[tensor.Comm], m.PeakBytes[tensor.Comm], comm, m.LiveBytes[tensor.Weights])
		}
	}
	balanced(t, eps, wantBytes, wantMessages)
	if err := tr.Close(); err != nil {
		t.Error(err)
	}
	noLeak(t, devs, make([]int64, k))
}

func TestAllToAll(t *testing.T) {
	tests := []struct {
		name  string
		sends func(p, q, k int) bool // whether rank p sends rank q a piece
	}{
		{name: "every pair", sends: func(int, int, int) bool { return true }},
		// coop's boundaries: rank p sends the input of stage q, q ≥ 1,
		// computed from shard p, to rank q.
		{name: "nothing to rank 0", sends: func(_, q, _ int) bool { return q >= 1 }},
		{name: "ring", sends: func(p, q, k int) bool { return q == (p+1)%k }},
		{name: "own parts only", sends: func(p, q, _ int) bool { return p == q }},
		{name: "nothing", sends: func(int, int, int) bool { return false }},
	}
	for _, tt := range tests {
		for k := 1; k <= 5; k++ {
			t.Run(fmt.Sprintf("%s/K=%d", tt.name, k), func(t *testing.T) {
				testAllToAll(t, k, func(p, q int) bool { return tt.sends(p, q, k) })
			})
		}
	}
}

func testAllToAll(t *testing.T, k int, sends func(p, q int) bool) {
	devs := newDevices(t, k)
	tr := comm.NewInProcessTransport(k)
	eps := tr.Endpoints()
	ctx := testContext(t)
	size := func(p, q int) int { return 1 + p + 2*q }

	dsts := make([][]*tensor.Tensor, k)
	errs := runRanks(t, k, func(r int) error {
		parts := make([]*tensor.Tensor, k)
		dsts[r] = make([]*tensor.Tensor, k)
		for q := range k {
			if sends(r, q) {
				parts[q] = alloc(devs[r], tensor.Boundary, fill(r, q, size(r, q)))
			}
			if sends(q, r) {
				dsts[r][q] = devs[r].Alloc(tensor.Comm, size(q, r))
			}
		}
		err := eps[r].AllToAll(ctx, tag(4), parts, dsts[r])
		for _, p := range parts {
			p.Release()
		}
		return err
	})
	noErrors(t, errs)

	var wantBytes, wantMessages int64
	for r := range k {
		for p, dst := range dsts[r] {
			if dst == nil {
				continue
			}
			equal(t, fmt.Sprintf("rank %d's piece from %d", r, p), tensor.ToHost(dst), fill(p, r, size(p, r)))
			if p != r {
				wantBytes += dst.Bytes()
				wantMessages++
			}
			dst.Release()
		}
	}
	// The own part is copied but not moved between devices.
	balanced(t, eps, wantBytes, wantMessages)
	if err := tr.Close(); err != nil {
		t.Error(err)
	}
	noLeak(t, devs, make([]int64, k))
}

// call is one rank's collective call in a mismatch test; it allocates its
// tensors on dev and releases them before returning.
type call func(ctx context.Context, e comm.Endpoint, dev tensor.Device) error

func allGather(tg comm.Tag, local int, dsts ...int) call {
	return func(ctx context.Context, e comm.Endpoint, dev tensor.Device) error {
		var l *tensor.Tensor
		if local > 0 {
			l = dev.Alloc(tensor.Weights, local)
		}
		ds := allocAll(dev, dsts)
		defer releaseAll(append(ds, l))
		return e.AllGather(ctx, tg, l, ds)
	}
}

func allToAll(tg comm.Tag, parts, dsts []int) call {
	return func(ctx context.Context, e comm.Endpoint, dev tensor.Device) error {
		ps, ds := allocAll(dev, parts), allocAll(dev, dsts)
		defer releaseAll(append(ps, ds...))
		return e.AllToAll(ctx, tg, ps, ds)
	}
}

// allocAll allocates tensors of the given element counts, nil for 0.
func allocAll(dev tensor.Device, sizes []int) []*tensor.Tensor {
	ts := make([]*tensor.Tensor, len(sizes))
	for i, n := range sizes {
		if n > 0 {
			ts[i] = dev.Alloc(tensor.Comm, n)
		}
	}
	return ts
}

// after delays c, so that the other ranks' calls come first.
func after(c call) call {
	return func(ctx context.Context, e comm.Endpoint, dev tensor.Device) error {
		time.Sleep(30 * time.Millisecond)
		return c(ctx, e, dev)
	}
}

func releaseAll(ts []*tensor.Tensor) {
	for _, t := range ts {
		t.Release()
	}
}

func TestCollectiveMismatch(t *testing.T) {
	tests := []struct {
		name  string
		calls []call   // one per rank
		want  []string // per rank: "" for success, else the error's text
	}{
		{
			name:  "tags differ",
			calls: []call{allGather(tag(0), 4, 0, 4), allGather(tag(1), 4, 4, 0)},
			want: []string{
				"allgather, step 0 kind0 stage 0 micro 0: mismatch: rank 1 called allgather, step 0 kind1 stage 1 micro 1",
				"allgather, step 0 kind1 stage 1 micro 1: mismatch: rank 0 called allgather, step 0 kind0 stage 0 micro 0",
			},
		},
		{
			name:  "kinds differ",
			calls: []call{allGather(tag(0), 4, 0, 4), allToAll(tag(0), []int{0, 4}, []int{0, 4})},
			want: []string{
				"allgather, step 0 kind0 stage 0 micro 0: mismatch: rank 1 called alltoall, step 0 kind0 stage 0 micro 0",
				"alltoall, step 0 kind0 stage 0 micro 0: mismatch: rank 0 called allgather, step 0 kind0 stage 0 micro 0",
			},
		},
		{
			name:  "piece expected, nothing sent",
			calls: []call{allGather(tag(0), 4, 0, 4), allGather(tag(0), 0, 4, 0)},
			want:  []string{"allgather, step 0 kind0 stage 0 micro 0: mismatch: rank 1 sent nothing, dsts[1] expects 4 elements", ""},
		},
		{
			name:  "piece sent, nothing expected",
			calls: []call{allToAll(tag(0), []int{0, 0}, []int{0, 0}), allToAll(tag(0), []int{3, 0}, []int{0, 0})},
			want:  []string{"alltoall, step 0 kind0 stage 0 micro 0: mismatch: rank 1 sent 3 elements, dsts[1] is nil", ""},
		},
		{
			name:  "element counts differ",
			calls: []call{allGather(tag(0), 4, 0, 3), allGather(tag(0), 4, 4, 0)},
			want: []string{
				"allgather, step 0 kind0 stage 0 micro 0: piece from rank 1: mismatch: 4 elements sent, destination [3] holds 3",
				"",
			},
		},
		{
			name: "wrong number of destinations",
			// Rank 0 fails after the others posted their pieces to it.
			calls: []call{after(allGather(tag(0), 4, 0)), allGather(tag(0), 4, 4, 0, 4), allGather(tag(0), 4, 4, 4, 0)},
			want: []string{
				"allgather, step 0 kind0 stage 0 micro 0: 1 destinations for 3 ranks",
				"allgather, step 0 kind0 stage 0 micro 0: rank 0 failed its side: 1 destinations for 3 ranks",
				"allgather, step 0 kind0 stage 0 micro 0: rank 0 failed its side: 1 destinations for 3 ranks",
			},
		},
		{
			name:  "own part without destination",
			calls: []call{allToAll(tag(0), []int{2, 2}, []int{0, 2}), allToAll(tag(0), []int{2, 2}, []int{2, 2})},
			want: []string{
				"alltoall, step 0 kind0 stage 0 micro 0: mismatch: parts[0] and dsts[0] must both be nil or both be set",
				"alltoall, step 0 kind0 stage 0 micro 0: rank 0 failed its side: mismatch: parts[0] and dsts[0] must both be nil or both be set",
			},
		},
		{
			name: "own destination in an all-gather",
			// Rank 0 fails before rank 1 posts its piece to it.
			calls: []call{allGather(tag(0), 4, 4, 4), after(allGather(tag(0), 4, 4, 0))},
			want: []string{
				"allgather, step 0 kind0 stage 0 micro 0: dsts[0] is this rank's own and must be nil",
				"allgather, step 0 kind0 stage 0 micro 0: rank 0 failed its side: dsts[0] is this rank's own and must be nil",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := len(tt.calls)
			devs := newDevices(t, k)
			tr := comm.NewInProcessTransport(k)
			eps := tr.Endpoints()
			ctx := testContext(t)
			errs := runRanks(t, k, func(r int) error { return tt.calls[r](ctx, eps[r], devs[r]) })
			for r, err := range errs {
				switch {
				case tt.want[r] == "" && err != nil:
					t.Errorf("rank %d: %v", r, err)
				case tt.want[r] != "" && (err == nil || err.Error() != tt.want[r]):
					t.Errorf("rank %d: got error %v, want %q", r, err, tt.want[r])
				case strings.Contains(tt.want[r], "mismatch") && !errors.Is(err, comm.ErrMismatch):
					t.Errorf("rank %d: %v is not %v", r, err, comm.ErrMismatch)
				}
			}

			// The failed call leaves the ranks aligned: the next
			// collective works.
			errs = runRanks(t, k, func(r int) error {
				sizes := make([]int, k)
				for p := range sizes {
					if p != r {
						sizes[p] = 5
					}
				}
				return allGather(tag(9), 5, sizes...)(ctx, eps[r], devs[r])
			})
			noErrors(t, errs)

			// Mismatched pieces were released; nothing is left in flight.
			if err := tr.Close(); err != nil {
				t.Error(err)
			}
			noLeak(t, devs, make([]int64, k))
		})
	}
}

func TestCollectiveCancel(t *testing.T) {
	tests := []struct {
		name string
		call func(rank int) call
		want string
	}{
		{
			name: "allgather",
			call: func(r int) call {
				dsts := []int{6, 6, 6}
				dsts[r] = 0
				return allGather(tag(2), 6, dsts...)
			},
			want: "allgather, step 0 kind0 stage 2 micro 2: context canceled",
		},
		{
			name: "alltoall",
			call: func(int) call { return allToAll(tag(2), []int{6, 6, 6}, []int{6, 6, 6}) },
			want: "alltoall, step 0 kind0 stage 2 micro 2: context canceled",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			devs := newDevices(t, 3)
			before := runtime.NumGoroutine()
			tr := comm.NewInProcessTransport(3)
			eps := tr.Endpoints()
			ctx, cancel := context.WithCancel(testContext(t))
			time.AfterFunc(20*time.Millisecond, cancel)
			// Rank 2 never calls: ranks 0 and 1 wait until cancelled.
			errs := runRanks(t, 2, func(r int) error { return tt.call(r)(ctx, eps[r], devs[r]) })
			for r, err := range errs {
				if !errors.Is(err, context.Canceled) || err.Error() != tt.want {
					t.Errorf("rank %d: got %v, want %q", r, err, tt.want)
				}
			}
			// Their pieces for rank 2 are still retained; Close frees
			// them and says so.
			if err := tr.Close(); err == nil || !strings.Contains(err.Error(), "2 messages never received") {
				t.Errorf("close: got %v, want 2 messages never received", err)
			}
			noLeak(t, devs, make([]int64, 3))
			settled(t, before)
		})
	}
}
