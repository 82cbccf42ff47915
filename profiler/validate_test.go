package profiler

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateAcceptsValidRecords(t *testing.T) {
	probed := testRecord("c", 10)
	probed.Env.Probe = &Probe{Nanos: []int64{512000, 498000}}
	for _, r := range []Record{testRecord("a", 10), predictedRecord("b"), probed} {
		if err := r.Validate(); err != nil {
			t.Errorf("%s: Validate() = %v, want nil", r.ID, err)
		}
	}
}

func TestValidateRejects(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(r *Record)
		want   string // a part of the message
	}{
		{"newer schema", func(r *Record) { r.Schema = SchemaVersion + 1 }, "newer than this pipecast reads"},
		{"missing schema", func(r *Record) { r.Schema = 0 }, "schema version missing"},
		{"older schema", func(r *Record) { r.Schema = -1 }, "not supported"},
		{"unknown kind", func(r *Record) { r.Kind = "guessed" }, `kind "guessed"`},
		{"empty id", func(r *Record) { r.ID = "" }, "id is empty"},
		{"bad time", func(r *Record) { r.CreatedUTC = "yesterday" }, "created_utc"},
		{"empty model", func(r *Record) { r.Config.Model = "" }, "config: model is empty"},
		{"zero batch", func(r *Record) { r.Config.Batch = 0 }, "config: batch 0"},
		{"zero micro", func(r *Record) { r.Config.Micro = 0 }, "microbatches 0"},
		{"negative warmup", func(r *Record) { r.Config.Warmup = -1 }, "warmup -1 is negative"},
		{"step count", func(r *Record) { r.Steps = r.Steps[:1] }, "1 measured steps, config.steps is 2"},
		{"warmup losses", func(r *Record) { r.WarmupLosses = []float64{1, 2} }, "warmup_losses"},
		{"negative wall", func(r *Record) { r.Steps[1].WallNanos = -5 }, "steps[1]: wall_nanos -5"},
		{"negative rss", func(r *Record) { r.Env.PeakRSSBytes = -1 }, "peak_rss_bytes"},
		{"negative bandwidth", func(r *Record) { r.Env.Calibration.BandwidthBytesPerSecond = -1 }, "calibration"},
		{"negative sample", func(r *Record) { r.Env.Calibration.Samples[2].Nanos = -1 }, "samples[2]"},
		{"min over max", func(r *Record) { r.Summary.StepNanosMin = r.Summary.StepNanosMax + 1 }, "step_nanos_min"},
		{"negative idle", func(r *Record) { r.Devices[1].IdleNanos = -3 }, "devices[1]"},
		{"negative busy op", func(r *Record) { r.Devices[0].BusyNanosByOp["send"] = -1 }, `busy_nanos_by_op["send"]`},
		{"negative peak", func(r *Record) { r.Devices[0].PeakBytesByCategory["weights"] = -1 }, "peak_bytes_by_category"},
		{"negative block", func(r *Record) { r.Blocks[0].BackwardNanos = -1 }, "blocks[0]"},
		{"event backwards", func(r *Record) { r.Events[3].EndNanos = r.Events[3].StartNanos - 1 }, "events[3]"},
		{"event before step", func(r *Record) { r.Events[0].StartNanos = -1 }, "events[0]"},
		{"partition range", func(r *Record) { r.Partition[1].EndBlock = 1 }, "partition[1]"},
		{"probe count", func(r *Record) { r.Env.Probe = &Probe{Nanos: []int64{5e5}} }, "probe: 1 nanos for 2 measured steps"},
		{"probe zero", func(r *Record) { r.Env.Probe = &Probe{Nanos: []int64{5e5, 0}} }, "probe: nanos[1] 0"},
		{"probe negative", func(r *Record) { r.Env.Probe = &Probe{Nanos: []int64{-1, 5e5}} }, "probe: nanos[0] -1"},
		{"probe on no steps", func(r *Record) { r.Env.Probe = &Probe{} }, "probe: 0 nanos for 2 measured steps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testRecord("x", 5)
			tt.mutate(&r)
			err := r.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestValidatePredictedSteps(t *testing.T) {
	r := predictedRecord("p")
	r.Steps = []Step{{Step: 1, WallNanos: 5e9}}
	if err := r.Validate(); err == nil {
		t.Fatalf("Validate() of a predicted record with 1 of 5 steps = nil, want an error")
	}
	var sv *SchemaVersionError
	r = predictedRecord("p")
	r.Schema = 7
	if err := r.Validate(); !errors.As(err, &sv) || sv.Version != 7 {
		t.Fatalf("Validate() = %v, want a *SchemaVersionError for version 7", err)
	}
}
