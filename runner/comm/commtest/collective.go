package commtest

import (
	"context"
	"fmt"
	"time"

	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
)

// testAllGather gathers contributions of every rank's own size, from
// some ranks or all, including one of 4 MiB.
func testAllGather(r *Rank) {
	tests := []struct {
		name        string
		contributes func(p, k int) bool
		size        func(p int) int
	}{
		{name: "every rank", contributes: func(int, int) bool { return true }, size: func(p int) int { return 2 + 3*p }},
		// coop's synchronisation: the last device's stage is not gathered.
		{name: "all but the last", contributes: func(p, k int) bool { return p < k-1 }, size: func(p int) int { return 2 + 3*p }},
		{name: "rank 0 only", contributes: func(p, _ int) bool { return p == 0 }, size: func(int) int { return 7 }},
		{name: "nobody", contributes: func(int, int) bool { return false }, size: func(int) int { return 1 }},
		{name: "4 MiB each", contributes: func(int, int) bool { return true }, size: func(int) int { return 1 << 20 }},
	}
	me, k := r.Rank(), r.Size()
	var want comm.Stats
	for i, tt := range tests {
		var local *tensor.Tensor
		if tt.contributes(me, k) {
			local = r.alloc(tensor.Weights, fill(me, i, tt.size(me)))
			want.SentBytes += local.Bytes() * int64(k-1)
		}
		dsts := make([]*tensor.Tensor, k)
		for p := range k {
			if p != me && tt.contributes(p, k) {
				dsts[p] = r.Device.Alloc(tensor.Comm, tt.size(p))
			}
		}
		err := r.AllGather(r.Ctx, tag(i), local, dsts)
		local.Release() // others may still be copying it
		r.Check(tt.name, err)
		for p, dst := range dsts {
			if dst != nil {
				r.equal(fmt.Sprintf("%s: piece from %d", tt.name, p), tensor.ToHost(dst), fill(p, i, tt.size(p)))
				want.ReceivedBytes += dst.Bytes()
				want.Messages++
				dst.Release()
			}
		}
	}
	r.Sync()
	r.stats(want)
	if m := r.Device.Memory(); m.LiveTotalBytes != 0 {
		r.Errorf("%d bytes live at the end, want 0", m.LiveTotalBytes)
	}
}

// testAllToAll exchanges pieces of every pair's own size between some
// pairs or all, the own part copied locally and not counted.
func testAllToAll(r *Rank) {
	tests := []struct {
		name  string
		sends func(p, q, k int) bool // whether rank p sends rank q a piece
	}{
		{name: "every pair", sends: func(int, int, int) bool { return true }},
		// coop's boundaries: rank p sends the input of stage q ≥ 1,
		// computed from shard p, to rank q.
		{name: "nothing to rank 0", sends: func(_, q, _ int) bool { return q >= 1 }},
		{name: "ring", sends: func(p, q, k int) bool { return q == (p+1)%k }},
		{name: "own parts only", sends: func(p, q, _ int) bool { return p == q }},
		{name: "nothing", sends: func(int, int, int) bool { return false }},
	}
	me, k := r.Rank(), r.Size()
	size := func(p, q int) int { return 1 + p + 2*q }
	var want comm.Stats
	for i, tt := range tests {
		parts, dsts := make([]*tensor.Tensor, k), make([]*tensor.Tensor, k)
		for q := range k {
			if tt.sends(me, q, k) {
				parts[q] = r.alloc(tensor.Boundary, fill(me*k+q, i, size(me, q)))
				if q != me {
					want.SentBytes += parts[q].Bytes()
				}
			}
			if tt.sends(q, me, k) {
				dsts[q] = r.Device.Alloc(tensor.Comm, size(q, me))
			}
		}
		err := r.AllToAll(r.Ctx, tag(i), parts, dsts)
		for _, p := range parts {
			p.Release()
		}
		r.Check(tt.name, err)
		for p, dst := range dsts {
			if dst == nil {
				continue
			}
			r.equal(fmt.Sprintf("%s: piece from %d", tt.name, p), tensor.ToHost(dst), fill(p*k+me, i, size(p, me)))
			if p != me {
				want.ReceivedBytes += dst.Bytes()
				want.Messages++
			}
			dst.Release()
		}
	}
	r.Sync()
	r.stats(want)
	if m := r.Device.Memory(); m.LiveTotalBytes != 0 {
		r.Errorf("%d bytes live at the end, want 0", m.LiveTotalBytes)
	}
}

// testCollectiveCancel cancels the collective of every rank but the
// last, which joins only after they have given up: it still receives
// their pieces, and the ranks' next collective works.
func testCollectiveCancel(r *Rank) {
	tests := []struct {
		name string
		call func(ctx context.Context, tg comm.Tag, local *tensor.Tensor, dsts []*tensor.Tensor) error
	}{
		{name: "allgather", call: func(ctx context.Context, tg comm.Tag, local *tensor.Tensor, dsts []*tensor.Tensor) error {
			return r.AllGather(ctx, tg, local, dsts)
		}},
		{name: "alltoall", call: func(ctx context.Context, tg comm.Tag, local *tensor.Tensor, dsts []*tensor.Tensor) error {
			parts := make([]*tensor.Tensor, len(dsts))
			for p := range parts {
				if dsts[p] != nil {
					parts[p] = local
				}
			}
			return r.AllToAll(ctx, tg, parts, dsts)
		}},
	}
	me, k := r.Rank(), r.Size()
	last := k - 1
	for i, tt := range tests {
		tg := tag(2)
		tg.Step = i
		local := r.alloc(tensor.Weights, fill(me, i, 6))
		dsts := allocAll(r, others(me, k, 6))
		if me != last {
			ctx, cancel := context.WithCancel(r.Ctx)
			time.AfterFunc(20*time.Millisecond, cancel)
			err := tt.call(ctx, tg, local, dsts)
			cancel()
			r.errorIs(tt.name, err, fmt.Sprintf("%s, %v: context canceled", tt.name, tg), context.Canceled)
		}
		r.Check("barrier", r.Barrier(r.Ctx))
		if me == last {
			r.Check(tt.name+" after the others gave up", tt.call(r.Ctx, tg, local, dsts))
			for p, d := range dsts {
				if d != nil {
					r.equal(fmt.Sprintf("%s: piece from %d", tt.name, p), tensor.ToHost(d), fill(p, i, 6))
				}
			}
		}
		local.Release()
		releaseAll(dsts)
		r.syncCollective(i)
	}
	r.Sync()
	if m := r.Device.Memory(); m.LiveTotalBytes != 0 {
		r.Errorf("%d bytes live at the end, want 0", m.LiveTotalBytes)
	}
}
