package profiler

import (
	"fmt"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
)

// testRecord returns a valid measured record that fills every field of
// the schema, with events events, so that round trips exercise maps,
// pointers, omitempty fields and large lines. Its values are fixed, so
// the golden file does not change between runs.
func testRecord(id string, events int) Record {
	r := Record{
		Schema:     SchemaVersion,
		Kind:       KindMeasured,
		ID:         id,
		CreatedUTC: "2025-11-29T18:37:00Z",
		Env: Environment{
			Host: "bench-1", OS: "linux", Arch: "amd64", CPUModel: "Example CPU @ 2.10GHz",
			Cores: 16, GoVersion: "go1.26.8", Version: "v0.1.0", Revision: "f1e5eba",
			Backend:      "cpu",
			Devices:      []DeviceInfo{{Name: "cpu:0", Threads: 2}, {Name: "cpu:1", Threads: 2}},
			PeakRSSBytes: 734003200,
			Calibration: &Calibration{
				Samples: []TransferSample{
					{Kind: "p2p", Devices: 2, Bytes: 4096, Nanos: 2100},
					{Kind: "p2p", Devices: 2, Bytes: 1 << 20, Nanos: 95000},
					{Kind: "allgather", Devices: 2, Bytes: 1 << 16, Nanos: 12000},
					{Kind: "alltoall", Devices: 2, Bytes: 1 << 16, Nanos: 14500},
				},
				LatencyNanos:            1850.5,
				BandwidthBytesPerSecond: 1.1e10,
			},
		},
		Config: RunConfig{
			Model:           "mlp",
			Batch:           8,
			Balance:         "time",
			Threads:         2,
			Steps:           2,
			Warmup:          1,
			Seed:            1 << 63,
			Dataset:         "synthetic",
			OptimizerRecord: models.OptimizerRecord{LR: 0.05, Momentum: 0.9, WeightDecay: 5e-4},
			RecordOptions:   schedule.RecordOptions{Devices: 2, Micro: 4, Schedule: "gpipe", Checkpoint: "except-last", Prefetch: 1},
			SizeRecord:      models.SizeRecord{Image: 32, Classes: 10, Width: 0.25},
		},
		Partition: []Stage{
			{Device: 0, FirstBlock: 0, EndBlock: 2, Blocks: []string{"fc1", "relu1"}, Params: 393344, MACsPerSample: 393216, ActivationBytesPerSample: 4096},
			{Device: 1, FirstBlock: 2, EndBlock: 3, Blocks: []string{"fc2"}, Params: 1290, MACsPerSample: 1280, ActivationBytesPerSample: 40},
		},
		Oversubscribed: true,
		Steps:          []Step{{Step: 1, WallNanos: 1200345, Loss: 2.3125}, {Step: 2, WallNanos: 1187000, Loss: 2.25}},
		WarmupLosses:   []float64{2.3},
		Summary: Summary{
			StepNanosMedian: 1193672, StepNanosMin: 1187000, StepNanosMax: 1200345,
			SamplesPerSecond: 6702.0, BubbleFraction: 0.31, PeakBytesMax: 2 << 20, MovedBytesPerStep: 2560,
		},
		Devices: []Device{
			{
				Index: 0, Name: "cpu:0", Stage: 0,
				BusyNanosByOp:       map[string]int64{"forward": 300000, "backward": 500000, "send": 20000, "update": 9000},
				BusyNanos:           829000,
				IdleNanos:           364672,
				PeakBytesByCategory: map[string]int64{"weights": 1573376, "activations": 65536},
				PeakBytes:           1638912, SentBytesPerStep: 1280, ReceivedBytesPerStep: 1280,
			},
			{
				Index: 1, Name: "cpu:1", Stage: 1,
				BusyNanosByOp:       map[string]int64{"forward": 10000, "loss": 4000, "recv": 300000},
				BusyNanos:           314000,
				IdleNanos:           879672,
				PeakBytesByCategory: map[string]int64{"weights": 5160},
				PeakBytes:           5160, SentBytesPerStep: 1280, ReceivedBytesPerStep: 1280,
			},
		},
		Blocks: []BlockTiming{
			{Block: 0, Name: "fc1", Stage: 0, Samples: 2, ForwardNanos: 60000, BackwardNanos: 110000, RecomputeNanos: 61000},
			{Block: 2, Name: "fc2", Stage: 1, Samples: 2, ForwardNanos: 2000, BackwardNanos: 3000, PredictNanos: 2500},
		},
	}
	for i := range events {
		start := int64(i) * 1000
		r.Events = append(r.Events, Event{
			Step: 1 + i%2, Device: i % 2, Stage: i % 2, Op: []string{"forward", "backward", "send", "recv"}[i%4],
			Micro: i % 4, Shard: -1, Peer: (i + 1) % 2, Block: i%3 - 1,
			StartNanos: start, EndNanos: start + 750, Bytes: int64(i%4) * 320,
		})
	}
	return r
}

// predictedRecord returns a valid predicted record with the least a
// record needs: no steps, no events, no calibration.
func predictedRecord(id string) Record {
	return Record{
		Schema: SchemaVersion, Kind: KindPredicted, ID: id, CreatedUTC: "2025-11-29T19:00:00+01:00",
		Env:    Environment{OS: "linux", Arch: "amd64", Backend: "cpu"},
		Config: RunConfig{Model: "vgg16bn", Batch: 64, Steps: 5, RecordOptions: schedule.RecordOptions{Devices: 4, Micro: 8, Schedule: "1f1b"}},
		Summary: Summary{
			StepNanosMedian: 5e9, StepNanosMin: 5e9, StepNanosMax: 5e9, SamplesPerSecond: 12.8,
		},
	}
}

func recordIDs(recs []Record) []string {
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	return ids
}

func lineNumbers(bad []LineError) []int {
	var lines []int
	for _, le := range bad {
		lines = append(lines, le.Line)
	}
	return lines
}

func idFor(i int) string { return fmt.Sprintf("run-%03d", i) }
