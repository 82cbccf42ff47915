package predictor

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/schedule"
)

// validationData is the committed validation dataset: measured records of
// the configurations validationConfigs lists, with per-block events
// stripped (the records keep their per-block times in "blocks").
const validationData = "testdata/validation_runs.jsonl"

// mpiValidationData is the same configurations measured as one process
// per device over MPI (TestGenerateMPIValidationDataset, mpi build tag).
const mpiValidationData = "testdata/mpi_validation_runs.jsonl"

// generateEnv names the environment variable that makes
// TestGenerateValidationDataset measure the whole dataset again and
// rewrite validationData. Measuring it takes a few minutes on two cores
// and a machine quiet but for it, so the records are committed.
const generateEnv = "PIPECAST_GENERATE_VALIDATION"

// validationOptions are the steps of each validation run: two warm-up
// steps (the first measured step after one ran 0.7 % slow in the median),
// five measured ones, per-block timing for the block fits, a transfer
// calibration so that single-device records cost transfers too, and the
// co-location interference measurement (runner.CalibrateInterference) so
// that single-device records can forecast devices that overlap. (The
// committed validationData predates the interference measurement.)
var validationOptions = runner.RunOptions{Warmup: 2, Steps: 5, BlockTiming: true, Calibrate: true, Interference: true}

// validationRepeats is how many runs measure each configuration of the
// dataset. Runs of one configuration differ by more than their steps do
// (where the heap lands, what the machine's other tenants do), so each is
// run this many times, in rounds of a fresh random order, and validation
// compares a forecast with the median of all the runs' steps.
const validationRepeats = 5

// validationConfigs lists the validation dataset's runs for the given
// models: batch 16 of 32×32 inputs at width 0.25 on 1-thread devices,
// K ∈ {1, 2} × M ∈ {1, 2, 4, 8, 16} × gpipe (except-last), coop (d = 1),
// 1f1b, and single at K = 1. ResNet-50 skips M = 16: at 32×32 its last
// stage's feature maps are 1×1, and a batch norm in training cannot
// normalise one value per channel, so it cannot train on single samples
// (nor can torchvision's). The partition balances MACs, which is
// deterministic, so that a forecast is tested on the partition the
// measured run used rather than on the noise of a time-balanced one.
func validationConfigs(names []string, devices, micro []int) []config.Config {
	return scheduleConfigs(names, devices, micro, validationSchedules)
}

// validationSchedules are the schedules of the validation dataset (and
// of the datasets measured like it): those the runner had when it was
// recorded.
var validationSchedules = []string{schedule.Single, schedule.GPipe, schedule.Coop, schedule.OneF1B}

// scheduleConfigs is validationConfigs for the given schedules, with
// interleaved at v = 2.
func scheduleConfigs(names []string, devices, micro []int, schedules []string) []config.Config {
	var out []config.Config
	for _, name := range names {
		for _, k := range devices {
			for _, m := range micro {
				if name == "resnet50" && 16/m < 2 {
					continue
				}
				for _, s := range schedules {
					if s == schedule.Single && k != 1 {
						continue
					}
					opts := schedule.Options{Name: s, Devices: k, Micro: m, Checkpoint: schedule.ExceptLast}
					switch s {
					case schedule.Coop:
						opts.Prefetch = 1
					case schedule.Interleaved:
						opts.Virtual = 2
					}
					out = append(out, config.Config{
						Model:       name,
						ModelConfig: models.Config{Image: 32, Width: 0.25},
						Batch:       16,
						Schedule:    opts,
						Balance:     "macs",
						Backend:     "cpu",
						Threads:     1,
						Dataset:     "synthetic",
						Seed:        1,
					})
				}
			}
		}
	}
	return out
}

// measureRuns runs every configuration and returns their records without
// per-block events.
func measureRuns(t testing.TB, cfgs []config.Config, opts runner.RunOptions, each func(profiler.Record)) []profiler.Record {
	t.Helper()
	var recs []profiler.Record
	for _, cfg := range cfgs {
		start := time.Now()
		res, err := runner.Run(context.Background(), cfg, opts)
		if err != nil {
			t.Fatalf("run %s %s K=%d M=%d: %v", cfg.Model, cfg.Schedule.Name, cfg.Schedule.Devices, cfg.Schedule.Micro, err)
		}
		rec := stripBlockEvents(res.Record())
		if err := rec.Validate(); err != nil {
			t.Fatalf("record of %s %s K=%d M=%d: %v", cfg.Model, cfg.Schedule.Name, cfg.Schedule.Devices, cfg.Schedule.Micro, err)
		}
		t.Logf("%s %s K=%d M=%d: median step %.1f ms, run %.1f s", cfg.Model, cfg.Schedule.Name,
			cfg.Schedule.Devices, cfg.Schedule.Micro, float64(rec.Summary.StepNanosMedian)/1e6, time.Since(start).Seconds())
		if each != nil {
			each(rec)
		}
		recs = append(recs, rec)
	}
	return recs
}

// stripBlockEvents drops the per-block events and the memory tracks of a
// record: the predictor reads block times from "blocks" and memory from
// the meta backend, and the per-block events would make the committed
// dataset ten times larger, the memory tracks twice.
func stripBlockEvents(rec profiler.Record) profiler.Record {
	events := rec.Events[:0:0]
	for _, e := range rec.Events {
		if e.Block < 0 {
			events = append(events, e)
		}
	}
	rec.Events = events
	rec.Devices = slices.Clone(rec.Devices)
	for i := range rec.Devices {
		rec.Devices[i].MemoryTrack = nil
	}
	return rec
}

// TestGenerateValidationDataset measures the validation dataset and
// rewrites validationData; it runs only when generateEnv is set.
func TestGenerateValidationDataset(t *testing.T) {
	if os.Getenv(generateEnv) == "" {
		t.Skipf("set %s=1 to measure the validation dataset again (tens of minutes)", generateEnv)
	}
	names := []string{"resnet50", "vgg16bn"}
	if s := os.Getenv(generateEnv + "_MODELS"); s != "" {
		names = filepath.SplitList(s)
	}
	out := validationData + ".new"
	if err := os.Remove(out); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	start := time.Now()
	cfgs := validationConfigs(names, []int{1, 2}, []int{1, 2, 4, 8, 16})
	measureRounds(t, cfgs, validationOptions, validationRepeats, 0x76616c, out)
	t.Logf("%d configurations × %d runs in %.0f s; rename %s to %s to commit them",
		len(cfgs), validationRepeats, time.Since(start).Seconds(), out, validationData)
}

// measureRounds measures every configuration rounds times, each round in
// a fresh random order (seeded by the round and stream), and appends
// each record to out as soon as its run ends.
func measureRounds(t testing.TB, cfgs []config.Config, opts runner.RunOptions, rounds int, stream uint64, out string) {
	t.Helper()
	for round := range rounds {
		order := rand.New(rand.NewPCG(uint64(round), stream)).Perm(len(cfgs))
		shuffled := make([]config.Config, len(cfgs))
		for i, j := range order {
			shuffled[i] = cfgs[j]
		}
		measureRuns(t, shuffled, opts, func(rec profiler.Record) {
			rec.Round = round + 1
			if err := profiler.Append(out, rec); err != nil {
				t.Fatal(err)
			}
		})
	}
}
