package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/pipecast/pipecast/datasets"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/reports"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/runner/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// ProfileOptions is what the profile command needs. Every slice is a
// list flag: the sweep runs every combination of their values.
type ProfileOptions struct {
	IO     *IOStreams
	Output Format

	Models      []string
	Images      []int
	Classes     []int
	Widths      []float64
	Batches     []int
	Devices     []int
	Micro       []int
	Schedules   []string
	Checkpoints []string // gpipe only
	Prefetch    []int    // coop only

	Balance string
	Threads int // per device; 0: the cores divided by the sweep's largest K
	Steps   int
	Warmup  int
	Dataset string
	Seed    uint64
	Backend string

	Out   string // directory of runs.jsonl; empty: records are not kept
	Trace string // Chrome trace of the sweep's records
	Pprof string // pprof profile of the sweep's records
}

// The default sweep compares GPipe with the cooperative schedule on two
// devices for a ResNet-50 small enough to finish within a minute on a
// laptop.
var (
	defaultProfileModels    = []string{"resnet50"}
	defaultProfileImages    = []int{32}
	defaultProfileWidths    = []float64{0.25}
	defaultProfileBatches   = []int{16}
	defaultProfileDevices   = []int{2}
	defaultProfileMicro     = []int{4}
	defaultProfileSchedules = []string{schedule.GPipe, schedule.Coop}
)

