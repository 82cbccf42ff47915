package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/schedule"
)

// multiprocessTol bounds the relative difference between a run of one
// process per device and the same run in one process: both compute the
// same float32 operations in the same order, so anything above round-off
// is a bug.
const multiprocessTol = 1e-6

// runGroups runs cfg as len(groups) processes, one goroutine per rank,
// and returns every rank's result.
func runGroups(ctx context.Context, cfg config.Config, opts RunOptions, groups []comm.Group) ([]*Result, error) {
	res := make([]*Result, len(groups))
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for r, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := opts
			o.Group = g
			res[r], errs[r] = Run(ctx, cfg, o)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return res, nil
}

// TestMultiProcessEqualsInProcess runs every pipelined schedule as one
// process per device (goroutines standing in for processes over the
// in-process transport's groups) and checks that it trains exactly what
// the same run in one process trains, and that rank 0's record describes
// the whole run.
func TestMultiProcessEqualsInProcess(t *testing.T) {
	ctx := watch(t, 5*time.Minute)
	type workload struct {
		model string
		mc    models.Config
		batch int
	}
	loads := []workload{{"mlp", models.Config{Width: 0.25}, 12}}
	if !testing.Short() {
		loads = append(loads, workload{"resnet50", models.Config{Width: 0.25, Image: 32}, 12})
	}
	// Every rank takes rank 0's partition: balanced by time, ranks that
	// measured their own would disagree and fail on the first transfer.
	timed := config.Config{Model: "mlp", ModelConfig: models.Config{Width: 0.25}, Batch: 12, Seed: 3, Threads: 1, Balance: config.BalanceTime,
		Schedule: schedule.Options{Name: schedule.Coop, Devices: 3, Micro: 2, Prefetch: 1}}
	if _, err := runGroups(ctx, timed, RunOptions{Steps: 1}, comm.NewInProcessGroups(3)); err != nil {
		t.Errorf("%s: %v", timed.String(), err)
	}
	for _, w := range loads {
		for _, k := range []int{2, 3} {
			for _, o := range []schedule.Options{
				{Name: schedule.GPipe, Devices: k, Micro: 2, Checkpoint: schedule.ExceptLast},
				{Name: schedule.Coop, Devices: k, Micro: 2, Prefetch: 1},
				{Name: schedule.OneF1B, Devices: k, Micro: 2},
			} {
				cfg := config.Config{Model: w.model, ModelConfig: w.mc, Batch: w.batch, Seed: 3, Threads: 1, Schedule: o, Balance: config.BalanceMACs}
				name := cfg.String()
				opts := RunOptions{Warmup: 1, Steps: 2, Weights: true, BlockTiming: true}
				want, err := Run(ctx, cfg, opts)
				if err != nil {
					t.Fatalf("%s in one process: %v", name, err)
				}
				got, err := runGroups(ctx, cfg, opts, comm.NewInProcessGroups(k))
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				checkMultiProcess(t, name, want, got)
			}
		}
	}
}

// checkMultiProcess compares a multi-process run's ranks with the
// in-process run want.
func checkMultiProcess(t *testing.T, name string, want *Result, got []*Result) {
	t.Helper()
	root := got[0]
	wantLosses, gotLosses := stepLosses(want), stepLosses(root)
	if d := lossDiff(gotLosses, wantLosses); d > multiprocessTol {
		t.Errorf("%s: losses %v, in one process %v", name, gotLosses, wantLosses)
	}
	weights := map[string][]float32{}
	for _, r := range got {
		for n, v := range r.Weights {
			weights[n] = v
		}
	}
	if d, where := relDiff(weights, want.Weights); d > multiprocessTol || len(weights) != len(want.Weights) {
		t.Errorf("%s: %d weights differ from one process's %d by %.3g (in %s)", name, len(weights), len(want.Weights), d, where)
	}
	rec := root.Record()
	if err := rec.Validate(); err != nil {
		t.Fatalf("%s: rank 0's record: %v", name, err)
	}
	k := want.Config.JobDevices()
	if rec.Env.Transport != profiler.TransportMPI || len(rec.Env.Ranks) != k || len(rec.Devices) != k || len(rec.Env.Devices) != k {
		t.Errorf("%s: transport %q, %d ranks, %d devices; want mpi and %d", name, rec.Env.Transport, len(rec.Env.Ranks), len(rec.Devices), k)
	}
	ref := want.Record()
	if len(rec.Events) != len(ref.Events) {
		t.Errorf("%s: %d events, in one process %d", name, len(rec.Events), len(ref.Events))
	}
	for d := range rec.Devices {
		if g, w := rec.Devices[d].PeakBytes, ref.Devices[d].PeakBytes; g != w && !coopSlack(want.Config, g, w) {
			t.Errorf("%s: device %d peaks at %d bytes, in one process %d", name, d, g, w)
		}
		if g, w := rec.Devices[d].SentBytesPerStep, ref.Devices[d].SentBytesPerStep; g != w {
			t.Errorf("%s: device %d sends %d bytes a step, in one process %d", name, d, g, w)
		}
	}
	for _, e := range rec.Events {
		if e.StartNanos < 0 || e.EndNanos > rec.Summary.StepNanosMax {
			t.Errorf("%s: event %+v outside its step (longest %d ns)", name, e, rec.Summary.StepNanosMax)
			break
		}
	}
}

// coopSlack allows what a device holds in flight to depend on timing, as
// the in-process memory tests do: a sent tensor stays on its sender until
// the receiver copies it.
func coopSlack(cfg config.Config, got, want int64) bool {
	d := got - want
	if d < 0 {
		d = -d
	}
	return float64(d) <= 0.25*float64(want)
}

func stepLosses(r *Result) []float64 {
	var out []float64
	for _, s := range append(append([]StepResult(nil), r.Warmup...), r.Steps...) {
		out = append(out, s.Loss)
	}
	return out
}

// TestWatchdogCatchesAStoppedRank stops one rank mid-step (its next op
// waits for ever, as a process stopped with SIGSTOP would) and checks
// that the other's watchdog stops its run within the timeout, naming
// where its device waits.
func TestWatchdogCatchesAStoppedRank(t *testing.T) {
	ctx := watch(t, time.Minute)
	cfg := config.Config{Model: "mlp", ModelConfig: models.Config{Width: 0.25}, Batch: 8, Threads: 1, Balance: config.BalanceMACs,
		Schedule: schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 2}}
	groups := comm.NewInProcessGroups(2)
	stopped := make(chan struct{})
	errs := make([]error, 2)
	took := make([]time.Duration, 2)
	var wg sync.WaitGroup
	for r, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := RunOptions{Warmup: 1, Steps: 2, Group: g, Timeout: 300 * time.Millisecond}
			if r == 1 {
				// Rank 1 stops for good before its first op; only
				// the end of rank 0's run releases it.
				opts.Timeout = 0
				opts.fault = func(_ int, op schedule.Op) error {
					<-stopped
					return context.Canceled
				}
			}
			start := time.Now()
			_, errs[r] = Run(ctx, cfg, opts)
			took[r] = time.Since(start)
			if r == 0 {
				close(stopped)
			}
		}()
	}
	wg.Wait()
	if !errors.Is(errs[0], ErrStalled) {
		t.Fatalf("rank 0: got %v, want ErrStalled", errs[0])
	}
	if !strings.Contains(errs[0].Error(), "device 0 at step 0") || took[0] > 10*time.Second {
		t.Errorf("rank 0 after %v: %v; want its position within seconds", took[0], errs[0])
	}
	t.Logf("rank 0 after %v: %v", took[0].Round(time.Millisecond), errs[0])
}
