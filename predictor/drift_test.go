package predictor

import (
	"math"
	"testing"

	"github.com/pipecast/pipecast/profiler"
)

// driftRecord is a measured record of the mlp whose blocks 0 and 1 took
// fwd[i] ns forward and twice that backward at micro-batch size mb.
func driftRecord(devices, mb int, fwd ...int64) profiler.Record {
	r := profiler.Record{Kind: profiler.KindMeasured}
	r.Config.Model, r.Config.Devices, r.Config.Batch, r.Config.Micro = "mlp", devices, 4*mb, 4
	r.Env.Backend = "cpu"
	r.Config.Threads = 1
	for i, f := range fwd {
		r.Blocks = append(r.Blocks, profiler.BlockTiming{Block: i, Samples: mb, ForwardNanos: f, BackwardNanos: 2 * f})
	}
	return r
}

func TestBlockDrift(t *testing.T) {
	train := []profiler.Record{driftRecord(1, 4, 100, 300), driftRecord(1, 4, 120, 300), driftRecord(1, 4, 110, 300), driftRecord(1, 8, 50, 50)}
	// Median K = 1 forward: block 0 110, block 1 300; K = 2: 121 and 330.
	test := []profiler.Record{driftRecord(2, 4, 121, 330), driftRecord(2, 4, 121, 360), driftRecord(2, 4, 121, 300), driftRecord(2, 2, 10, 10)}
	got := BlockDrift(train, test)
	if len(got) != 2 {
		t.Fatalf("%d drifts, want forward and backward at 4 samples: %+v", len(got), got)
	}
	for _, d := range got {
		if d.Samples != 4 || d.Blocks != 2 {
			t.Errorf("%+v: want 2 blocks at 4 samples", d)
		}
		if want := (121.0 + 330) / (110 + 300); math.Abs(d.Ratio-want) > 1e-12 {
			t.Errorf("%s: ratio %v, want %v", d.Phase, d.Ratio, want)
		}
		if math.Abs(d.Min-1.1) > 1e-12 || math.Abs(d.Max-1.1) > 1e-12 {
			t.Errorf("%s: blocks' ratios %v–%v, want 1.1–1.1", d.Phase, d.Min, d.Max)
		}
	}
	if got[0].Phase != "backward" || got[1].Phase != "forward" {
		t.Errorf("phases %s, %s: want backward then forward", got[0].Phase, got[1].Phase)
	}
}
