package predictor

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"sync"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/schedule"
)

// Memory in the order of a timeline. What a device holds at its peak
// depends on when its ops run relative to other devices': an activation
// a device has sent stays on it until the receiver copies it, so a
// sender that runs ahead of a slow receiver holds several. A meta run left
// to itself runs every op instantly and keeps nothing in flight; run in
// the order of the predicted timeline it keeps what that timeline keeps.

// opOrder lets ops start in the order of a timeline's start times: an op
// may start once every op that starts strictly earlier (in the same
// step) has started. Ops with equal starts may start in any order, so a
// tie never deadlocks (a zero-cost send and the receive it feeds).
type opOrder struct {
	mu   sync.Mutex
	cond *sync.Cond
	// need[d][i] is how many ops of a step start before op i of device
	// d; n is the ops of a step.
	need [][]int
	n    int
	// started counts the ops started since the run began; step[d] is
	// the step device d is in.
	started int
	step    []int
	begun   []bool
}

// newOpOrder orders the ops of tl's program by their start times, in a
// job of replicas copies of it: job device d runs program device d mod
// K, at the same times.
func newOpOrder(tl *schedule.Timeline, replicas int) *opOrder {
	type entry struct {
		d, i  int
		start float64
	}
	k := len(tl.Start)
	starts := make([][]float64, max(replicas, 1)*k)
	for d := range starts {
		starts[d] = tl.Start[d%k]
	}
	var all []entry
	for d, starts := range starts {
		for i, s := range starts {
			all = append(all, entry{d, i, s})
		}
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].start < all[b].start })
	o := &opOrder{need: make([][]int, len(starts)), n: len(all),
		step: make([]int, len(starts)), begun: make([]bool, len(starts))}
	o.cond = sync.NewCond(&o.mu)
	for d := range o.need {
		o.need[d] = make([]int, len(starts[d]))
	}
	first := 0
	for j, e := range all {
		if j > 0 && e.start != all[j-1].start {
			first = j
		}
		o.need[e.d][e.i] = first
	}
	return o
}

// gate is a runner.RunOptions.Gate (runner.MetaStep's gate): op i of device d waits until every op
// that starts before it in the timeline has started.
func (o *opOrder) gate(ctx context.Context, d, i int) error {
	stop := context.AfterFunc(ctx, func() {
		o.mu.Lock()
		o.cond.Broadcast()
		o.mu.Unlock()
	})
	defer stop()
	o.mu.Lock()
	defer o.mu.Unlock()
	if i == 0 {
		if o.begun[d] {
			o.step[d]++ // device d starts its next step
		}
		o.begun[d] = true
	}
	for o.started < o.step[d]*o.n+o.need[d][i] {
		if err := ctx.Err(); err != nil {
			return err
		}
		o.cond.Wait()
	}
	o.started++
	o.cond.Broadcast()
	return nil
}

// fingerprint identifies the order for caching.
func (o *opOrder) fingerprint() uint64 {
	h := fnv.New64a()
	for d, need := range o.need {
		fmt.Fprint(h, d, need)
	}
	return h.Sum64()
}

// orderedMetaRun is metaRun with the ops of each step started in the
// order of tl.
func orderedMetaRun(ctx context.Context, cfg config.Config, tl *schedule.Timeline) (*metaStep, error) {
	o := newOpOrder(tl, cfg.Schedule.Replicas)
	return cachedMetaRun(ctx, cfg, o.fingerprint(), func(ctx context.Context, d, i int) error { return o.gate(ctx, d, i) })
}
