package runner

import (
	"slices"
	"testing"

	"github.com/pipecast/pipecast/internal/astcheck"
)

// TestExecHandlesEveryOpKind checks that the worker's exec has a case for
// every op kind the schedule package declares.
func TestExecHandlesEveryOpKind(t *testing.T) {
	kinds, err := astcheck.Constants("../schedule/program.go", "OpKind")
	if err != nil {
		t.Fatal(err)
	}
	cases, err := astcheck.CaseSelectors("worker.go", "exec", "schedule")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds {
		if !slices.Contains(cases, k) {
			t.Errorf("worker.exec has no case for schedule.%s", k)
		}
	}
}
