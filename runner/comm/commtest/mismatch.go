package commtest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
)

// call is one rank's collective call in a mismatch test; it allocates
// its tensors and releases them before returning.
type call func(r *Rank) error

// allGather calls AllGather with a contribution of local elements (0 for
// nil) and destinations of the given sizes (0 for nil).
func allGather(tg comm.Tag, local int, dsts ...int) call {
	return func(r *Rank) error {
		var l *tensor.Tensor
		if local > 0 {
			l = r.Device.Alloc(tensor.Weights, local)
		}
		ds := allocAll(r, dsts)
		defer releaseAll(append(ds, l))
		return r.AllGather(r.Ctx, tg, l, ds)
	}
}

func allToAll(tg comm.Tag, parts, dsts []int) call {
	return func(r *Rank) error {
		ps, ds := allocAll(r, parts), allocAll(r, dsts)
		defer releaseAll(append(ps, ds...))
		return r.AllToAll(r.Ctx, tg, ps, ds)
	}
}

// allocAll allocates tensors of the given element counts, nil for 0.
func allocAll(r *Rank, sizes []int) []*tensor.Tensor {
	ts := make([]*tensor.Tensor, len(sizes))
	for i, n := range sizes {
		if n > 0 {
			ts[i] = r.Device.Alloc(tensor.Comm, n)
		}
	}
	return ts
}

func releaseAll(ts []*tensor.Tensor) {
	for _, t := range ts {
		t.Release()
	}
}

// after delays c, so that the other ranks' calls come first.
func after(c call) call {
	return func(r *Rank) error {
		time.Sleep(30 * time.Millisecond)
		return c(r)
	}
}

// others returns k sizes: n for every rank but me, 0 for me.
func others(me, k, n int) []int {
	s := make([]int, k)
	for p := range s {
		if p != me {
			s[p] = n
		}
	}
	return s
}

// set returns s with s[i] = v.
func set(s []int, i, v int) []int { s[i] = v; return s }