// NewCmdProfile returns the profile command. runF, when not nil, runs
// instead of the sweep, so that tests can check what the flags parsed
// into.
func NewCmdProfile(streams *IOStreams, runF func(*ProfileOptions) error) *cobra.Command {
	opts := &ProfileOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "profile [flags]",
		Short: "Run real pipeline-parallel training and record and compare the runs",
		Long: `Train for a few steps under every combination of the list flags, measure
each run (step times, per-device busy and idle time by op, per-block times,
peak memory, bytes moved) and print a table that compares the runs with the
GPipe run of the same workload.

Every list flag takes comma-separated values (--devices 1,2,4). --checkpoint
applies to gpipe only and --prefetch to coop only: other schedules ignore
them and are not repeated for each value. single runs on one device, so a
sweep skips it where K > 1; a combination whose batch does not split into
M micro-batches (or, for coop, into K shards) is skipped too, with a note
on standard error. If nothing is left to run, nothing runs.

The defaults are a quick sweep: GPipe against the cooperative schedule on
2 devices for ResNet-50 at width 0.25 on 32×32 inputs, batch 16, 4
micro-batches. Pass --image 224 --width 1 for torchvision's sizes.

--threads is the worker threads of every device, fixed for the whole
sweep; by default the cores divided by the largest K of the sweep. Runs
whose devices need more threads than the machine has cores are marked as
oversubscribed.

With --out DIR each run's record is appended to DIR/runs.jsonl as soon as
the run ends, so an interrupted sweep keeps the runs it finished; pipecast
report renders that file again. Ctrl-C stops the sweep after the current
run. Progress is shown on standard error when it is a terminal.`,
		Example: `  pipecast profile
  pipecast profile --model mlp --devices 1,2 --microbatches 1,2,4,8 --schedule gpipe,coop,1f1b --batch 16 --steps 2 --out runs
  pipecast profile --model vgg16bn --image 64 --width 0.5 --schedule gpipe --checkpoint never,always --output markdown`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return profileRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&opts.Models, "model", defaultProfileModels, "models to train (see pipecast models)")
	f.IntSliceVar(&opts.Images, "image", defaultProfileImages, "input heights and widths in pixels (0: the model's default; the mlp ignores it)")
	f.IntSliceVar(&opts.Classes, "classes", []int{0}, "numbers of output classes (0: the model's default)")
	f.Float64SliceVar(&opts.Widths, "width", defaultProfileWidths, "channel-width multipliers (1: torchvision's networks)")
	f.IntSliceVar(&opts.Batches, "batch", defaultProfileBatches, "mini-batch sizes B")
	f.IntSliceVar(&opts.Devices, "devices", defaultProfileDevices, "numbers of devices K, one pipeline stage each")
	f.IntSliceVar(&opts.Micro, "microbatches", defaultProfileMicro, "numbers of micro-batches M per step (coop: slices)")
	f.StringSliceVar(&opts.Schedules, "schedule", defaultProfileSchedules, "schedules: "+strings.Join(schedule.Names(), ","))
	f.StringSliceVar(&opts.Checkpoints, "checkpoint", []string{schedule.ExceptLast.String()}, "gpipe checkpointing: never,except-last,always")
	f.IntSliceVar(&opts.Prefetch, "prefetch", []int{1}, "coop look-ahead depths d")
	// Time is the default: at small widths per-op overheads, not MACs,
	// decide how long a block takes, and a MACs-balanced split of a small
	// ResNet-50 left one device idle most of the step.
	f.StringVar(&opts.Balance, "balance", "time", "block cost the partition balances: params|macs|time (time: each block's forward and backward measured on one device at the micro-batch size)")
	f.IntVar(&opts.Threads, "threads", 0, "worker threads per device (0: the cores divided by the sweep's largest K, at least 1)")
	f.IntVar(&opts.Steps, "steps", 5, "measured steps per run")
	f.IntVar(&opts.Warmup, "warmup", 1, "warm-up steps per run, run first and not measured")
	f.StringVar(&opts.Dataset, "dataset", "synthetic", "training data: synthetic, synthetic:N, cifar10:DIR or mnist:DIR")
	f.Uint64Var(&opts.Seed, "seed", 1, "seed of the weights, the data order and dropout")
	f.StringVar(&opts.Backend, "backend", "cpu", "compute backend (see pipecast version)")
	f.StringVar(&opts.Out, "out", "", "directory whose runs.jsonl each run's record is appended to")
	f.StringVar(&opts.Trace, "trace", "", "write a Chrome trace (chrome://tracing, Perfetto) of the sweep's runs to this file")
	f.StringVar(&opts.Pprof, "pprof", "", "write a pprof profile of the sweep's runs to this file")
	addOutputFlag(cmd, &opts.Output, tableFormats...)
	_ = cmd.RegisterFlagCompletionFunc("schedule", cobra.FixedCompletions(schedule.Names(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("balance", cobra.FixedCompletions([]string{"params", "macs", "time"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// validate checks each flag on its own; expandSweep checks how they
// combine.
func (o *ProfileOptions) validate() error {
	for _, list := range []struct {
		flag string
		n    int
	}{{"model", len(o.Models)}, {"image", len(o.Images)}, {"classes", len(o.Classes)}, {"width", len(o.Widths)},
		{"batch", len(o.Batches)}, {"devices", len(o.Devices)}, {"microbatches", len(o.Micro)},
		{"schedule", len(o.Schedules)}, {"checkpoint", len(o.Checkpoints)}, {"prefetch", len(o.Prefetch)}} {
		if list.n == 0 {
			return usageErrorf("--%s: empty list", list.flag)
		}
	}
	for _, m := range o.Models {
		if _, err := models.LookupArch(m); err != nil {
			return &UsageError{Err: fmt.Errorf("--model: %w", err)}
		}
	}
	for _, s := range o.Schedules {
		if !slices.Contains(schedule.Names(), s) {
			return usageErrorf("--schedule %q: unknown schedule (want %s)", s, strings.Join(schedule.Names(), ", "))
		}
	}
	for _, c := range o.Checkpoints {
		if _, err := schedule.ParseCheckpoint(c); err != nil {
			return &UsageError{Err: fmt.Errorf("--checkpoint: %w", err)}
		}
	}
	positive := []struct {
		flag string
		vals []int
		min  int
	}{{"image", o.Images, 0}, {"classes", o.Classes, 0}, {"batch", o.Batches, 1}, {"devices", o.Devices, 1},
		{"microbatches", o.Micro, 1}, {"prefetch", o.Prefetch, 1}}
	for _, p := range positive {
		for _, v := range p.vals {
			if v < p.min {
				return usageErrorf("--%s %d: need at least %d", p.flag, v, p.min)
			}
		}
	}
	for _, w := range o.Widths {
		if !(w > 0) || math.IsInf(w, 1) {
			return usageErrorf("--width %v: must be a positive number", w)
		}
	}
	switch o.Balance {
	case string(BalanceParams), string(BalanceMACs), "time":
	default:
		return usageErrorf("--balance %q: unknown cost (want params, macs or time)", o.Balance)
	}
	switch {
	case o.Threads < 0:
		return usageErrorf("--threads %d: need at least 1 (or 0 for the default)", o.Threads)
	case o.Steps < 1:
		return usageErrorf("--steps %d: need at least 1 measured step", o.Steps)
	case o.Warmup < 0:
		return usageErrorf("--warmup %d: cannot be negative", o.Warmup)
	}
	var backends []string
	for _, b := range tensor.Backends() {
		backends = append(backends, b.Name)
	}
	if !slices.Contains(backends, o.Backend) {
		return usageErrorf("--backend %q: not compiled in (have %s)", o.Backend, strings.Join(backends, ", "))
	}
	return nil
}

// expandSweep returns the configurations of every runnable combination
// of the list flags, in flag order, and notes on the combinations it
// skipped. It builds nothing but the models' symbolic descriptions, so it
// finds every invalid combination before the first run starts.
func expandSweep(o *ProfileOptions) ([]runner.Config, []string, error) {
	var cfgs []runner.Config
	var notes []string
	note := func(format string, args ...any) {
		if s := fmt.Sprintf(format, args...); !slices.Contains(notes, s) {
			notes = append(notes, s)
		}
	}
	seen := map[string]bool{}
	for _, name := range o.Models {
		a, err := models.LookupArch(name)
		if err != nil {
			return nil, nil, &UsageError{Err: fmt.Errorf("--model: %w", err)}
		}
		for _, image := range o.Images {
			for _, classes := range o.Classes {
				for _, width := range o.Widths {
					size := ModelSize{Image: image, Classes: classes, Width: width}
					if why := size.tooSmall(a); why != "" {
						return nil, nil, usageErrorf("--image %d: %s", image, why)
					}
					m, err := size.describe(a)
					if err != nil {
						return nil, nil, err
					}
					for _, k := range o.Devices {
						if k > len(m.Blocks) {
							return nil, nil, usageErrorf("--devices %d: %s has %d blocks, so at most %d stages", k, name, len(m.Blocks), len(m.Blocks))
						}
					}
					for _, cfg := range o.combinations(name, size.config(a)) {
						if why := skipReason(cfg); why != "" {
							note("%s", why)
							continue
						}
						key := fmt.Sprintf("%+v", cfg)
						if seen[key] {
							continue // the mlp takes no image: one run for every --image
						}
						seen[key] = true
						cfgs = append(cfgs, cfg)
					}
				}
			}
		}
	}
	if len(cfgs) == 0 {
		return nil, notes, usageErrorf("no combination of the flags can run: %s", strings.Join(notes, "; "))
	}
	threads := o.Threads
	if threads == 0 {
		maxK := 1
		for _, c := range cfgs {
			maxK = max(maxK, c.Schedule.Devices)
		}
		threads = max(1, runtime.NumCPU()/maxK)
	}
	for i := range cfgs {
		cfgs[i].Threads = threads
	}
	return cfgs, notes, nil
}

// checkDatasets opens the training data once for every model input and
// class count of the sweep, so that data that does not exist, cannot be
// read or does not fit a model is refused (exit 2) before the first run
// rather than a failure in the middle of the sweep.
func checkDatasets(cfgs []runner.Config) error {
	described, opened := map[string]bool{}, map[string]bool{}
	for _, cfg := range cfgs {
		// A sized model's input and classes are the same in every
		// pipeline configuration of it: describe it once.
		sized := fmt.Sprintf("%s %+v", cfg.Model, cfg.ModelConfig)
		if described[sized] {
			continue
		}
		described[sized] = true
		m, err := models.Describe(cfg.Model, cfg.ModelConfig)
		if err != nil {
			return err
		}
		data := fmt.Sprintf("%s %v %d", cfg.Dataset, m.Input, m.Config.Classes)
		if opened[data] {
			continue
		}
		opened[data] = true
		if _, err := datasets.Open(cfg.Dataset, m.Input, m.Config.Classes, cfg.Seed); err != nil {
			return &InputError{Err: fmt.Errorf("--dataset: %w (for %s)", err, cfg.Model)}
		}
	}
	return nil
}

// combinations are the pipeline configurations of one sized model:
// batch × devices × micro-batches × schedules, gpipe times the checkpoint
// modes and coop times the prefetch depths.
func (o *ProfileOptions) combinations(model string, mc models.Config) []runner.Config {
	var out []runner.Config
	for _, b := range o.Batches {
		for _, k := range o.Devices {
			for _, m := range o.Micro {
				for _, s := range o.Schedules {
					base := runner.Config{
						Model: model, ModelConfig: mc, Batch: b, Balance: o.Balance, Backend: o.Backend,
						Dataset: o.Dataset, Seed: o.Seed,
						Schedule: schedule.Options{Name: s, Devices: k, Micro: m},
					}
					switch s {
					case schedule.GPipe:
						for _, c := range o.Checkpoints {
							cfg := base
							cfg.Schedule.Checkpoint, _ = schedule.ParseCheckpoint(c) // validate checked it
							out = append(out, cfg)
						}
					case schedule.Coop:
						for _, d := range o.Prefetch {
							cfg := base
							cfg.Schedule.Prefetch = d
							out = append(out, cfg)
						}
					default:
						out = append(out, base)
					}
				}
			}
		}
	}
	return out
}

// skipReason says why a combination cannot run, or "" when it can.
func skipReason(c runner.Config) string {
	s := c.Schedule
	switch {
	case s.Name == schedule.Single && s.Devices > 1:
		return fmt.Sprintf("skipping single at K=%d: it runs on one device", s.Devices)
	case c.Batch%s.Micro != 0:
		return fmt.Sprintf("skipping batch %d with M=%d: the batch does not split into %d equal micro-batches", c.Batch, s.Micro, s.Micro)
	case s.Name == schedule.Coop && c.Batch%s.Devices != 0:
		return fmt.Sprintf("skipping coop with batch %d at K=%d: the batch does not split into %d equal shards", c.Batch, s.Devices, s.Devices)
	}
	return ""
}

// describeConfig names a configuration in progress lines and errors.
func describeConfig(c runner.Config) string {
	s := c.Schedule
	name := s.Name
	switch s.Name {
	case schedule.GPipe:
		name += " (" + s.Checkpoint.String() + ")"
	case schedule.Coop:
		name += fmt.Sprintf(" (d=%d)", s.Prefetch)
	}
	size := ""
	if c.ModelConfig.Image > 0 {
		size += fmt.Sprintf(" %dpx", c.ModelConfig.Image)
	}
	if c.ModelConfig.Width != 1 {
		size += " ×" + strconv.FormatFloat(c.ModelConfig.Width, 'g', -1, 64)
	}
	return fmt.Sprintf("%s%s %s K=%d M=%d B=%d", c.Model, size, name, s.Devices, s.Micro, c.Batch)
}

// errInterrupted is returned when Ctrl-C stopped a sweep early.
var errInterrupted = errors.New("interrupted")

func profileRun(ctx context.Context, opts *ProfileOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	cfgs, notes, err := expandSweep(opts)
	if err != nil {
		return err
	}
	if err := checkDatasets(cfgs); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(opts.IO.ErrOut, "pipecast: "+n)
	}
	var dataset string
	if opts.Out != "" {
		dataset = filepath.Join(opts.Out, "runs.jsonl")
	}
	prog := newSweepProgress(opts.IO.ErrOut, len(cfgs))
	// The runs ignore the interrupt: Ctrl-C stops the sweep between runs,
	// so that no record is left half made.
	runCtx := context.WithoutCancel(ctx)
	var recs []profiler.Record
	var runErr error
	for i, cfg := range cfgs {
		if ctx.Err() != nil {
			runErr = errInterrupted
			break
		}
		prog.start(describeConfig(cfg))
		res, err := runner.Run(runCtx, cfg, runner.RunOptions{Warmup: opts.Warmup, Steps: opts.Steps, BlockTiming: true, Calibrate: true})
		if err != nil {
			runErr = fmt.Errorf("run %d of %d (%s): %w", i+1, len(cfgs), describeConfig(cfg), err)
			break
		}
		rec := res.Record()
		if dataset != "" {
			if err := profiler.Append(dataset, rec); err != nil {
				runErr = err
				break
			}
		}
		recs = append(recs, rec)
		prog.done()
	}
	prog.finish(runErr != nil)
	if errors.Is(runErr, errInterrupted) {
		kept := "records are not kept without --out"
		if dataset != "" {
			kept = "their records are in " + dataset
		}
		runErr = fmt.Errorf("interrupted after %d of %d runs; %s", len(recs), len(cfgs), kept)
	}
	if len(recs) > 0 {
		if err := writeExports(opts.Trace, opts.Pprof, recs); err != nil && runErr == nil {
			runErr = err
		}
		title := fmt.Sprintf("pipecast profile: %d runs", len(recs))
		if len(recs) < len(cfgs) {
			title = fmt.Sprintf("pipecast profile: %d of %d runs", len(recs), len(cfgs))
		}
		if rec := recs[0]; rec.Env.Host != "" {
			title += fmt.Sprintf(" on %s (%d cores, %s)", rec.Env.Host, rec.Env.Cores, rec.Env.CPUModel)
		}
		t := reports.RunsTable(recs, reports.RunsTableOptions{Title: title})
		if err := reports.Render(opts.IO.Out, t, reports.Format(opts.Output)); err != nil && runErr == nil {
			runErr = err
		}
	}
	return runErr
}

// writeExports writes the Chrome trace and pprof profile of recs to the
// files given, skipping an empty name.
func writeExports(tracePath, pprofPath string, recs []profiler.Record) error {
	if tracePath != "" {
		if err := writeFile(tracePath, func(w io.Writer) error { return reports.WriteTrace(w, recs) }); err != nil {
			return err
		}
	}
	if pprofPath != "" {
		if err := writeFile(pprofPath, func(w io.Writer) error { return reports.WritePprof(w, recs) }); err != nil {
			return err
		}
	}
	return nil
}

// writeFile creates path and fills it with write; a failed write removes
// the partial file.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// isTerminal reports whether w is a terminal; tests replace it.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// sweepProgress is the progress bar of a sweep: a bar over the runs, the
// current configuration and the time left. It draws nothing unless the
// writer is a terminal, so that pipes and logs stay clean.
type sweepProgress struct {
	p       *mpb.Progress
	bar     *mpb.Bar
	current atomic.Value // string: the configuration now running
}

func newSweepProgress(w io.Writer, runs int) *sweepProgress {
	s := &sweepProgress{}
	if !isTerminal(w) {
		return s
	}
	s.current.Store("")
	s.p = mpb.New(mpb.WithOutput(w), mpb.WithWidth(24))
	s.bar = s.p.AddBar(int64(runs),
		mpb.PrependDecorators(decor.CountersNoUnit("run %d/%d", decor.WCSyncSpaceR)),
		mpb.AppendDecorators(
			decor.AverageETA(decor.ET_STYLE_GO, decor.WCSyncSpace),
			decor.Any(func(decor.Statistics) string { return " " + s.current.Load().(string) }),
		),
	)
	return s
}

func (s *sweepProgress) start(config string) {
	if s.bar != nil {
		s.current.Store(config)
	}
}

func (s *sweepProgress) done() {
	if s.bar != nil {
		s.bar.Increment()
	}
}

// finish removes a bar that did not complete and waits for the last
// frame, so that later messages start on a line of their own.
func (s *sweepProgress) finish(aborted bool) {
	if s.p == nil {
		return
	}
	if aborted {
		s.bar.Abort(false)
	}
	s.p.Wait()
}
