package profiler

import (
	"strings"
	"testing"

	"github.com/pipecast/pipecast/schedule"
)

// buildTestRun is two devices, two steps: device 0 runs forward (blocks
// 0 and 1) then sends; device 1 receives, then runs forward (block 2).
func buildTestRun(kind string) Run {
	step := func(n int, wall, fwd int64) RunStep {
		return RunStep{Step: n, WallNanos: wall, Loss: float64(n), Devices: []DeviceActivity{
			{Events: []Event{
				{Op: "forward", Stage: 0, Block: 0, StartNanos: 0, EndNanos: fwd / 2},
				{Op: "forward", Stage: 0, Block: 1, StartNanos: fwd / 2, EndNanos: fwd},
				{Op: "forward", Stage: 0, Block: WholeOp, StartNanos: 0, EndNanos: fwd},
				{Op: "send", Stage: 0, Block: WholeOp, StartNanos: fwd, EndNanos: fwd + 10, Bytes: 64},
			}, PeakBytes: 100, PeakBytesByCategory: map[string]int64{"weights": 60, "activations": 40}},
			{Events: []Event{
				{Op: "recv", Stage: 1, Block: WholeOp, StartNanos: fwd + 10, EndNanos: fwd + 20, Bytes: 64},
				{Op: "forward", Stage: 1, Block: 2, StartNanos: fwd + 20, EndNanos: wall},
				{Op: "forward", Stage: 1, Block: WholeOp, StartNanos: fwd + 20, EndNanos: wall},
			}, PeakBytes: 200 + int64(n), PeakBytesByCategory: map[string]int64{"weights": 150, "activations": 50 + int64(n)}},
		}}
	}
	return Run{
		Kind:   kind,
		Env:    Environment{Devices: []DeviceInfo{{Name: "cpu:0", Threads: 1}, {Name: "cpu:1", Threads: 1}}},
		Config: RunConfig{Model: "m", Batch: 8, Steps: 2, Warmup: 1, RecordOptions: schedule.RecordOptions{Devices: 2, Micro: 2}},
		Blocks: []BlockCost{{Name: "a", Params: 1, MACs: 10, SavedBytes: 4, OutputBytes: 2},
			{Name: "b", Params: 2, MACs: 20, SavedBytes: 8, OutputBytes: 3}, {Name: "c", Params: 3, MACs: 30, SavedBytes: 16, OutputBytes: 5}},
		Bounds:        []int{0, 2, 3},
		Steps:         []RunStep{step(1, 1000, 400), step(2, 2000, 600)},
		WarmupLosses:  []float64{9},
		SentBytes:     []int64{128, 0},
		ReceivedBytes: []int64{0, 128},
	}
}

func TestBuild(t *testing.T) {
	rec := Build(buildTestRun(KindMeasured))
	if err := rec.Validate(); err != nil {
		t.Fatalf("built record does not validate: %v", err)
	}
	if strings.HasPrefix(rec.ID, "pred-") || rec.Kind != KindMeasured {
		t.Errorf("measured record: id %q kind %q", rec.ID, rec.Kind)
	}
	if p := rec.Partition; len(p) != 2 || p[0].Params != 3 || p[0].MACsPerSample != 30 || p[0].ActivationBytesPerSample != 4+8+3 ||
		p[1].Blocks[0] != "c" || p[1].ActivationBytesPerSample != 16+5 {
		t.Errorf("partition %+v", p)
	}
	d0, d1 := rec.Devices[0], rec.Devices[1]
	// Device 0 is busy 410 ns of 1000 and 610 of 2000: means 510 busy,
	// 990 idle; its per-block events are not counted again.
	if d0.BusyNanos != 510 || d0.IdleNanos != 990 || d0.BusyNanosByOp["forward"] != 500 || d0.BusyNanosByOp["send"] != 10 {
		t.Errorf("device 0: %+v", d0)
	}
	if d1.PeakBytes != 202 || d1.PeakBytesByCategory["activations"] != 52 || d0.Name != "cpu:0" || d1.ReceivedBytesPerStep != 64 {
		t.Errorf("device 1: %+v", d1)
	}
	s := rec.Summary
	if s.StepNanosMedian != 1500 || s.StepNanosMin != 1000 || s.StepNanosMax != 2000 || s.PeakBytesMax != 202 ||
		s.MovedBytesPerStep != 64 || s.SamplesPerSecond != 8/1.5e-6 {
		t.Errorf("summary %+v", s)
	}
	// Bubble: step 1 idles 590/1000 and 1000-(10+580)=410/1000, step 2
	// 1390/2000 and 2000-(10+1380)=610/2000.
	if want := ((0.59+0.41)/2 + (0.695+0.305)/2) / 2; abs(s.BubbleFraction-want) > 1e-12 {
		t.Errorf("bubble %v, want %v", s.BubbleFraction, want)
	}
	if b := rec.Blocks; len(b) != 3 || b[0].ForwardNanos != 250 || b[1].Stage != 0 || b[2].Stage != 1 || b[2].Samples != 4 {
		t.Errorf("blocks %+v", b)
	}
	if len(rec.Events) != 14 || rec.Events[7].Step != 2 || rec.Events[13].Device != 1 {
		t.Errorf("%d events; event 7 %+v, 13 %+v", len(rec.Events), rec.Events[7], rec.Events[13])
	}
	if len(rec.WarmupLosses) != 1 || rec.Steps[1].Loss != 2 {
		t.Errorf("losses: warm-up %v, steps %+v", rec.WarmupLosses, rec.Steps)
	}
	pred := buildTestRun(KindPredicted)
	pred.PredictedRelErr = 0.05
	if p := Build(pred); !strings.HasPrefix(p.ID, "pred-") || p.Summary.PredictedRelErr != 0.05 {
		t.Errorf("predicted record: id %q, summary %+v", p.ID, p.Summary)
	}
	noBlocks := buildTestRun(KindMeasured)
	noBlocks.Blocks = nil
	if p := Build(noBlocks); p.Blocks != nil {
		t.Errorf("block timings without blocks: %+v", p.Blocks)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