// testCollectiveMismatch runs collectives whose calls disagree between
// ranks: every rank gets the in-process transport's error (or none), and
// the next collective still works.
func testCollectiveMismatch(r *Rank) {
	ag, at := "allgather, step 0 kind0 stage 0 micro 0: ", "alltoall, step 0 kind0 stage 0 micro 0: "
	tests := []struct {
		name string
		call func(me, k int) call
		// want returns the texts any of which rank me's error may have;
		// none for success.
		want func(me, k int) []string
	}{
		{
			name: "tags differ",
			call: func(me, k int) call {
				if me == 0 {
					return allGather(tag(0), 4, others(me, k, 4)...)
				}
				return allGather(tag(1), 4, others(me, k, 4)...)
			},
			want: func(me, k int) []string {
				if me > 0 {
					return []string{"allgather, step 0 kind1 stage 1 micro 1: mismatch: rank 0 called allgather, step 0 kind0 stage 0 micro 0"}
				}
				return eachPeer(k, func(p int) string {
					return fmt.Sprintf("%smismatch: rank %d called allgather, step 0 kind1 stage 1 micro 1", ag, p)
				})
			},
		},
		{
			name: "kinds differ",
			call: func(me, k int) call {
				if me == 0 {
					return allGather(tag(0), 4, others(me, k, 4)...)
				}
				return allToAll(tag(0), others(me, k, 4), others(me, k, 4))
			},
			want: func(me, k int) []string {
				if me > 0 {
					return []string{at + "mismatch: rank 0 called allgather, step 0 kind0 stage 0 micro 0"}
				}
				return eachPeer(k, func(p int) string {
					return fmt.Sprintf("%smismatch: rank %d called alltoall, step 0 kind0 stage 0 micro 0", ag, p)
				})
			},
		},
		{
			name: "piece expected, nothing sent",
			call: func(me, k int) call {
				dsts := others(me, k, 4)
				if me != 1 {
					dsts[1] = 0
				}
				if me == 0 {
					dsts[1] = 4
				}
				local := 4
				if me == 1 {
					local = 0
				}
				return allGather(tag(0), local, dsts...)
			},
			want: only(0, ag+"mismatch: rank 1 sent nothing, dsts[1] expects 4 elements"),
		},
		{
			name: "piece sent, nothing expected",
			call: func(me, k int) call {
				parts := make([]int, k)
				if me == 1 {
					parts[0] = 3
				}
				return allToAll(tag(0), parts, make([]int, k))
			},
			want: only(0, at+"mismatch: rank 1 sent 3 elements, dsts[1] is nil"),
		},
		{
			name: "element counts differ",
			call: func(me, k int) call {
				dsts := others(me, k, 4)
				if me == 0 {
					dsts[1] = 3
				}
				return allGather(tag(0), 4, dsts...)
			},
			want: only(0, ag+"piece from rank 1: mismatch: 4 elements sent, destination [3] holds 3"),
		},
		{
			name: "wrong number of destinations",
			// Rank 0 fails after the others posted their pieces to it.
			call: func(me, k int) call {
				if me == 0 {
					return after(allGather(tag(0), 4, 0))
				}
				return allGather(tag(0), 4, others(me, k, 4)...)
			},
			want: func(me, k int) []string {
				if me == 0 {
					return []string{fmt.Sprintf("%s1 destinations for %d ranks", ag, k)}
				}
				return []string{fmt.Sprintf("%srank 0 failed its side: 1 destinations for %d ranks", ag, k)}
			},
		},
		{
			name: "own part without destination",
			call: func(me, k int) call {
				parts, dsts := set(others(me, k, 2), me, 2), set(others(me, k, 2), me, 2)
				if me == 0 {
					dsts[0] = 0
				}
				return allToAll(tag(0), parts, dsts)
			},
			want: func(me, _ int) []string {
				const why = "mismatch: parts[0] and dsts[0] must both be nil or both be set"
				if me == 0 {
					return []string{at + why}
				}
				return []string{at + "rank 0 failed its side: " + why}
			},
		},
		{
			name: "own destination in an all-gather",
			// Rank 0 fails before the others post their pieces to it.
			call: func(me, k int) call {
				if me == 0 {
					return allGather(tag(0), 4, set(others(me, k, 4), 0, 4)...)
				}
				return after(allGather(tag(0), 4, others(me, k, 4)...))
			},
			want: func(me, _ int) []string {
				const why = "dsts[0] is this rank's own and must be nil"
				if me == 0 {
					return []string{ag + why}
				}
				return []string{ag + "rank 0 failed its side: " + why}
			},
		},
	}
	me, k := r.Rank(), r.Size()
	for i, tt := range tests {
		err := tt.call(me, k)(r)
		want := tt.want(me, k)
		switch {
		case len(want) == 0 && err != nil:
			r.Errorf("%s: %v", tt.name, err)
		case len(want) > 0 && (err == nil || !slices.Contains(want, err.Error())):
			r.Errorf("%s: got error %v, want %q", tt.name, err, strings.Join(want, `" or "`))
		case len(want) > 0 && strings.Contains(want[0], "mismatch") && !errorIsMismatch(err):
			r.Errorf("%s: %v is not %v", tt.name, err, comm.ErrMismatch)
		}
		// The ranks are still aligned: the next collective works.
		l := r.alloc(tensor.Weights, fill(me, i, 5))
		dsts := allocAll(r, others(me, k, 5))
		r.Check(tt.name+": the next allgather", r.AllGather(r.Ctx, tag(9), l, dsts))
		l.Release()
		for p, d := range dsts {
			if d != nil {
				r.equal(fmt.Sprintf("%s: next allgather's piece from %d", tt.name, p), tensor.ToHost(d), fill(p, i, 5))
			}
		}
		releaseAll(dsts)
	}
	r.Sync()
	if m := r.Device.Memory(); m.LiveTotalBytes != 0 {
		r.Errorf("%d bytes live at the end, want 0", m.LiveTotalBytes)
	}
}

// eachPeer returns f(p) for every rank p ≥ 1 of k.
func eachPeer(k int, f func(p int) string) []string {
	var out []string
	for p := 1; p < k; p++ {
		out = append(out, f(p))
	}
	return out
}

// only returns a want function: text for rank rank, success for the
// others.
func only(rank int, text string) func(me, k int) []string {
	return func(me, _ int) []string {
		if me == rank {
			return []string{text}
		}
		return nil
	}
}

func errorIsMismatch(err error) bool { return errors.Is(err, comm.ErrMismatch) }
