package profiler

// WholeOp is the Block of an event that times a whole op rather than one
// block of it.
const WholeOp = -1

// blockOps are the compute ops timed per block, in BlockTiming's field
// order.
var blockOps = [...]string{"forward", "backward", "recompute", "predict", "backward-input", "backward-weight"}

// blockTimings returns each block's per-call times, the median over the
// measured steps of each step's mean per call, or nil without per-block
// events. Samples is a forward call's (a micro-batch); a predict call
// processes a shard, B/K samples.
func (r *Run) blockTimings() []BlockTiming {
	if len(r.Blocks) == 0 || !r.hasBlockEvents() {
		return nil
	}
	nb := len(r.Blocks)
	// perStep[b][o] are block b's per-call means of op blockOps[o], one
	// per step in which it ran.
	perStep := make([][len(blockOps)][]int64, nb)
	type acc struct{ sum, calls int64 }
	for _, s := range r.Steps {
		cur := make([][len(blockOps)]acc, nb)
		for _, ds := range s.Devices {
			for _, e := range ds.Events {
				if e.Block < 0 || e.Block >= nb {
					continue
				}
				if o := blockOpIndex(e.Op); o >= 0 {
					cur[e.Block][o].sum += e.EndNanos - e.StartNanos
					cur[e.Block][o].calls++
				}
			}
		}
		for b := range cur {
			for o, a := range cur[b] {
				if a.calls > 0 {
					perStep[b][o] = append(perStep[b][o], a.sum/a.calls)
				}
			}
		}
	}
	samples := 0
	if r.Config.Micro > 0 {
		samples = r.Config.MicroBatchSize()
	}
	out := make([]BlockTiming, nb)
	for b := range nb {
		out[b] = BlockTiming{
			Block: b, Name: r.Blocks[b].Name, Stage: r.stageOf(b), Samples: samples,
			ForwardNanos:        Median(perStep[b][0]),
			BackwardNanos:       Median(perStep[b][1]),
			RecomputeNanos:      Median(perStep[b][2]),
			PredictNanos:        Median(perStep[b][3]),
			BackwardInputNanos:  Median(perStep[b][4]),
			BackwardWeightNanos: Median(perStep[b][5]),
		}
	}
	return out
}

// blockOpIndex returns op's index in blockOps, or −1.
func blockOpIndex(op string) int {
	for i, o := range blockOps {
		if o == op {
			return i
		}
	}
	return -1
}

// hasBlockEvents reports whether any measured step holds per-block
// events.
func (r *Run) hasBlockEvents() bool {
	for _, s := range r.Steps {
		for _, ds := range s.Devices {
			for _, e := range ds.Events {
				if e.Block != WholeOp {
					return true
				}
			}
		}
	}
	return false
}

// stageOf returns the stage that owns block b.
func (r *Run) stageOf(b int) int {
	for s := 0; s+1 < len(r.Bounds); s++ {
		if b < r.Bounds[s+1] {
			return s
		}
	}
	return len(r.Bounds) - 2
}
