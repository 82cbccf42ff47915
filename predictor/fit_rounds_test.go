package predictor

import (
	"testing"

	"github.com/pipecast/pipecast/profiler"
)

// TestAsRounds checks that the rounds of one configuration enter the
// block fits as one point, the median, so that a disturbed round is
// outvoted, and that other configurations and the rest of each run stay.
func TestAsRounds(t *testing.T) {
	a1, a2, a3 := driftRecord(1, 4, 100, 300), driftRecord(1, 4, 104, 310), driftRecord(1, 4, 400, 900) // a3: disturbed
	a1.ID, a2.ID, a3.ID = "a1", "a2", "a3"
	a2.Round, a3.Round = 2, 3
	a3.Steps = []profiler.Step{{Step: 1, WallNanos: 7}}
	b := driftRecord(1, 8, 50, 60)
	got := asRounds([]*profiler.Record{&a1, &b, &a2, &a3})
	if len(got) != 4 {
		t.Fatalf("%d records, want 4", len(got))
	}
	first := got[0].Blocks
	if len(first) != 2 || first[0].ForwardNanos != 104 || first[1].ForwardNanos != 310 || first[1].BackwardNanos != 620 {
		t.Errorf("merged blocks %+v: want the medians 104, 310 forward and 620 backward", first)
	}
	if got[2].Blocks != nil || got[3].Blocks != nil {
		t.Errorf("the later rounds keep block timings: %v, %v", got[2].Blocks, got[3].Blocks)
	}
	if len(got[3].Steps) != 1 || got[1] != &b {
		t.Errorf("the runs' other data or another configuration changed")
	}
	if a1.Blocks[0].ForwardNanos != 100 {
		t.Errorf("the caller's record was modified")
	}
}
