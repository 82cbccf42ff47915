package reports

import (
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

func TestRunsLabels(t *testing.T) {
	tests := []struct {
		name  string
		cfg   profiler.RunConfig
		model string
		sched string
	}{
		{name: "defaults", cfg: profiler.RunConfig{Model: "resnet50", RecordOptions: schedule.RecordOptions{Schedule: "1f1b"}, SizeRecord: models.SizeRecord{Image: 224, Width: 1}},
			model: "resnet50", sched: "1f1b"},
		{name: "image and width", cfg: profiler.RunConfig{Model: "resnet50", RecordOptions: schedule.RecordOptions{Schedule: "gpipe", Checkpoint: "never"}, SizeRecord: models.SizeRecord{Image: 32, Width: 0.25}},
			model: "resnet50 32px ×0.25", sched: "gpipe (never)"},
		{name: "mlp has no image", cfg: profiler.RunConfig{Model: "mlp", RecordOptions: schedule.RecordOptions{Schedule: "coop", Prefetch: 2}, SizeRecord: models.SizeRecord{Width: 1}},
			model: "mlp", sched: "coop (d=2)"},
		{name: "single", cfg: profiler.RunConfig{Model: "vgg16", RecordOptions: schedule.RecordOptions{Schedule: "single"}, SizeRecord: models.SizeRecord{Image: 224, Width: 0.5}},
			model: "vgg16 ×0.5", sched: "single"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ModelLabel(tc.cfg); got != tc.model {
				t.Errorf("ModelLabel = %q, want %q", got, tc.model)
			}
			if got := ScheduleLabel(tc.cfg); got != tc.sched {
				t.Errorf("ScheduleLabel = %q, want %q", got, tc.sched)
			}
		})
	}
}

func TestFormatNanos(t *testing.T) {
	tests := []struct {
		name string
		n    int64
		want string
	}{
		{name: "nanoseconds", n: 850, want: "850 ns"},
		{name: "microseconds", n: 12_345, want: "12.3 µs"},
		{name: "milliseconds", n: 4_561_000, want: "4.56 ms"},
		{name: "hundreds of ms", n: 123_400_000, want: "123 ms"},
		{name: "seconds", n: 1_234_000_000, want: "1.23 s"},
		{name: "minutes stay in seconds", n: 90e9, want: "90.0 s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatNanos(tc.n); got != tc.want {
				t.Errorf("FormatNanos(%d) = %q, want %q", tc.n, got, tc.want)
			}
		})
	}
}
