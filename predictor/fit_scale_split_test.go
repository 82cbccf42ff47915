package predictor

import (
	"maps"
	"math"
	"testing"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// TestFitScalesSplitBackward checks that the zero-bubble schedules' split
// backward gets scales of its own, fitted from what the records measured
// of its two halves: slowing the measured backward-input ops by 30 %
// raises the backward-input scale by 30 % and leaves the others alone.
// (The scales once priced neither half, so both took backward's scale
// whatever the records said.)
func TestFitScalesSplitBackward(t *testing.T) {
	var recs []profiler.Record
	for _, r := range readDataset(t, schedulesData) {
		if r.Config.Model == "resnet50" && r.Config.Schedule == schedule.ZBH1 {
			recs = append(recs, r)
		}
	}
	if len(recs) == 0 {
		t.Fatalf("no resnet50 zb-h1 runs in %s", schedulesData)
	}
	slowed := make([]profiler.Record, len(recs))
	for i, r := range recs {
		slowed[i] = r
		slowed[i].Devices = nil
		for _, d := range r.Devices {
			busy := maps.Clone(d.BusyNanosByOp)
			busy["backward-input"] = int64(math.Round(1.3 * float64(busy["backward-input"])))
			d.BusyNanosByOp = busy
			slowed[i].Devices = append(slowed[i].Devices, d)
		}
	}
	c, s := onlyModel(t, mustFit(t, recs)), onlyModel(t, mustFit(t, slowed))
	for _, k := range []int{1, 2} {
		for _, m := range []int{1, 2, 4, 8, 16} {
			for _, op := range scaledOps {
				want := c.Scale(op, k, m)
				if op == "backward-input" {
					want *= 1.3
				}
				if got := s.Scale(op, k, m); !closeTo(got, want, 1e-3) {
					t.Errorf("K = %d, m = %d, backward-input 30 %% slower: scale %s %.4f, want %.4f", k, m, op, got, want)
				}
			}
		}
	}
}
