package predictor

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/reports"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/schedule"
)

// uniformModel returns a cost model of resnet50 at image 32, width 0.125
// on cpu with one thread in which every block's forward takes fwd ns and
// its backward twice that at any size, and loss, updates, sends and
// transfers are free.
func uniformModel(fwd float64) *CostModel {
	m, err := models.Describe("resnet50", models.Config{Image: 32, Classes: 10, Width: 0.125})
	if err != nil {
		panic(err)
	}
	c := &CostModel{
		Key:      Key{Model: "resnet50", Backend: "cpu", Threads: 1, SizeRecord: models.SizeRecord{Image: 32, Classes: 10, Width: 0.125}},
		blocks:   make([]blockFit, len(m.Blocks)),
		transfer: map[string]Line{},
		overhead: map[string]float64{},
	}
	for i, b := range m.Blocks {
		bf := blockFit{name: b.Name}
		for p := range bf.lines {
			bf.lines[p] = Line{Intercept: fwd}
			bf.have[p] = true
		}
		bf.lines[PhaseBackward] = Line{Intercept: 2 * fwd}
		c.blocks[i] = bf
	}
	return c
}

// uniformConfig is a configuration of uniformModel's network on K
// devices of 18/K blocks each (K divides 18), M micro-batches.
func uniformConfig(name string, k, m int) config.Config {
	bounds := make([]int, k+1)
	for s := range bounds {
		bounds[s] = s * 18 / k
	}
	return config.Config{
		Model: "resnet50", ModelConfig: models.Config{Image: 32, Classes: 10, Width: 0.125},
		Batch: 2 * m * k, Balance: "macs", Bounds: bounds,
		Schedule: schedule.Options{Name: name, Devices: k, Micro: m, Checkpoint: schedule.Never, Prefetch: 1},
	}
}

// TestPredictGPipeBubble checks the simulator against GPipe's analysis:
// with equal stages and free transfers a step takes (M+K−1)(F+B) and the
// bubble is (K−1)/(M+K−1).
func TestPredictGPipeBubble(t *testing.T) {
	const fwd = 1e5
	c := uniformModel(fwd)
	tests := []struct {
		name string
		k, m int
	}{
		{name: "K=1 M=1", k: 1, m: 1},
		{name: "K=2 M=1", k: 2, m: 1},
		{name: "K=2 M=4", k: 2, m: 4},
		{name: "K=3 M=2", k: 3, m: 2},
		{name: "K=3 M=8", k: 3, m: 8},
		{name: "K=6 M=5", k: 6, m: 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := Predict(context.Background(), c, uniformConfig(schedule.GPipe, tc.k, tc.m))
			if err != nil {
				t.Fatal(err)
			}
			stage := 3 * fwd * float64(18/tc.k)
			want := float64(tc.m+tc.k-1) * stage
			if got := float64(rec.Summary.StepNanosMedian); math.Abs(got-want) > 1 {
				t.Errorf("step %v ns, want %v", got, want)
			}
			wantBubble := float64(tc.k-1) / float64(tc.m+tc.k-1)
			if got := rec.Summary.BubbleFraction; math.Abs(got-wantBubble) > 1e-6 {
				t.Errorf("bubble %v, want %v", got, wantBubble)
			}
		})
	}
}

// TestPredictOneF1BVersusGPipe checks that 1f1b takes gpipe's (never)
// time with equal stages and keeps fewer micro-batches' activations.
func TestPredictOneF1BVersusGPipe(t *testing.T) {
	c := uniformModel(1e5)
	gp, err := Predict(context.Background(), c, uniformConfig(schedule.GPipe, 3, 8))
	if err != nil {
		t.Fatal(err)
	}
	fb, err := Predict(context.Background(), c, uniformConfig(schedule.OneF1B, 3, 8))
	if err != nil {
		t.Fatal(err)
	}
	if g, f := gp.Summary.StepNanosMedian, fb.Summary.StepNanosMedian; g != f {
		t.Errorf("1f1b step %d ns, gpipe %d ns: want equal", f, g)
	}
	for d := range gp.Devices {
		g, f := gp.Devices[d].PeakBytesByCategory["activations"], fb.Devices[d].PeakBytesByCategory["activations"]
		if d < 2 && f >= g {
			t.Errorf("device %d: 1f1b keeps %d activation bytes, gpipe %d: want fewer", d, f, g)
		}
	}
}

