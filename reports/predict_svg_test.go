package reports

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

func TestWritePredictionSVG(t *testing.T) {
	tests := []struct {
		name    string
		series  []PredictionSeries
		want    []string // substrings of the SVG
		wantErr string
	}{
		{name: "schedules and a baseline", series: []PredictionSeries{
			{Label: "gpipe", Measured: []float64{2e6, 3e6}, Predicted: []float64{2.1e6, 2.9e6}},
			{Label: "coop", Measured: []float64{2.5e6}, Predicted: []float64{2.4e6}},
			{Label: "baseline", Measured: []float64{2e6, 3e6, 2.5e6}, Predicted: []float64{2.6e6, 2.2e6, 2.5e6}, Hollow: true},
		}, want: []string{"<svg", "y = x", "gpipe", "coop", "baseline", "measured step time (ms)", "predicted step time (ms)",
			"#E69F00" /* gpipe's orange */}},
		{name: "one point", series: []PredictionSeries{{Label: "1f1b", Measured: []float64{1e6}, Predicted: []float64{1e6}}},
			want: []string{"<svg", "1f1b"}},
		{name: "nothing to draw", series: []PredictionSeries{{Label: "gpipe"}}, wantErr: "no runs"},
		{name: "unpaired times", series: []PredictionSeries{{Label: "gpipe", Measured: []float64{1}, Predicted: nil}},
			wantErr: "1 measured and 0 predicted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			err := WritePredictionSVG(&b, "forecast against measured", tc.series)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want %q", err, tc.wantErr)
				}
				if tc.name == "nothing to draw" && !errors.Is(err, errNoPredictionPoints) {
					t.Errorf("got %v, want errNoPredictionPoints", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.want {
				if !strings.Contains(b.String(), s) {
					t.Errorf("the SVG lacks %q", s)
				}
			}
		})
	}
}

// TestRunsTableUncertainty checks that the ± column appears only beside
// predicted records and shows their uncertainty.
func TestRunsTableUncertainty(t *testing.T) {
	rec := func(kind string, relErr float64) profiler.Record {
		return profiler.Record{Kind: kind, ID: kind, Config: profiler.RunConfig{Model: "mlp", Batch: 8, RecordOptions: schedule.RecordOptions{Schedule: "gpipe", Devices: 2, Micro: 2}},
			Summary: profiler.Summary{StepNanosMedian: 1e6, StepNanosMin: 1e6, StepNanosMax: 1e6, PredictedRelErr: relErr}}
	}
	tests := []struct {
		name     string
		recs     []profiler.Record
		want     string // the csv column, "" for none
		wantText string
	}{
		{name: "measured only", recs: []profiler.Record{rec(profiler.KindMeasured, 0)}, want: ""},
		{name: "predicted", recs: []profiler.Record{rec(profiler.KindPredicted, 0.05)}, want: "0.05", wantText: "±5.0 %"},
		{name: "both", recs: []profiler.Record{rec(profiler.KindMeasured, 0), rec(profiler.KindPredicted, 0.1)}, want: ",0.1", wantText: "±10.0 %"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			table := RunsTable(tc.recs, RunsTableOptions{})
			var csv, text bytes.Buffer
			if err := Render(&csv, table, FormatCSV); err != nil {
				t.Fatal(err)
			}
			if err := Render(&text, table, FormatTable); err != nil {
				t.Fatal(err)
			}
			header, _, _ := strings.Cut(csv.String(), "\n")
			cols := strings.Split(header, ",")
			at := -1
			for i, c := range cols {
				if c == "predicted_rel_err" {
					at = i
				}
			}
			if tc.want == "" {
				if at >= 0 || strings.Contains(text.String(), "± step") {
					t.Errorf("measured runs got an uncertainty column:\n%s", text.String())
				}
				return
			}
			if at < 0 || cols[at-1] != "step_nanos_median" {
				t.Fatalf("header %q: want predicted_rel_err after step_nanos_median", header)
			}
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(csv.String()), "\n")[1:] {
				got = append(got, strings.Split(line, ",")[at])
			}
			if s := strings.Join(got, ","); s != tc.want {
				t.Errorf("uncertainties %q, want %q", s, tc.want)
			}
			if !strings.Contains(text.String(), "± step") || !strings.Contains(text.String(), tc.wantText) {
				t.Errorf("table lacks the ± column showing %q:\n%s", tc.wantText, text.String())
			}
		})
	}
}
