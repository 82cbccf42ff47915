package predictor

import (
	"github.com/pipecast/pipecast/profiler"
)

// asRounds returns recs with the block timings of each configuration's
// runs (its rounds, or any runs alike in everything but their
// measurements; see runKey) merged into one point: the first run keeps,
// block by block and phase by phase, the median over the runs, and the
// others keep none. A configuration measured five times then weighs in
// the block fits as one measured once does, and a round disturbed by the
// machine's other tenants is outvoted rather than averaged in. Everything
// else of each run (steps, events, calibration) is kept.
func asRounds(recs []*profiler.Record) []*profiler.Record {
	groups := map[string][]int{}
	var order []string
	for i, r := range recs {
		k := runKey(r)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	out := make([]*profiler.Record, len(recs))
	copy(out, recs)
	for _, k := range order {
		idx := groups[k]
		if len(idx) < 2 {
			continue
		}
		first := *recs[idx[0]]
		first.Blocks = medianBlocks(recs, idx)
		out[idx[0]] = &first
		for _, i := range idx[1:] {
			r := *recs[i]
			r.Blocks = nil
			out[i] = &r
		}
	}
	return out
}

// medianBlocks returns the block timings of the runs recs[idx], each
// phase of each block (at the first run's samples) the median over the
// runs that timed it.
func medianBlocks(recs []*profiler.Record, idx []int) []profiler.BlockTiming {
	type slot struct{ block, samples int }
	var order []slot
	times := map[slot]*[6][]int64{}
	names := map[slot]profiler.BlockTiming{}
	for _, i := range idx {
		for _, b := range recs[i].Blocks {
			s := slot{b.Block, b.Samples}
			ts := times[s]
			if ts == nil {
				ts = &[6][]int64{}
				times[s] = ts
				order = append(order, s)
				names[s] = profiler.BlockTiming{Block: b.Block, Name: b.Name, Stage: b.Stage, Samples: b.Samples}
			}
			for p, ns := range [...]int64{b.ForwardNanos, b.BackwardNanos, b.RecomputeNanos, b.PredictNanos,
				b.BackwardInputNanos, b.BackwardWeightNanos} {
				if ns > 0 {
					ts[p] = append(ts[p], ns)
				}
			}
		}
	}
	out := make([]profiler.BlockTiming, 0, len(order))
	for _, s := range order {
		b, ts := names[s], times[s]
		b.ForwardNanos, b.BackwardNanos, b.RecomputeNanos = profiler.Median(ts[0]), profiler.Median(ts[1]), profiler.Median(ts[2])
		b.PredictNanos, b.BackwardInputNanos, b.BackwardWeightNanos = profiler.Median(ts[3]), profiler.Median(ts[4]), profiler.Median(ts[5])
		out = append(out, b)
	}
	return out
}
