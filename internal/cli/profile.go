package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/reports"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/schedule"
)

// ProfileOptions is what the profile command needs. Every slice is a
// list flag: the sweep runs every combination of their values.
type ProfileOptions struct {
	IO     *IOStreams
	Output Format
	Wide   bool // --wide: every column, however narrow the terminal

	// Sweep holds the list flags, whose every combination runs, and the
	// values all runs share (--threads 0: the cores divided by the
	// sweep's largest K).
	config.Sweep

	Steps  int
	Warmup int
	// Rounds runs the sweep that many times, interleaved: each round runs
	// every configuration once, in an order of its own.
	Rounds int
	// Timeout is the watchdog's: a run none of whose devices moves on for
	// that long stops, saying where each device waits (0: off).
	Timeout time.Duration
	// Force runs configurations whose forecast memory exceeds what the
	// machine has available.
	Force bool
	// Resume skips the configurations whose measured records Out's
	// dataset already holds.
	Resume bool
	// StragglerFlag and FailFlag are --straggler DEVICE:FACTOR and --fail
	// DEVICE:STEP, parsed into the sweep by validate.
	StragglerFlag, FailFlag string
	// ThreadsFlag is --threads, one count or one per device ("2,1"),
	// parsed into the sweep's Threads or DeviceThreads by validate.
	ThreadsFlag string
	// PartitionFlags are the --partition values, parsed into the sweep's
	// Partitions by validate; BalanceSet says whether --balance was given.
	PartitionFlags []string
	BalanceSet     bool

	// DryRun checks everything the sweep checks before its first run
	// and prints what would run (profileDryRun), running nothing.
	DryRun bool

	Out   string // directory of runs.jsonl; empty: records are not kept
	Trace string // Chrome trace of the sweep's records
	Pprof string // pprof profile of the sweep's records
}

// The default sweep compares GPipe with the cooperative schedule on two
// devices for a ResNet-50 small enough to finish within a minute on a
// laptop.
var (
	defaultProfileModels    = []string{"resnet50"}
	defaultProfileBatches   = []int{16}
	defaultProfileDevices   = []int{2}
	defaultProfileMicro     = []int{4}
	defaultProfileSchedules = []string{schedule.GPipe, schedule.Coop}
)

// defaultRounds is how many interleaved rounds a sweep runs unless told.
// On a shared 2-core Intel Xeon (2026-12-02) five repetitions of the
// default profile gave step medians 7–13 % apart with one round, 6–9 %
// with three, 3–7 % with five (in four sets of five; a fifth met a slow
// spell) and no better with ten or twenty (scripts/profile-spread.sh):
// beyond five, what moves the medians is the machine's load over
// minutes, which no number of rounds within one command averages out,
// while five keep the default sweep near 2 s.
const defaultRounds = 5

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
applies to gpipe only, --prefetch to coop only and --virtual-stages to
interleaved only: other schedules ignore them and are not repeated for each
value. single runs on one device, so a sweep skips it where K > 1; a
combination whose batch does not split into M micro-batches (or, for coop,
into K shards) is skipped too, with a note on standard error. If nothing is
left to run, nothing runs.

