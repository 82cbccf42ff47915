package cli

import (
	"strings"
	"testing"

	"github.com/pipecast/pipecast/predictor"
)

func TestDriftNotes(t *testing.T) {
	k := predictor.Key{Model: "mlp", Backend: "cpu", Threads: 1}
	notes := driftNotes([]predictor.Drift{
		{Fold: "K=2", Key: k, Samples: 2, Phase: "forward", Ratio: 1.231},
		{Fold: "K=2", Key: k, Samples: 8, Phase: "forward", Ratio: 1.05},
		{Fold: "K=2", Key: k, Samples: 8, Phase: "backward", Ratio: 0.9},
		{Fold: "K=1", Key: k, Samples: 4, Phase: "backward", Ratio: 1.1},
	})
	if len(notes) != 2 {
		t.Fatalf("%d notes, want one per fold: %q", len(notes), notes)
	}
	for _, want := range []string{"(K=2)", "forward ×1.05–1.23", "backward ×0.90", "(2–8 samples)"} {
		if !strings.Contains(notes[0], want) {
			t.Errorf("note %q lacks %q", notes[0], want)
		}
	}
	if !strings.Contains(notes[1], "(K=1)") || strings.Contains(notes[1], "forward") || !strings.Contains(notes[1], "(4 samples)") {
		t.Errorf("note %q: want K=1's backward alone at 4 samples", notes[1])
	}
}
