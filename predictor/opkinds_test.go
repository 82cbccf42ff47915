package predictor

import (
	"slices"
	"testing"

	"github.com/pipecast/pipecast/internal/astcheck"
)

// TestPriceOpHandlesEveryOpKind checks that the simulation prices every
// op kind the schedule package declares.
func TestPriceOpHandlesEveryOpKind(t *testing.T) {
	kinds, err := astcheck.Constants("../schedule/program.go", "OpKind")
	if err != nil {
		t.Fatal(err)
	}
	cases, err := astcheck.CaseSelectors("price.go", "priceOp", "schedule")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds {
		if !slices.Contains(cases, k) {
			t.Errorf("priceOp has no case for schedule.%s", k)
		}
	}
}
