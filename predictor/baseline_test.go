package predictor

import (
	"errors"
	"math"
	"testing"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// baselineMLP is a small mlp with five blocks, enough for four stages.
var baselineMLP = models.Config{Sizes: []int{32, 64, 48, 40, 24, 10}}

// baselineTruth is a step time linear in the baseline's features, the
// law synthetic records follow: 2 ms + 3 ms per extra device + 5 ms of
// bubble per (K−1)/M + 40 µs per 1/m + 1 ns per stage-max parameter +
// 0.5 ms per micro-batch, + 1 ms for coop.
func baselineTruth(k, m, b int, sched string, stageMax float64) float64 {
	t := 2e6 + 3e6*float64(k-1) + 5e6*float64(k-1)/float64(m) + 4e4*float64(m)/float64(b) + stageMax + 5e5*float64(m)
	if sched == schedule.Coop {
		t += 1e6
	}
	return t
}

// baselineRecord returns a measured record of the mlp at (k, m, b, sched)
// partitioned by MACs, whose median step time follows baselineTruth.
func baselineRecord(t *testing.T, desc *models.Model, k, m, b int, sched string) (profiler.Record, config.Config) {
	t.Helper()
	macs := make([]float64, len(desc.Blocks))
	for i, blk := range desc.Blocks {
		macs[i] = float64(blk.Cost.MACs)
	}
	bounds, err := models.Partition(macs, k)
	if err != nil {
		t.Fatal(err)
	}
	r := profiler.Record{
		ID: "r", Kind: profiler.KindMeasured, Env: profiler.Environment{Backend: "cpu"},
		Config: profiler.RunConfig{
			Model:         "mlp",
			Batch:         b,
			Balance:       "macs",
			Threads:       1,
			RecordOptions: schedule.RecordOptions{Devices: k, Micro: m, Schedule: sched},
			SizeRecord:    models.SizeRecord{Image: desc.Config.Image, Classes: desc.Config.Classes, Width: desc.Config.Width},
		},
	}
	var stageMax float64
	for s := 0; s < k; s++ {
		st := profiler.Stage{Device: s, FirstBlock: bounds[s], EndBlock: bounds[s+1]}
		for i := bounds[s]; i < bounds[s+1]; i++ {
			st.Params += desc.Blocks[i].Cost.Params
			st.MACsPerSample += desc.Blocks[i].Cost.MACs
		}
		stageMax = math.Max(stageMax, float64(st.Params))
		r.Partition = append(r.Partition, st)
	}
	r.Summary.StepNanosMedian = int64(baselineTruth(k, m, b, sched, stageMax))
	cfg, err := config.FromRecord(&r)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ModelConfig.Sizes = baselineMLP.Sizes // records do not hold the mlp's sizes
	return r, cfg
}

func TestBaselineRecoversLinearLaw(t *testing.T) {
	desc, err := models.Describe("mlp", baselineMLP)
	if err != nil {
		t.Fatal(err)
	}
	var recs []profiler.Record
	for _, k := range []int{1, 2, 3} {
		for _, m := range []int{1, 2, 4, 8} {
			for _, s := range []string{schedule.GPipe, schedule.Coop} {
				r, _ := baselineRecord(t, desc, k, m, 16, s)
				recs = append(recs, r)
			}
		}
	}
	b, err := FitBaseline(recs)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		k, m  int
		sched string
	}{
		{name: "fitted point", k: 2, m: 4, sched: schedule.GPipe},
		{name: "unseen M", k: 2, m: 16, sched: schedule.Coop},
		{name: "unseen K", k: 4, m: 2, sched: schedule.GPipe},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, cfg := baselineRecord(t, desc, tc.k, tc.m, 16, tc.sched)
			got, err := b.Predict(cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := float64(r.Summary.StepNanosMedian)
			// The ridge penalty shrinks the coefficients by about λ
			// relative to the features' variance: 1 % is far above that
			// and far below the effects the law puts in.
			if e := math.Abs(got-want) / want; e > 0.01 {
				t.Errorf("predicted %.0f ns, law %.0f ns: relative error %.3g", got, want, e)
			}
			// Without Bounds the baseline partitions by MACs itself, as
			// the records were.
			cfg.Bounds = nil
			again, err := b.Predict(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if again != got {
				t.Errorf("predicted %.0f ns without bounds, %.0f ns with the MACs partition as bounds", again, got)
			}
		})
	}
}

func TestBaselineErrors(t *testing.T) {
	if _, err := FitBaseline(nil); !errors.Is(err, ErrNoMeasured) {
		t.Errorf("FitBaseline(nil) = %v, want ErrNoMeasured", err)
	}
	pred := profiler.Record{Kind: profiler.KindPredicted, Config: profiler.RunConfig{Batch: 1, RecordOptions: schedule.RecordOptions{Micro: 1, Devices: 1}}}
	if _, err := FitBaseline([]profiler.Record{pred}); !errors.Is(err, ErrNoMeasured) {
		t.Errorf("FitBaseline(predicted only) = %v, want ErrNoMeasured", err)
	}
	desc, err := models.Describe("mlp", baselineMLP)
	if err != nil {
		t.Fatal(err)
	}
	r, cfg := baselineRecord(t, desc, 1, 1, 8, schedule.GPipe)
	b, err := FitBaseline([]profiler.Record{r})
	if err != nil {
		t.Fatal(err)
	}
	// A single record makes every feature constant: the baseline
	// predicts its time everywhere.
	if got, err := b.Predict(cfg); err != nil || got != float64(r.Summary.StepNanosMedian) {
		t.Errorf("Predict from one record = %v, %v; want %d", got, err, r.Summary.StepNanosMedian)
	}
	other := cfg
	other.Threads = 2
	if _, err := b.Predict(other); err == nil {
		t.Error("Predict of a key without records: no error")
	}
	bad := cfg
	bad.Schedule.Devices = 2 // Bounds still split into one stage
	if _, err := b.Predict(bad); err == nil {
		t.Error("Predict with bounds of the wrong length: no error")
	}
}