The schedules: single (one device, the reference), gpipe (fill-drain),
coop (the cooperative prediction/synchronization schedule), 1f1b
(PipeDream-Flush) and
  interleaved  Megatron-LM's interleaved 1F1B: the model cut into K·v
               stages, device k holding stages k, k+K, … (--virtual-stages v)
  zb-h1        zero bubble (Qi et al.): each backward split into its input
               and weight gradients, the weights' deferred into the bubbles,
               at 1F1B's activation memory
  zb-h2        zero bubble with more activation memory (about twice 1F1B's)
               for a fuller pipeline, the bubble nearly gone

The defaults are a quick sweep: GPipe against the cooperative schedule on
2 devices for ResNet-50 at width 0.25 on 32×32 inputs, batch 16, 4
micro-batches. Pass --image 224 --width 1 for torchvision's sizes.

--threads is the worker threads of every device, fixed for the whole
sweep; by default the cores divided by the largest K of the sweep. Runs
whose devices need more threads than the machine has cores are marked as
oversubscribed. --threads 2,1 gives each pipeline device its own (every
replica's device k the k-th; configurations of another K are skipped):
devices that differ. The runner measures their speeds from the model's
block times on each thread count and records them; --balance speed gives
slower devices less work, as does a straggler's factor (--straggler).

With --out DIR each run's record is appended to DIR/runs.jsonl as soon as
the run ends, so an interrupted sweep keeps the runs it finished; pipecast
report renders that file again. Ctrl-C stops the sweep after the current
run. Progress is shown on standard error when it is a terminal.

--replicas R runs R data-parallel copies of each pipeline on R·K devices,
each on its own --batch samples (R·B a step), every stage's gradients
summed over its replicas before the update.

--dry-run makes every check a sweep makes before its first run (the flags,
the combinations, the data, each configuration's memory, --resume's
dataset) and prints the runs it would make, then stops: nothing trains and
no file is written.`,
		Example: `  pipecast profile
  pipecast profile --model mlp --devices 1,2 --microbatches 1,2,4,8 --schedule gpipe,coop,1f1b --batch 16 --steps 2 --out runs
  pipecast profile --model vgg16bn --image 64 --width 0.5 --schedule gpipe --checkpoint never,always --output markdown
  pipecast profile --model gpt2 --width 0.25 --layers 4 --seq 32 --batch 8 --schedule 1f1b --partition 2,4
  pipecast profile --model mlp --replicas 2 --devices 1,2 --schedule 1f1b --batch 8
  pipecast profile --model resnet50 --image 224 --width 1 --devices 1,2,4 --schedule gpipe,coop,1f1b --dry-run`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.BalanceSet = cmd.Flags().Changed("balance")
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
	opts.SizeVariants = defaultProfileSizes()
	addSizeListFlags(f, &opts.SizeVariants, "")
	f.IntSliceVar(&opts.Batches, "batch", defaultProfileBatches, "mini-batch sizes B")
	f.IntSliceVar(&opts.Devices, "devices", defaultProfileDevices, "numbers of devices K, one pipeline stage each")
	f.IntSliceVar(&opts.Replicas, "replicas", []int{1}, "numbers of data-parallel replicas R of the pipeline: R·K devices, each replica on B samples of a step's R·B, every stage's gradients summed over its replicas before the update")
	f.IntSliceVar(&opts.Micro, "microbatches", defaultProfileMicro, "numbers of micro-batches M per step (coop: slices)")
	f.StringSliceVar(&opts.Schedules, "schedule", defaultProfileSchedules, "schedules: "+strings.Join(schedule.Names(), ","))
	opts.Variants = schedule.DefaultVariants()
	addScheduleOptionFlags(f, &opts.Variants, "")
	// Time is the default: at small widths per-op overheads, not MACs,
	// decide how long a block takes, and a MACs-balanced split of a small
	// ResNet-50 left one device idle most of the step.
	addBalanceFlag(cmd, &opts.Balance, config.BalanceTime, " (time: each block's forward and backward measured on one device at the micro-batch size; "+
		"speed: those times on each device's measured speed, for devices that differ; memory: the split whose largest device's modelled peak is lowest; given: --partition's)")
	addPartitionFlag(f, &opts.PartitionFlags)
	f.StringVar(&opts.ThreadsFlag, "threads", "", "worker threads per device, or one count per device (2,1: devices that differ; 0: the cores divided by the sweep's largest K, at least 1)")
	f.IntVar(&opts.Steps, "steps", 5, "measured steps per run")
	f.IntVar(&opts.Rounds, "rounds", defaultRounds, "run the sweep this many times, every configuration once a round, each round in a fresh order, so that the machine's slow spells fall on every configuration alike; a configuration's rounds share one partition, and its point is their median")
	f.IntVar(&opts.Warmup, "warmup", 1, "warm-up steps per run, run first and not measured")
	f.StringVar(&opts.Dataset, "dataset", "synthetic", "training data: synthetic, synthetic:N, cifar10:DIR or mnist:DIR; for a language model synthetic, synthetic:N (uniform token ids) or text:FILE (a file's bytes as tokens)")
	f.Uint64Var(&opts.Seed, "seed", 1, "seed of the weights, the data order and dropout")
	f.StringVar(&opts.Backend, "backend", "cpu", "compute backend (see pipecast version)")
	f.StringVar(&opts.Transport, "transport", profiler.TransportInProcess, "how devices move data: inprocess (one process) or mpi (one process per device, under mpirun; needs the mpi build tag)")
	f.DurationVar(&opts.Timeout, "timeout", 10*time.Minute, "stop a run when no device moves on for this long, and say where each waits (0: never)")
	addOptimizerFlags(f, &opts.Sweep)
	f.StringVar(&opts.StragglerFlag, "straggler", "", "DEVICE:FACTOR: device DEVICE computes FACTOR times as slowly (each compute op sleeps until it has taken FACTOR times its duration in the warm-up steps; transfers keep their speed), recorded in the configuration")
	f.StringVar(&opts.FailFlag, "fail", "", "DEVICE:STEP: device DEVICE fails at the start of step STEP (an injected fault)")
	f.BoolVar(&opts.Resume, "resume", false, "skip the configurations whose records --out's runs.jsonl already holds (matched on the whole configuration), to finish an interrupted sweep; the table lists the whole sweep's runs")
	f.BoolVar(&opts.DryRun, "dry-run", false, "check the flags, the sweep, the data and every configuration as a sweep does before its first run, print the runs it would make, and stop: nothing trains and no file is written")
	f.BoolVar(&opts.Force, "force", false, "run configurations whose forecast memory exceeds what the machine has available")
	f.StringVar(&opts.Out, "out", "", "directory whose runs.jsonl each run's record is appended to")
	f.StringVar(&opts.Trace, "trace", "", "write a Chrome trace (chrome://tracing, Perfetto) of the sweep's runs to this file")
	f.StringVar(&opts.Pprof, "pprof", "", "write a pprof profile of the sweep's runs to this file")
	addTableFlags(cmd, &opts.Output, &opts.Wide)
	_ = cmd.RegisterFlagCompletionFunc("schedule", cobra.FixedCompletions(schedule.Names(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// validate checks each flag on its own (config.Sweep.Check), and the
// steps; expandSweep checks how they combine.
func (o *ProfileOptions) validate() error {
	var err error
	if o.Partitions, err = parsePartitions(o.PartitionFlags, &o.Balance, o.BalanceSet); err != nil {
		return err
	}
	if o.Straggler, err = config.ParseStraggler(o.StragglerFlag); err != nil {
		return &UsageError{Err: fmt.Errorf("--%w", err)}
	}
	if o.ThreadsFlag != "" {
		if o.Threads, o.DeviceThreads, err = config.ParseThreads(o.ThreadsFlag); err != nil {
			return &UsageError{Err: fmt.Errorf("--%w", err)}
		}
	}
	if o.Fail, err = config.ParseFailAt(o.FailFlag); err != nil {
		return &UsageError{Err: fmt.Errorf("--%w", err)}
	}
	if err := o.Sweep.Check(); err != nil {
		return sweepError(err, nil)
	}
	if err := checkOutputFiles("trace", o.Trace, "pprof", o.Pprof); err != nil {
		return err
	}
	if err := checkDatasetDir("out", o.Out); err != nil {
		return err
	}
	if err := checkTransport(o.Transport, o.Timeout); err != nil {
		return err
	}
	if o.Resume && o.Out == "" {
		return usageErrorf("--resume needs --out: it skips what the dataset there holds")
	}
	switch {
	case o.Steps < 1:
		return usageErrorf("--steps %d: need at least 1 measured step", o.Steps)
	case o.Rounds < 1:
		return usageErrorf("--rounds %d: need at least 1 round", o.Rounds)
	case o.Warmup < 0:
		return usageErrorf("--warmup %d: cannot be negative", o.Warmup)
	}
	return nil
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
	first := make([]int, len(cfgs))
	for i := range first {
		first[i] = 1
	}
	var done []resumed
	if opts.Resume {
		if first, done, err = remainingRounds(filepath.Join(opts.Out, "runs.jsonl"), cfgs, opts.Steps, opts.Warmup, opts.Rounds); err != nil {
			return err
		}
		var left []config.Config
		var leftFirst []int
		for i, c := range cfgs {
			if first[i] <= opts.Rounds {
				left, leftFirst = append(left, c), append(leftFirst, first[i])
			}
		}
		cfgs, first = left, leftFirst
		fmt.Fprintf(opts.IO.ErrOut, "pipecast: resuming: %d runs done, %d to run\n", len(done), len(planRounds(cfgs, first, opts.Rounds, opts.Seed)))
		if len(cfgs) == 0 {
			if opts.Transport == profiler.TransportMPI || opts.DryRun {
				// Every rank would print it; a dry run prints no table.
				return nil
			}
			return printRuns(opts, nil, done, 0)
		}
	}
	// The checks take seconds at most and ignore an interrupt, which the
	// sweep then sees before its first run.
	if err := preflight(context.WithoutCancel(ctx), cfgs, opts.Force, profiler.AvailableMemoryBytes()); err != nil {
		return err
	}
	// Every check is behind; the work starts here.
	if opts.DryRun {
		return profileDryRun(opts, cfgs, first, notes)
	}
	sr, err := newSweepRunner(opts.Transport, cfgs)
	if err != nil {
		return err
	}
	runErr := profileSweep(ctx, opts, sr, planRounds(cfgs, first, opts.Rounds, opts.Seed), notes, done)
	if runErr != nil && opts.Transport == profiler.TransportMPI {
		// Finalizing would wait for the ranks that failed or stopped; a
		// rank that exits without it makes mpirun end the whole job.
		return runErr
	}
	if err := sr.close(); err != nil && runErr == nil {
		runErr = err
	}
	return runErr
}

// profileSweep runs the configurations on sr; only the root process
// (the only one in process) prints, writes records and exports. prior
// are the records a resumed sweep already holds: the table and the
// exports list them beside the new ones.
func profileSweep(ctx context.Context, opts *ProfileOptions, sr sweepRunner, runs []plannedRun, notes []string, prior []resumed) error {
	errOut := opts.IO.ErrOut
	if !sr.root() {
		errOut = io.Discard
	}
	for _, n := range notes {
		fmt.Fprintln(errOut, "pipecast: "+n)
	}
	if !opts.BalanceSet && opts.Balance == config.BalanceTime && (len(opts.DeviceThreads) > 0 || opts.Straggler.Active()) {
		fmt.Fprintln(errOut, "pipecast: the devices differ and the partition balances time as if they did not; --balance speed gives the slower ones less work")
	}
	var dataset string
	if opts.Out != "" && sr.root() {
		dataset = filepath.Join(opts.Out, "runs.jsonl")
	}
	prog := newSweepProgress(errOut, len(runs))
	// The runs ignore the interrupt: Ctrl-C stops the sweep between runs,
	// so that no record is left half made.
	runCtx := context.WithoutCancel(ctx)
	var recs []profiler.Record
	var index []int // the sweep list's index of each record's configuration
	var runErr error
	// The sweep measures co-location interference once for the runs that
	// share its work: the model and the micro-batch size, on the same
	// backend and threads.
	interference := map[string]*profiler.Interference{}
	times, shared := balanceTimes{}, sharing(plannedConfigs(runs))
	if opts.Resume && dataset != "" {
		times.seed(dataset)
	}
	// The root process measures a workload's block times; in a run of
	// one process per device rank 0 (the root) partitions and tells the
	// others.
	measure := measurer{
		times: func(c config.Config) ([]float64, error) {
			if !sr.root() {
				return nil, nil
			}
			return runner.BlockTimes(c)
		},
		speeds: func(c config.Config) ([]float64, error) {
			if !sr.root() || c.Transport == profiler.TransportMPI {
				// Each rank measures its own device, on its own host;
				// the root keeps what the first run measured (below).
				return nil, nil
			}
			s, _, err := runner.DeviceSpeeds(c, c.BalanceTimes)
			return s, err
		},
	}
	for i, run := range runs {
		goOn, err := sr.proceed(runCtx, ctx.Err() == nil)
		if err != nil {
			runErr = err
			break
		}
		if !goOn {
			runErr = errInterrupted
			break
		}
		cfg, err := times.apply(run.cfg, shared, measure)
		if err != nil {
			runErr = fmt.Errorf("run %d of %d (%s): %w", i+1, len(runs), run.cfg, err)
			break
		}
		label := cfg.String()
		if opts.Rounds > 1 {
			label += fmt.Sprintf(" (round %d of %d)", run.round, opts.Rounds)
		}
		prog.start(label)
		ro := runner.RunOptions{Warmup: opts.Warmup, Steps: opts.Steps, BlockTiming: true, Calibrate: true, Timeout: opts.Timeout,
			Interference: true, Interferences: interference[interferenceKey(cfg)]}
		rec, err := sr.run(runCtx, cfg, ro)
		if err != nil {
			runErr = fmt.Errorf("run %d of %d (%s): %w", i+1, len(runs), cfg, err)
			break
		}
		if rec == nil {
			continue // another process keeps the records
		}
		rec.Round = run.round
		if dataset != "" {
			if err := profiler.Append(dataset, *rec); err != nil {
				runErr = err
				break
			}
		}
		recs, index = append(recs, *rec), append(index, run.index)
		times.keep(rec) // the speeds the ranks measured, for the workload's next runs
		if rec.Env.Interference != nil {
			interference[interferenceKey(cfg)] = rec.Env.Interference
		}
		prog.done()
	}
	prog.finish(runErr != nil)
	if errors.Is(runErr, errInterrupted) {
		kept := "records are not kept without --out"
		if dataset != "" {
			kept = "their records are in " + dataset
		}
		runErr = fmt.Errorf("interrupted after %d of %d runs; %s", len(recs), len(runs), kept)
	}
	if !sr.root() {
		return runErr
	}
	fresh := make([]resumed, len(recs))
	for i := range recs {
		fresh[i] = resumed{rec: recs[i], index: index[i]}
	}
	if err := printRuns(opts, fresh, prior, len(runs)); err != nil && runErr == nil {
		runErr = err
	}
	return runErr
}

// printRuns writes the exports and prints the runs table of a sweep: the
// runs it made (fresh, of planned) and those a resumed sweep held
// (prior). Rounds ran in shuffled orders; the table and the exports list
// the configurations in the sweep's order, each one's rounds in turn.
func printRuns(opts *ProfileOptions, fresh, prior []resumed, planned int) error {
	all := append(slices.Clone(prior), fresh...)
	if len(all) == 0 {
		return nil
	}
	slices.SortStableFunc(all, func(a, b resumed) int { return a.index - b.index })
	recs := make([]profiler.Record, len(all))
	for i, r := range all {
		recs[i] = r.rec
	}
	if err := writeExports(opts.Trace, opts.Pprof, recs); err != nil {
		return err
	}
	title := fmt.Sprintf("pipecast profile: %d runs", len(recs))
	if len(fresh) < planned {
		title = fmt.Sprintf("pipecast profile: %d of %d runs", len(recs), len(prior)+planned)
	}
	if rec := recs[0]; rec.Env.Host != "" {
		title += fmt.Sprintf(" on %s (%d cores, %s)", rec.Env.Host, rec.Env.Cores, rec.Env.CPUModel)
	}
	if len(prior) > 0 {
		title += fmt.Sprintf("; %d of them resumed from %s", len(prior), filepath.Join(opts.Out, "runs.jsonl"))
	}
	t := reports.RunsTable(recs, reports.RunsTableOptions{Title: title})
	return renderTable(opts.IO.Out, t, opts.Output, opts.Wide)
}

// interferenceKey identifies what CalibrateInterference measures for cfg:
// runs with the same key share one measurement.
func interferenceKey(cfg config.Config) string {
	return fmt.Sprintf("%s %#v b=%d t=%d %s", cfg.Model, cfg.ModelConfig, cfg.MicroBatchSize(), cfg.Threads, cfg.Backend)
}

// defaultProfileSizes are the default workload's sizes: 32×32 inputs at a
// quarter of torchvision's width, each model's classes; a language model
// at a quarter of its width too, on sequences of 128 tokens (its own
// 1024 or more would make a CPU's step of GPT-2's 50257-token vocabulary
// take tens of seconds, most of it the LM head and the loss), its own
// vocabulary and layers.
func defaultProfileSizes() models.SizeVariants {
	return models.SizeVariants{Images: []int{32}, Classes: []int{0}, Widths: []float64{0.25}, Seqs: []int{128}}
}