// TestPredictRecord checks that a forecast is a valid predicted record
// that survives JSON and renders in every export.
func TestPredictRecord(t *testing.T) {
	c := uniformModel(1e5)
	c.transfer[TransferP2P] = Line{Intercept: 1e4, Slope: 0.1}
	c.transfer[TransferAllGather] = Line{Intercept: 2e4, Slope: 0.1}
	c.transfer[TransferAllToAll] = Line{Intercept: 2e4, Slope: 0.1}
	c.relErr = 0.07
	for _, name := range []string{schedule.GPipe, schedule.Coop, schedule.OneF1B} {
		t.Run(name, func(t *testing.T) {
			cfg := uniformConfig(name, 2, 2)
			cfg.Schedule.Checkpoint = schedule.ExceptLast
			rec, err := Predict(context.Background(), c, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := rec.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if rec.Kind != profiler.KindPredicted || rec.Summary.PredictedRelErr != 0.07 || len(rec.Steps) != 1 {
				t.Errorf("kind %q, rel err %v, %d steps: want predicted, 0.07, 1", rec.Kind, rec.Summary.PredictedRelErr, len(rec.Steps))
			}
			var moved, blockEvents int64
			for _, d := range rec.Devices {
				moved += d.ReceivedBytesPerStep
				if d.PeakBytes <= 0 || d.PeakBytesByCategory["weights"] <= 0 {
					t.Errorf("device %d: peak %d bytes, weights %d: want > 0", d.Index, d.PeakBytes, d.PeakBytesByCategory["weights"])
				}
			}
			for _, e := range rec.Events {
				if e.Block >= 0 {
					blockEvents++
				}
			}
			if moved == 0 || moved != rec.Summary.MovedBytesPerStep {
				t.Errorf("moved %d bytes per step, summary %d: want equal and > 0", moved, rec.Summary.MovedBytesPerStep)
			}
			if blockEvents == 0 || len(rec.Blocks) != 18 {
				t.Errorf("%d per-block events, %d block timings: want some, 18", blockEvents, len(rec.Blocks))
			}
			b, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			var back profiler.Record
			if err := json.Unmarshal(b, &back); err != nil || back.Validate() != nil {
				t.Fatalf("JSON round trip: %v, %v", err, back.Validate())
			}
			var buf bytes.Buffer
			if err := reports.WriteTrace(&buf, []profiler.Record{rec}); err != nil || buf.Len() == 0 {
				t.Errorf("WriteTrace: %v (%d bytes)", err, buf.Len())
			}
			buf.Reset()
			if err := reports.WritePprof(&buf, []profiler.Record{rec}); err != nil || buf.Len() == 0 {
				t.Errorf("WritePprof: %v (%d bytes)", err, buf.Len())
			}
			buf.Reset()
			if err := reports.WriteTimelineSVG(&buf, rec, 0); err != nil || buf.Len() == 0 {
				t.Errorf("WriteTimelineSVG: %v (%d bytes)", err, buf.Len())
			}
		})
	}
}

// TestPredictErrors checks what a forecast refuses.
func TestPredictErrors(t *testing.T) {
	c := uniformModel(1e5)
	tests := []struct {
		name string
		edit func(*config.Config)
	}{
		{name: "other model", edit: func(cfg *config.Config) { cfg.Model = "vgg16bn" }},
		{name: "other threads", edit: func(cfg *config.Config) { cfg.Threads = 2 }},
		{name: "uneven micro-batches", edit: func(cfg *config.Config) { cfg.Batch = 5 }},
		{name: "unknown schedule", edit: func(cfg *config.Config) { cfg.Schedule.Name = "zigzag" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := uniformConfig(schedule.GPipe, 2, 2)
			tc.edit(&cfg)
			if _, err := Predict(context.Background(), c, cfg); err == nil {
				t.Error("no error")
			}
		})
	}
	unmeasured := uniformModel(1e5)
	unmeasured.blocks[3].have[PhaseBackward] = false
	if _, err := Predict(context.Background(), unmeasured, uniformConfig(schedule.GPipe, 2, 2)); err == nil {
		t.Error("a block whose backward was never measured: no error")
	}
}

// TestReplay checks the simulator's logic against measured runs: a
// record's own op durations, replayed through schedule.Simulate, give its
// median step time within 2 %.
func TestReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("measures training runs")
	}
	tests := []struct {
		name string
		o    schedule.Options
	}{
		{name: "gpipe", o: schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 4, Checkpoint: schedule.ExceptLast}},
		{name: "coop", o: schedule.Options{Name: schedule.Coop, Devices: 2, Micro: 4, Prefetch: 1}},
		{name: "1f1b", o: schedule.Options{Name: schedule.OneF1B, Devices: 2, Micro: 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Config{
				Model: "resnet50", ModelConfig: models.Config{Image: 32, Classes: 10, Width: 0.25},
				Batch: 16, Schedule: tc.o, Balance: "macs", Threads: 1,
			}
			// Five steps: a median of three 30 ms steps moved by 1 % from
			// run to run, as much as the replay's own error. A device
			// thread descheduled between two ops stretches the step with
			// a gap no op records: under go test ./... on two cores the
			// other test packages do that by 5-12 %. So the run is
			// measured again, a couple of seconds apart, until one agrees
			// or a minute and a half has passed (by then the other
			// packages are done): the test checks the simulator's logic,
			// not how quiet the machine is.
			best := math.Inf(1)
			deadline := time.Now().Add(90 * time.Second)
			for attempt := 1; best > 0.02 && (attempt <= 3 || time.Now().Before(deadline)); attempt++ {
				if attempt > 1 {
					time.Sleep(2 * time.Second)
				}
				res, err := runner.Run(context.Background(), cfg, runner.RunOptions{Warmup: 1, Steps: 5})
				if err != nil {
					t.Fatal(err)
				}
				rec := res.Record()
				got, err := Replay(rec)
				if err != nil {
					t.Fatal(err)
				}
				want := float64(rec.Summary.StepNanosMedian)
				rel := math.Abs(got-want) / want
				t.Logf("attempt %d: replayed %.0f ns, measured median %.0f ns (%.2f %%)", attempt, got, want, 100*rel)
				best = min(best, rel)
			}
			if best > 0.02 {
				t.Errorf("replayed step at best %.1f %% from the measured median, want ≤ 2 %%", 100*best)
			}
		})
	}
}

