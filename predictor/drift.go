package predictor

import (
	"cmp"
	"math"
	"slices"

	"github.com/pipecast/pipecast/profiler"
)

// Drift compares the blocks of one cost model and phase at one
// micro-batch size as two sets of runs measured them: how long they took
// in the held-out runs against the fitted ones. A forecast prices a block
// as the fitted runs measured it, so a ratio away from 1 is an error the
// fit cannot see, whatever the schedule: the blocks of a K = 2 run
// slowed by the device beside it, or sped up by holding half the model.
type Drift struct {
	// Fold names the held-out group in a validation ("K=2"); "" from
	// BlockDrift.
	Fold string
	Key  Key
	// Samples is the micro-batch size, Seq a language model's sequence
	// length (0, left out of JSON, for any other model), Phase "forward"
	// or "backward".
	Samples int
	Seq     int `json:",omitempty"`
	Phase   string
	// Blocks counts the blocks both sets timed at this size; Ratio is
	// their summed median time in the held-out runs over that in the
	// fitted ones, Min and Max the extremes of the blocks' own ratios.
	Blocks          int
	Ratio, Min, Max float64
}

// driftKey is a block's phase at a size in one cost model.
type driftKey struct {
	key          Key
	samples, seq int
	phase        string
	block        int
}

// blockTimes collects every block's measured forward and backward times
// of the measured runs of recs, by cost model, size, phase and block.
func blockTimes(recs []profiler.Record) map[driftKey][]float64 {
	out := map[driftKey][]float64{}
	for i := range recs {
		r := &recs[i]
		if r.Kind != profiler.KindMeasured || !r.Config.DevicesAlike() {
			continue
		}
		k := KeyOf(r)
		for _, b := range r.Blocks {
			if b.ForwardNanos > 0 {
				dk := driftKey{k, b.Samples, r.Config.Seq, PhaseForward.String(), b.Block}
				out[dk] = append(out[dk], float64(b.ForwardNanos))
			}
			if b.BackwardNanos > 0 {
				dk := driftKey{k, b.Samples, r.Config.Seq, PhaseBackward.String(), b.Block}
				out[dk] = append(out[dk], float64(b.BackwardNanos))
			}
		}
	}
	return out
}

// BlockDrift compares the blocks the held-out runs (test) timed with the
// same blocks at the same micro-batch size (and sequence length) in the
// fitted runs (train): one Drift per cost model, size and phase that both
// timed, ordered by model, size and phase.
func BlockDrift(train, test []profiler.Record) []Drift {
	fitted, held := blockTimes(train), blockTimes(test)
	type group struct {
		key          Key
		samples, seq int
		phase        string
	}
	type acc struct {
		d          Drift
		fitted, at float64
	}
	groups := map[group]*acc{}
	for dk, ts := range held {
		fs, ok := fitted[dk]
		if !ok {
			continue
		}
		g := group{dk.key, dk.samples, dk.seq, dk.phase}
		a := groups[g]
		if a == nil {
			a = &acc{d: Drift{Key: dk.key, Samples: dk.samples, Seq: dk.seq, Phase: dk.phase, Min: math.Inf(1), Max: math.Inf(-1)}}
			groups[g] = a
		}
		f, t := profiler.Median(fs), profiler.Median(ts)
		a.d.Blocks++
		a.fitted += f
		a.at += t
		a.d.Min, a.d.Max = min(a.d.Min, t/f), max(a.d.Max, t/f)
	}
	out := make([]Drift, 0, len(groups))
	for _, a := range groups {
		a.d.Ratio = a.at / a.fitted
		out = append(out, a.d)
	}
	slices.SortFunc(out, func(x, y Drift) int {
		return cmp.Or(cmp.Compare(x.Key.String(), y.Key.String()), cmp.Compare(x.Samples, y.Samples), cmp.Compare(x.Seq, y.Seq),
			cmp.Compare(x.Phase, y.Phase))
	})
	return out
}
