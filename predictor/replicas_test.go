package predictor

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/schedule"
)

// TestPredictReplicas checks a forecast of data-parallel replicas: the
// replicas' program is one pipeline's plus the gradient sums, so the
// step of R replicas is one replica's step plus the sum of its last
// stage, priced from the calibrated line of two replicas' sum at the
// stage's gradient bytes (per bucket) scaled by the sum's passes at R
// over those at two (runner.SumPasses); the record
// holds every job device, each with its sum's event and bytes.
func TestPredictReplicas(t *testing.T) {
	c := uniformModel(1e5)
	c.transfer[TransferP2P] = Line{}
	dp := Line{Intercept: 3e4, Slope: 0.01}
	c.transfer[TransferDPAllReduce] = dp
	ctx := context.Background()
	one, err := Predict(ctx, c, uniformConfig(schedule.GPipe, 1, 2))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []int{2, 3} {
		cfg := uniformConfig(schedule.GPipe, 1, 2)
		cfg.Schedule.Replicas = r
		rec, err := Predict(ctx, c, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := rec.Validate(); err != nil {
			t.Fatalf("R=%d: %v", r, err)
		}
		if len(rec.Devices) != r || len(rec.Env.Devices) != r || rec.Config.Replicas != r {
			t.Fatalf("R=%d: %d devices, %d in the environment, replicas %d", r, len(rec.Devices), len(rec.Env.Devices), rec.Config.Replicas)
		}
		sums := 0
		var bytes int64
		for _, e := range rec.Events {
			if e.Op == schedule.DPAllReduce.String() && e.Block < 0 {
				sums++
				bytes = e.Bytes
			}
		}
		if sums != r || bytes <= 0 {
			t.Fatalf("R=%d: %d dp-allreduce events of %d bytes, want one a device", r, sums, bytes)
		}
		g := float64(runner.SumBytes(bytes, r))
		want := dp.At(g) * runner.SumPasses(r) / runner.SumPasses(2)
		got := float64(rec.Summary.StepNanosMedian - one.Summary.StepNanosMedian)
		if math.Abs(got-want) > 2 { // whole nanoseconds
			t.Errorf("R=%d: the sum adds %.0f ns to the step, want %.0f (%.0f bytes a replica)", r, got, want, g)
		}
		if s := rec.Summary.SamplesPerSecond; math.Abs(s-float64(r*cfg.Batch)/(float64(rec.Summary.StepNanosMedian)/1e9)) > 1e-6*s {
			t.Errorf("R=%d: %.1f samples/s, want R·B over the step", r, s)
		}
		for _, d := range rec.Devices {
			if d.PeakBytes != rec.Devices[0].PeakBytes {
				t.Errorf("R=%d: device %d peaks at %d bytes, device 0 at %d: replicas hold alike", r, d.Index, d.PeakBytes, rec.Devices[0].PeakBytes)
			}
		}
	}
	cfg := uniformConfig(schedule.OneF1B, 2, 4)
	cfg.Schedule.Replicas = 2
	if _, err := Predict(ctx, c, cfg); err != nil {
		t.Errorf("R=2 K=2: %v", err)
	}
	cfg.Straggler = config.Straggler{Device: 1, Factor: 2}
	if _, err := Predict(ctx, c, cfg); !errors.Is(err, ErrReplicas) {
		t.Errorf("replicas with a straggler: got %v, want ErrReplicas", err)
	}
}

// TestReplicaSumFromCalibration checks how a calibration prices the
// replicas' sums: at a size it measured, its time; between two sizes,
// on the line through them; a stage larger than a bucket, bucket by
// bucket; more replicas, their passes over two's.
func TestReplicaSumFromCalibration(t *testing.T) {
	const mib = 1 << 20
	cal := &profiler.Calibration{Samples: []profiler.TransferSample{
		{Kind: "p2p", Devices: 2, Bytes: mib, Nanos: 1e5},
		{Kind: TransferDPAllReduce, Devices: 2, Bytes: 4 * mib, Nanos: 2e6},
		{Kind: TransferDPAllReduce, Devices: 2, Bytes: 12 * mib, Nanos: 8e6},
		{Kind: TransferDPAllReduce, Devices: 2, Bytes: 12 * mib, Nanos: 9.5e6}, // a slowed sample of a size
		{Kind: TransferDPAllReduce, Devices: 2, Bytes: 12 * mib, Nanos: 8e6},
		{Kind: TransferDPAllReduce, Devices: 2, Bytes: runner.DPBucketBytes, Nanos: 2e7},
	}}
	c, err := TransferModel(cal)
	if err != nil {
		t.Fatal(err)
	}
	at := func(b int64) float64 { return c.ReplicaSum(b, 2) }
	for _, tc := range []struct {
		bytes int64
		want  float64
	}{
		{4 * mib, 2e6},
		{12 * mib, 8e6}, // the typical of its samples (the shorth)
		{8 * mib, 5e6},
		{runner.DPBucketBytes, 2e7},
		{2*runner.DPBucketBytes + 12*mib, 2*2e7 + 8e6},
	} {
		if got := at(tc.bytes); math.Abs(got-tc.want) > 1e-6*tc.want {
			t.Errorf("%d bytes: %.0f ns, want %.0f", tc.bytes, got, tc.want)
		}
	}
	if got, want := c.ReplicaSum(4*mib, 4), 2e6*4.5/3; math.Abs(got-want) > 1e-6*want {
		t.Errorf("4 replicas: %.0f ns, want %.0f", got, want)
	}
	if c.ReplicaSum(4*mib, 1) != 0 || at(0) != 0 {
		t.Error("one replica or no bytes: want nothing to sum")
	}
}