// TestPredictFromFit forecasts two-device runs from a fitted single-device
// record of the mlp, as the predict command does.
func TestPredictFromFit(t *testing.T) {
	cfg := config.Config{Model: "mlp", Batch: 8, Schedule: schedule.Options{Name: schedule.Single, Devices: 1, Micro: 2}, Threads: 1}
	res, err := runner.Run(context.Background(), cfg, runner.RunOptions{Warmup: 1, Steps: 2, BlockTiming: true, Calibrate: true})
	if err != nil {
		t.Fatal(err)
	}
	fits, err := Fit([]profiler.Record{res.Record()})
	if err != nil {
		t.Fatal(err)
	}
	if len(fits) != 1 {
		t.Fatalf("%d cost models, want 1", len(fits))
	}
	for _, c := range fits {
		for _, name := range []string{schedule.GPipe, schedule.Coop, schedule.OneF1B} {
			pc := config.Config{Model: "mlp", Batch: 8, Schedule: schedule.Options{Name: name, Devices: 2, Micro: 2, Prefetch: 1}}
			rec, err := Predict(context.Background(), c, pc)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := rec.Validate(); err != nil {
				t.Errorf("%s: Validate: %v", name, err)
			}
			if rec.Summary.StepNanosMedian <= 0 || rec.Config.Devices != 2 || rec.Env.Backend != "cpu" {
				t.Errorf("%s: step %d ns, %d devices, backend %q: want > 0, 2, cpu", name, rec.Summary.StepNanosMedian, rec.Config.Devices, rec.Env.Backend)
			}
		}
	}
}
