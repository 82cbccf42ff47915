package predictor

import (
	"slices"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/profiler"
)

// dataPartitions returns the splits the runs of key in recs were given
// (block counts per stage, each once, in the data's order) where the
// data's balance is a split given, so that DataSweep's forecasts split
// the model as the runs did; nil for any other balance.
func dataPartitions(recs []profiler.Record, key Key, balance config.Balance) [][]int {
	if balance != config.BalanceGiven {
		return nil
	}
	var out [][]int
	for i := range recs {
		r := &recs[i]
		if KeyOf(r) != key || config.Balance(r.Config.Balance) != config.BalanceGiven {
			continue
		}
		if p := config.SizesOf(r.Bounds()); p != nil && !slices.ContainsFunc(out, func(q []int) bool { return slices.Equal(p, q) }) {
			out = append(out, p)
		}
	}
	return out
}
