package profiler

import (
	"slices"
	"testing"

	"github.com/pipecast/pipecast/schedule"
)

// TestBlockOpsAreTheKindsThatRunBlocks keeps BlockTiming's ops and the
// schedule's table of op kinds from drifting apart.
func TestBlockOpsAreTheKindsThatRunBlocks(t *testing.T) {
	var want []string
	for _, k := range schedule.OpKinds() {
		if k.RunsBlocks() {
			want = append(want, k.String())
		}
	}
	got := slices.Sorted(slices.Values(blockOps[:]))
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("blockOps %v, want the kinds that run blocks %v", got, want)
	}
}
