package predictor

import (
	"slices"
	"testing"
)

// TestPhasesAreTheBlockOps keeps the fitted phases and the schedule's
// op kinds that run blocks from drifting apart.
func TestPhasesAreTheBlockOps(t *testing.T) {
	got := slices.Sorted(slices.Values(phaseNames[:]))
	want := slices.Sorted(slices.Values(blockOps))
	if !slices.Equal(got, want) {
		t.Errorf("phases %v, want the op kinds that run blocks %v", got, want)
	}
}
