package reports

import (
	"bytes"
	"strings"
	"testing"
)

func TestWritePlanSVGGolden(t *testing.T) {
	tests := []struct {
		name   string
		timed  bool
		golden string
		shape  string
	}{
		{name: "scatter", timed: true, golden: "plan_scatter.svg", shape: `class="plan-point"`},
		{name: "bars", timed: false, golden: "plan_bars.svg", shape: `class="plan-bar"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			entries := samplePlan()
			for i := range entries {
				entries[i].Timed = tc.timed
			}
			var b bytes.Buffer
			if err := WritePlanSVG(&b, entries, PlanTableOptions{Timed: tc.timed, BudgetBytes: 8 << 20}); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if n := strings.Count(out, tc.shape); n != len(entries) {
				t.Errorf("%d %s, want %d", n, tc.shape, len(entries))
			}
			if !strings.Contains(out, `class="budget"`) || !strings.Contains(out, "gpipe (never) M=8") {
				t.Errorf("the chart lacks the budget line or a point's label")
			}
			wantErr := 0
			if tc.timed {
				wantErr = len(entries) // every sample entry has an uncertainty
			}
			if n := strings.Count(out, `class="plan-err"`); n != wantErr {
				t.Errorf("%d uncertainty bars, want %d", n, wantErr)
			}
			checkGolden(t, tc.golden, b.Bytes())
		})
	}
	if err := WritePlanSVG(&bytes.Buffer{}, nil, PlanTableOptions{}); err == nil {
		t.Error("no entries: got no error")
	}
}
