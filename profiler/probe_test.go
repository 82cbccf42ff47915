package profiler

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestProbeMedianSpread(t *testing.T) {
	tests := []struct {
		name      string
		nanos     []int64
		median    int64
		spread    float64
		tolerance float64
	}{
		{"none", nil, 0, 0, 0},
		{"one", []int64{500}, 500, 0, 0},
		{"odd", []int64{600, 400, 500}, 500, 0.4, 1e-12},
		{"even", []int64{400, 800, 500, 600}, 550, 400.0 / 550, 1e-12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Probe{Nanos: tt.nanos}
			if got := p.Median(); got != tt.median {
				t.Errorf("Median() = %d, want %d", got, tt.median)
			}
			// tolerance: one rounding of a quotient of small integers.
			if got := p.Spread(); math.Abs(got-tt.spread) > tt.tolerance {
				t.Errorf("Spread() = %g, want %g", got, tt.spread)
			}
		})
	}
}

// TestProbeJSON checks the probe's field names, and that a record
// without one writes none.
func TestProbeJSON(t *testing.T) {
	r := testRecord("a", 10)
	b, err := json.Marshal(r.Env)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "probe") {
		t.Errorf("an environment without a probe marshals to %s, want no probe", b)
	}
	r.Env.Probe = &Probe{Nanos: []int64{3, 4}}
	if b, err = json.Marshal(r.Env); err != nil {
		t.Fatal(err)
	}
	if want := `"probe":{"nanos":[3,4]}`; !strings.Contains(string(b), want) {
		t.Errorf("environment marshals to %s, want it to hold %s", b, want)
	}
}

func TestDisturbances(t *testing.T) {
	rec := func(host, cpu string, nanos ...int64) Record {
		r := testRecord(host, 10)
		r.Env.Host, r.Env.CPUModel = host, cpu
		if nanos != nil {
			r.Env.Probe = &Probe{Nanos: nanos}
		}
		return r
	}
	tests := []struct {
		name string
		recs []Record
		want []float64 // NaN: no probe
	}{
		{"none", nil, []float64{}},
		{"no probes", []Record{rec("a", "x"), rec("a", "x")}, []float64{math.NaN(), math.NaN()}},
		{"one machine", []Record{rec("a", "x", 600, 600), rec("a", "x", 500, 500), rec("a", "x"), rec("a", "x", 400, 800, 750)},
			[]float64{0.2, 0, math.NaN(), 0.5}},
		{"by host", []Record{rec("a", "x", 1000), rec("b", "x", 500), rec("a", "x", 1100), rec("b", "x", 750)},
			[]float64{0, 0, 0.1, 0.5}},
		{"by cpu model", []Record{rec("a", "x", 1000), rec("a", "y", 500), rec("a", "y", 550)},
			[]float64{0, 0, 0.1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Disturbances(tt.recs)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d disturbances, want %d", len(got), len(tt.want))
			}
			for i, w := range tt.want {
				// 1e-12: one quotient of integers below 2^11, rounded.
				if math.IsNaN(w) != math.IsNaN(got[i]) || math.Abs(got[i]-w) > 1e-12 {
					t.Errorf("record %d: got %v, want %v", i, got[i], w)
				}
			}
		})
	}
}
