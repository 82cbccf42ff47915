package predictor

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// memoryConfig is a small configuration of model name under schedule o.
func memoryConfig(name string, o schedule.Options) config.Config {
	return config.Config{
		Model: name, ModelConfig: models.Config{Image: 32, Classes: 10, Width: 0.125},
		Batch: 4, Schedule: o, Balance: "macs", Threads: 1,
	}
}

// TestPeakMemoryMatchesCPU checks that the meta run's peaks are a real
// CPU run's, category by category and device by device: both take the
// runner's code path, and the CPU run's second step is the steady state
// the meta run reports. The optimizer's state, allocated by the first
// step's update, is part of it: SGD's momentum for the CNNs, AdamW's two
// moments for the transformers.
func TestPeakMemoryMatchesCPU(t *testing.T) {
	type memoryCase struct {
		name  string
		model string
		o     schedule.Options
		batch int // 4 when zero
	}
	tests := []memoryCase{
		{name: "mlp single", model: "mlp", o: schedule.Options{Name: schedule.Single, Devices: 1, Micro: 2}},
		{name: "resnet50 gpipe K=2", model: "resnet50", o: schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 2}},
		{name: "resnet50 coop K=2", model: "resnet50", o: schedule.Options{Name: schedule.Coop, Devices: 2, Micro: 2, Prefetch: 1}},
		{name: "vgg16bn coop K=2", model: "vgg16bn", o: schedule.Options{Name: schedule.Coop, Devices: 2, Micro: 2, Prefetch: 1}},
		{name: "mlp coop K=2", model: "mlp", o: schedule.Options{Name: schedule.Coop, Devices: 2, Micro: 2, Prefetch: 1}},
		{name: "resnet50 coop K=3", model: "resnet50", o: schedule.Options{Name: schedule.Coop, Devices: 3, Micro: 3, Prefetch: 1}, batch: 6},
		{name: "vgg16bn 1f1b K=2", model: "vgg16bn", o: schedule.Options{Name: schedule.OneF1B, Devices: 2, Micro: 4}},
	}
	// The decoder transformers, trained by AdamW, whose two moments the
	// step's update allocates: GPT-2 (its LM head tied to its embedding
	// across the two devices) and Llama, small.
	for _, model := range []string{"gpt2", "tinyllama-1.1b"} {
		for _, o := range []schedule.Options{{Name: schedule.GPipe}, {Name: schedule.OneF1B}, {Name: schedule.ZBH1}} {
			o.Devices, o.Micro = 2, 2
			tests = append(tests, memoryCase{name: model + " " + o.Name + " K=2", model: model, o: o})
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lm := slices.Contains([]string{"gpt2", "tinyllama-1.1b"}, tc.model)
			if testing.Short() && tc.model != "mlp" && !lm {
				t.Skip("a CPU run of a convolutional network in -short mode")
			}
			cfg := memoryConfig(tc.model, tc.o)
			if lm {
				cfg.ModelConfig = models.Config{Width: 0.125, Seq: 16, Vocab: 64, Layers: 2}
			}
			if tc.batch != 0 {
				cfg.Batch = tc.batch
			}
			got, err := PeakMemory(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			res, err := runner.Run(context.Background(), cfg, runner.RunOptions{Warmup: 1, Steps: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(res.Steps[0].Devices) {
				t.Fatalf("%d devices, want %d", len(got), len(res.Steps[0].Devices))
			}
			ms, err := metaRun(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			for d, ds := range res.Steps[0].Devices {
				want := ds.Memory
				// A sent tensor stays on the sender until the receiver
				// copies it, so the activation peak of a device that sends
				// depends on its peers' timing: on meta devices, which run
				// in no time, sends may pile up; on the CPU one may be
				// received a little earlier than on meta.
				one, all := sendBytes(ms.devices[d].Events)
				for c := range tensor.NumCategories {
					g, w := got[d].PeakBytes[c], want.PeakBytes[c]
					switch tensor.Category(c) {
					case tensor.Activations:
						if g < w-one || g > w+all {
							t.Errorf("device %d activations: peak %d bytes, want %d − %d to %d + %d", d, g, w, one, w, all)
						}
					default:
						if g != w {
							t.Errorf("device %d %s: peak %d bytes, want %d", d, tensor.Category(c), g, w)
						}
					}
				}
				if opt, grad := got[d].PeakBytes[tensor.Optimizer], got[d].PeakBytes[tensor.Gradients]; lm && opt != 2*grad {
					t.Errorf("device %d: %d optimizer bytes, want AdamW's two moments of the %d gradient bytes", d, opt, grad)
				}
			}
		})
	}
}

// sendBytes returns the largest tensor a device's sends carry and their
// sum.
func sendBytes(evs []profiler.Event) (largest, sum int64) {
	for _, e := range evs {
		if e.Op == schedule.Send.String() && e.Block < 0 {
			largest = max(largest, e.Bytes)
			sum += e.Bytes
		}
	}
	return largest, sum
}

// TestPeakMemoryCached checks that a second forecast of a configuration
// reuses the first one's meta run.
func TestPeakMemoryCached(t *testing.T) {
	cfg := memoryConfig("mlp", schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 2})
	first, err := PeakMemory(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	second, err := PeakMemory(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if dt := time.Since(start); dt > 10*time.Millisecond {
		t.Errorf("cached lookup took %v, want well under 10ms", dt)
	}
	for d := range first {
		if first[d] != second[d] {
			t.Errorf("device %d: %+v, then %+v", d, first[d], second[d])
		}
	}
}

// TestPeakMemoryBounds checks that explicit bounds choose the partition
// the meta run uses, and that impossible bounds fail.
func TestPeakMemoryBounds(t *testing.T) {
	o := schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 1}
	a := memoryConfig("mlp", o)
	a.Bounds = []int{0, 1, 3}
	b := memoryConfig("mlp", o)
	b.Bounds = []int{0, 2, 3}
	ma, err := PeakMemory(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := PeakMemory(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	w := tensor.Weights
	if ma[0].PeakBytes[w] >= mb[0].PeakBytes[w] {
		t.Errorf("device 0 weights: %d bytes with one block, %d with two: want fewer with one", ma[0].PeakBytes[w], mb[0].PeakBytes[w])
	}
	bad := memoryConfig("mlp", o)
	bad.Bounds = []int{0, 3, 2}
	if _, err := PeakMemory(context.Background(), bad); err == nil {
		t.Error("bounds [0 3 2]: no error")
	}
}

// BenchmarkPeakMemoryResNet50 and BenchmarkPeakMemoryVGG16BN time one
// uncached meta run of a full-size network (batch 32, K = 4, gpipe).
func BenchmarkPeakMemoryResNet50(b *testing.B) { benchmarkPeakMemory(b, "resnet50") }

func BenchmarkPeakMemoryVGG16BN(b *testing.B) { benchmarkPeakMemory(b, "vgg16bn") }

func benchmarkPeakMemory(b *testing.B, name string) {
	for i := 0; b.Loop(); i++ {
		cfg := config.Config{Model: name, Batch: 32 + 4*i, Schedule: schedule.Options{Name: schedule.GPipe, Devices: 4, Micro: 4}}
		if _, err := PeakMemory(context.Background(), cfg); err != nil {
			b.Fatal(err)
		}
	}
}
