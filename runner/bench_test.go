package runner

import (
	"context"
	"testing"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
)

// benchStepConfig is the profiler-overhead configuration: a narrow
// ResNet-50 on small images, pipelined over two devices.
func benchStepConfig() config.Config {
	return config.Config{
		Model: "resnet50", ModelConfig: models.Config{Width: 0.25, Image: 32, Classes: 10},
		Batch: 16, Seed: 1,
		Schedule: schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 2},
	}
}

// benchSteps times training steps with recording set as given, after one
// untimed step that allocates gradients and optimizer state. With record,
// every step also tracks every device's live memory change by change,
// which a run does for one step only: the worst case.
func benchSteps(b *testing.B, record, blocks bool) {
	tr, err := NewTrainer(benchStepConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	tr.setRecording(record, blocks)
	ctx := context.Background()
	if _, err := tr.Step(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if record {
			tr.trackMemory(tr.steps)
		}
		if _, err := tr.Step(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStepRecording is a step with every op and every block timed
// and recorded.
func BenchmarkStepRecording(b *testing.B) { benchSteps(b, true, true) }

// BenchmarkStepNoRecording is the same step with no clock read and no
// record at all; scripts/profiler-overhead.sh compares the two.
func BenchmarkStepNoRecording(b *testing.B) { benchSteps(b, false, false) }
