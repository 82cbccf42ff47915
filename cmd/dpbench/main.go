// Command dpbench checks the forecast of data-parallel replicas'
// gradient sums (the dp-allreduce op) against the sums a training run
// measures. For each size it trains R replicas of an mlp whose one stage
// holds that many bytes of gradients (two square layers) for a few
// steps, as pipecast profile --replicas R does, and compares the median
// of the run's dp-allreduce events (from when the last replica joined
// the sum, as the predictor times a collective) with the forecast from the run's own
// calibration alone, priced as predict prices it
// (predictor.TransferModel, CostModel.ReplicaSum). The sizes take turns
// round by round, and each figure is the median over the rounds. It
// prints, per size, the measured and forecast sums and the error of the
// forecast, then PASS when every error is within -bar, else MISS (exit
// status 1):
//
//	go run ./cmd/dpbench [-rounds 5] [-replicas 2] [-sizes 1,4,16,64]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/predictor"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
	_ "github.com/pipecast/pipecast/tensor/cpu" // the cpu backend
)

type options struct {
	rounds, replicas, threads, steps int
	sizes                            []float64 // MiB of a stage's gradients
	bar                              float64
}

func main() {
	var o options
	var sizes string
	flag.IntVar(&o.rounds, "rounds", 5, "rounds, each training every size once")
	flag.IntVar(&o.replicas, "replicas", 2, "replicas R summing their gradients")
	flag.IntVar(&o.threads, "threads", 1, "worker threads per device")
	flag.IntVar(&o.steps, "steps", 5, "measured steps of each run, after one warm-up step")
	flag.StringVar(&sizes, "sizes", "1,4,16,64", "a stage's gradient sizes to measure, in MiB")
	flag.Float64Var(&o.bar, "bar", 0.10, "largest relative error of a forecast that passes")
	compare := flag.Bool("sync", false, "compare the all-reduce with a parameter server instead")
	flag.Parse()
	for _, s := range strings.Split(sizes, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || v <= 0 {
			fmt.Fprintf(os.Stderr, "dpbench: -sizes %q: want positive numbers of MiB\n", sizes)
			os.Exit(2)
		}
		o.sizes = append(o.sizes, v)
	}
	if o.rounds < 1 || o.replicas < 2 || o.threads < 1 || o.steps < 1 || o.bar <= 0 {
		fmt.Fprintln(os.Stderr, "dpbench: want -rounds ≥ 1, -replicas ≥ 2, -threads ≥ 1, -steps ≥ 1 and -bar > 0")
		os.Exit(2)
	}
	if *compare {
		if err := compareSync(context.Background(), o, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "dpbench:", err)
			os.Exit(1)
		}
		return
	}
	pass, err := run(context.Background(), o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dpbench:", err)
		os.Exit(1)
	}
	if !pass {
		os.Exit(1)
	}
}

// workload returns R replicas of an mlp of width d (inputs d, a d×d
// layer, then d → 10), whose gradients are about mib MiB.
func workload(o options, mib float64) config.Config {
	d := int(math.Round(math.Sqrt(mib * (1 << 20) / 4 / 2)))
	return config.Config{
		Model: "mlp", ModelConfig: models.Config{Sizes: []int{d, d, d}}, Batch: 8, Seed: 1,
		Threads: o.threads, Backend: tensor.CPUBackend, Balance: config.BalanceMACs,
		Schedule: schedule.Options{Name: schedule.Single, Devices: 1, Micro: 1, Replicas: o.replicas},
	}
}

// measure trains cfg and returns the bytes each replica's sum carries,
// the median of the run's sums and their forecast from its calibration.
func measure(ctx context.Context, cfg config.Config, steps int) (bytes int64, measured, forecast float64, err error) {
	res, err := runner.Run(ctx, cfg, runner.RunOptions{Warmup: 1, Steps: steps, Calibrate: true})
	if err != nil {
		return 0, 0, 0, err
	}
	rec := res.Record()
	// A sum's time on a device runs from when the last replica joined it
	// to when the device is done, as the predictor times a collective:
	// waiting for a replica still in its backward is not the sum's.
	type at struct{ step, stage int }
	joined := map[at]int64{}
	var sums []profiler.Event
	for _, e := range rec.Events {
		if e.Op == schedule.DPAllReduce.String() && e.Block == profiler.WholeOp {
			k := at{e.Step, e.Stage}
			joined[k] = max(joined[k], e.StartNanos)
			sums = append(sums, e)
			bytes = runner.SumBytes(e.Bytes, cfg.Schedule.Replicas)
		}
	}
	var times []float64
	for _, e := range sums {
		times = append(times, float64(e.EndNanos-joined[at{e.Step, e.Stage}]))
	}
	if len(times) == 0 {
		return 0, 0, 0, fmt.Errorf("%s: no dp-allreduce events", cfg)
	}
	m, err := predictor.TransferModel(rec.Env.Calibration)
	if err != nil {
		return 0, 0, 0, err
	}
	return bytes, profiler.Median(times), m.ReplicaSum(bytes, cfg.Schedule.Replicas), nil
}

func run(ctx context.Context, o options, w io.Writer) (bool, error) {
	measured := make([][]float64, len(o.sizes))
	forecast := make([][]float64, len(o.sizes))
	bytes := make([]int64, len(o.sizes))
	start := time.Now()
	for round := range o.rounds {
		// A fresh order each round, so that a slow spell does not fall
		// on one size.
		for j := range o.sizes {
			i := (j + round) % len(o.sizes)
			b, m, f, err := measure(ctx, workload(o, o.sizes[i]), o.steps)
			if err != nil {
				return false, err
			}
			bytes[i] = b
			measured[i] = append(measured[i], m)
			forecast[i] = append(forecast[i], f)
		}
	}
	fmt.Fprintf(w, "dp-allreduce of %d replicas of an mlp, %d thread(s) each, %s (%d cores), %s; %d rounds of %d steps in %v\n",
		o.replicas, o.threads, profiler.CPUModel(), runtime.NumCPU(), time.Now().UTC().Format("2006-01-02"), o.rounds, o.steps,
		time.Since(start).Round(time.Second))
	fmt.Fprintf(w, "%10s %14s %14s %9s %17s\n", "MiB", "measured (ms)", "forecast (ms)", "error", "rounds' errors")
	pass := true
	for i := range o.sizes {
		ms, fc := profiler.Median(measured[i]), profiler.Median(forecast[i])
		e := fc/ms - 1
		lo, hi := math.Inf(1), math.Inf(-1)
		for r := range measured[i] {
			re := forecast[i][r]/measured[i][r] - 1
			lo, hi = math.Min(lo, re), math.Max(hi, re)
		}
		pass = pass && math.Abs(e) <= o.bar
		fmt.Fprintf(w, "%10.2f %14.3f %14.3f %+8.1f %% %+7.1f…%+.1f %%\n", float64(bytes[i])/(1<<20), ms/1e6, fc/1e6, 100*e, 100*lo, 100*hi)
	}
	verdict := "PASS"
	if !pass {
		verdict = "MISS"
	}
	fmt.Fprintf(w, "%s: every forecast within %.0f %% of the measured median\n", verdict, 100*o.bar)
	return pass, nil
}
