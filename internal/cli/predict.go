package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/predictor"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// PredictOptions is what the predict command needs. The configuration
// lists mean what profile's do; a nil list (the flag not given) takes
// the values the data holds.
type PredictOptions struct {
	IO     *IOStreams
	Output Format
	Wide   bool     // --wide: every column, however narrow the terminal
	Data   []string // runs.jsonl files of measured runs

	// Sweep holds the configuration flags; a nil list, an empty balance
	// or backend and zero threads take what the data holds. Its Seed is
	// the data's: --seed is Seed below.
	config.Sweep

	Out   string // directory whose runs.jsonl the predicted records are appended to
	Trace string
	Pprof string
	SVG   string // the first prediction's timeline; with Validate, predicted against measured

	// StragglerFlag is --straggler DEVICE:FACTOR, parsed into the sweep.
	StragglerFlag string
	// ThreadsFlag is --threads, one count or one per device ("2,1"),
	// parsed into the sweep's Threads (the largest: the reference's, the
	// data it selects) and DeviceThreads.
	ThreadsFlag string
	// PartitionFlags are the --partition values, parsed into the sweep's
	// Partitions (the data's where none is given).
	PartitionFlags []string

	Validate bool
	Holdout  string // devices|microbatch|seq|random
	Seed     uint64 // the random holdout's folds
	// Train, with Validate, are runs.jsonl files to fit on instead of
	// holding Data's runs out: every measured run of Data is forecast
	// from them.
	Train []string
}

// The holdouts predictor.Validate accepts.
var predictHoldouts = predictor.Holdouts()

// NewCmdPredict returns the predict command. runF, when not nil, runs
// instead of the real work, so that tests can check what the flags
// parsed into.
func NewCmdPredict(streams *IOStreams, runF func(*PredictOptions) error) *cobra.Command {
	opts := &PredictOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "predict --data RUNS.jsonl [flags]",
		Short: "Forecast configurations that were never run from recorded runs",
		Long: `Fit cost models to measured runs (the runs.jsonl that pipecast profile --out
writes) and forecast the step time, bubble and memory of every combination
of the configuration flags by simulating the schedule with the fitted
costs. The table is pipecast profile's, marked as predicted, with each
forecast's 1-σ relative uncertainty (± step) derived from the fits'
residuals and the measured runs' run-to-run noise.

The configuration flags are profile's, and each defaults to what the data
holds: its model, input size, classes, width, backend and threads, and the
batches, device counts, micro-batch counts, schedules and options it
measured. Give new values to forecast new configurations, such as
--devices 2,4,8 from single-device runs. A model, input size, classes,
width, backend, thread count, transport or optimizer the data has no
measured runs of cannot be forecast: predict refuses it (exit status 2)
and lists what the data holds. A language model's sequence length is the
exception: its runs at every --seq fit one cost model, whose block times
grow with the tokens and with attention's m·S², so --seq forecasts
lengths never run (a footnote names those outside the measured ones). Runs of one process per device over MPI
(profile --transport mpi) are fitted apart from in-process runs, and
forecast runs of their own transport: --transport mpi picks them. So are
the runs of each optimizer (an AdamW update keeps two moments a
parameter, SGD's one momentum buffer), and a record that names none
trained with SGD; the hyper-parameter flags (--lr, …) set the forecasts' records,
the data's by default.
It refuses too, naming two of them, data whose runs of one workload were
measured with tensors on huge pages and without (the records' huge_pages):
their step times differ by 10–20 %, and one fit would forecast neither.

--out DIR appends the predicted records (kind "predicted") to
DIR/runs.jsonl, which pipecast report renders; --trace, --pprof and --svg
export them as report does (--svg: the first prediction's timeline, drawn
above the measured run's on one time axis when --data holds a measured run
of exactly that configuration).

--validate checks the predictor on the data instead: it holds runs out
(--holdout devices: each device count in turn; microbatch: each
micro-batch size in turn; seq: each sequence length of a language model
in turn; random: five seeded folds of configurations),
forecasts them from the rest and prints, per schedule and overall, the
mean and largest relative error, Kendall's τ between forecast and
measured step times, the measurements' own noise (within a run, and
between the runs of a configuration measured more than once, which count
as one point at the median of all their steps) and the errors of a
black-box regression baseline, then whether the faster of gpipe and coop
was forecast right and the error of the forecast peak memory. Beside the
errors stands their noise floor: for configurations measured in two
rounds or more (profile --rounds; runs outside rounds count as one round
each, in the order of the data), how far the median step of their odd
rounds misses that of their even rounds, the error of forecasting a
configuration by measuring it again. A second table lists each
configuration: measured median, the spread of its rounds' medians, the
forecast, its error and whether it lies outside that spread (csv prints
the first table only, json both). --svg then draws forecast against
measured step times.

--validate --train TRAIN.jsonl fits on every measured run of TRAIN
instead and forecasts every measured run of --data: a K = 1 sweep
forecasting a K = 2 sweep recorded apart, for example.`,
		Example: `  pipecast predict --data runs/runs.jsonl --devices 2,4
  pipecast predict --data k1.jsonl,k2.jsonl --schedule gpipe,coop,1f1b --microbatches 4,8 --out forecast
  pipecast predict --data runs/runs.jsonl --validate --holdout devices --svg accuracy.svg
  pipecast predict --data k2/runs.jsonl --validate --train k1/runs.jsonl`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.validate(cmd.Flags()); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			if opts.Validate {
				return predictValidateRun(ctx, opts)
			}
			return predictRun(ctx, opts)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&opts.Data, "data", nil, "runs.jsonl files of measured runs (repeat the flag or separate with commas)")
	f.StringSliceVar(&opts.Models, "model", nil, "models to forecast (default: the data's)")
	addSizeListFlags(f, &opts.SizeVariants, " (default: the data's)")
	f.IntSliceVar(&opts.Batches, "batch", nil, "mini-batch sizes B (default: the data's)")
	f.IntSliceVar(&opts.Devices, "devices", nil, "numbers of devices K (default: the data's)")
	f.IntSliceVar(&opts.Replicas, "replicas", nil, "numbers of data-parallel replicas R of the pipeline, forecast from runs of one replica and the calibration of the replicas' gradient sums (default: the data's)")
	f.IntSliceVar(&opts.Micro, "microbatches", nil, "numbers of micro-batches M per step (default: the data's)")
	f.StringSliceVar(&opts.Schedules, "schedule", nil, "schedules: "+strings.Join(schedule.Names(), ",")+" (default: the data's)")
	addScheduleOptionFlags(f, &opts.Variants, " (default: the data's, else the option's default)")
	addBalanceFlag(cmd, &opts.Balance, "", " (default: the data's)")
	f.Lookup("balance").DefValue = "" // help shows no empty default
	addPartitionFlag(f, &opts.PartitionFlags)
	f.Lookup("partition").Usage += " (default: the data's, where its runs were given theirs)"

	f.Float64SliceVar(&opts.Speeds, "speeds", nil, "each device's speed relative to a device of --threads threads (1,0.5: device 1 takes twice as long), in place of those of its threads' runs")
	f.StringVar(&opts.ThreadsFlag, "threads", "", "worker threads per device, or one count per device (2,1: devices that differ, each priced from runs at its threads; default: the data's)")
	f.StringVar(&opts.Backend, "backend", "", "compute backend (default: the data's)")
	f.StringVar(&opts.StragglerFlag, "straggler", "", "DEVICE:FACTOR: forecast runs whose device DEVICE computes FACTOR times as slowly (profile --straggler)")
	f.StringVar(&opts.Transport, "transport", "", "transport the forecasts are of, inprocess or mpi: data of that transport only (default: the data's)")
	addOptimizerFlags(f, &opts.Sweep)
	f.Lookup("optimizer").Usage = "optimizer the forecasts train with, " + strings.Join(models.OptimizerNames(), " or ") +
		": data of that optimizer only (default: the data's)"
	f.StringVar(&opts.Out, "out", "", "directory whose runs.jsonl the predicted records are appended to")
	f.StringVar(&opts.Trace, "trace", "", "write a Chrome trace of the predicted runs to this file")
	f.StringVar(&opts.Pprof, "pprof", "", "write a pprof profile of the predicted runs to this file")
	f.StringVar(&opts.SVG, "svg", "", "write an SVG timeline of the first prediction, beside the measured run of it if --data holds one (with --validate: forecast against measured step times)")
	f.BoolVar(&opts.Validate, "validate", false, "check the predictor on the data by holding runs out, instead of forecasting")
	f.StringVar(&opts.Holdout, "holdout", "devices", "with --validate, what is held out: "+strings.Join(predictHoldouts, "|"))
	f.Uint64Var(&opts.Seed, "seed", 1, "with --validate --holdout random, the seed of the folds")
	f.StringSliceVar(&opts.Train, "train", nil, "with --validate, runs.jsonl files to fit on, forecasting every run of --data instead of holding runs out")
	addTableFlags(cmd, &opts.Output, &opts.Wide)
	_ = cmd.RegisterFlagCompletionFunc("schedule", cobra.FixedCompletions(schedule.Names(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("holdout", cobra.FixedCompletions(predictHoldouts, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// predictConfigFlags are the flags that choose configurations to
// forecast, which --validate does not take.
var predictConfigFlags = slices.Concat([]string{"model", "batch", "devices", "replicas", "microbatches",
	"schedule", "balance", "partition", "threads", "backend", "transport", "straggler", "out", "trace", "pprof",
	"optimizer", "lr", "weight-decay", "betas", "eps"}, sizeFlagNames(), scheduleOptionFlagNames())

// validate checks the flags on their own. The configuration values are
// checked by profile's rules, with profile's defaults standing in for
// the lists left to the data; the backend is not, since forecasting for a
// backend this build lacks is legitimate.
func (o *PredictOptions) validate(flags *pflag.FlagSet) error {
	if len(o.Data) == 0 {
		return usageErrorf("--data: need at least one RUNS.jsonl file of measured runs")
	}
	if err := checkOutputFiles("trace", o.Trace, "pprof", o.Pprof, "svg", o.SVG); err != nil {
		return err
	}
	if err := checkDatasetDir("out", o.Out); err != nil {
		return err
	}
	if !slices.Contains(predictHoldouts, o.Holdout) {
		return usageErrorf("--holdout %q: unknown holdout (want %s)", o.Holdout, strings.Join(predictHoldouts, ", "))
	}
	if err := o.validateTrain(flags); err != nil {
		return err
	}
	if o.Validate {
		for _, name := range predictConfigFlags {
			if flags.Changed(name) {
				return usageErrorf("--%s does not apply to --validate, which checks the predictor on the data alone", name)
			}
		}
		return nil
	}
	for _, name := range []string{"holdout", "seed"} {
		if flags.Changed(name) {
			return usageErrorf("--%s applies to --validate only", name)
		}
	}
	for _, name := range []string{"model", "batch", "devices", "replicas", "microbatches", "schedule"} {
		if f := flags.Lookup(name); f != nil && f.Changed && f.Value.String() == "[]" {
			return usageErrorf("--%s: empty list", name)
		}
	}
	var err error
	if o.ThreadsFlag != "" {
		if o.Threads, o.DeviceThreads, err = config.ParseThreads(o.ThreadsFlag); err != nil {
			return &UsageError{Err: fmt.Errorf("--%w", err)}
		}
		if len(o.DeviceThreads) > 0 {
			o.Threads = slices.Max(o.DeviceThreads)
		}
	}
	if o.Threads < 0 {
		return usageErrorf("--threads %d: need at least 1 (or 0 for the data's)", o.Threads)
	}
	if err := checkSpeeds(o.Speeds); err != nil {
		return err
	}
	if o.Straggler, err = config.ParseStraggler(o.StragglerFlag); err != nil {
		return &UsageError{Err: fmt.Errorf("--%w", err)}
	}
	if o.Partitions, err = parsePartitions(o.PartitionFlags, &o.Balance, flags.Changed("balance")); err != nil {
		return err
	}
	check := o.sweep(predictDefaults)
	check.Backend = tensor.CPUBackend
	if check.Balance == config.BalanceGiven && check.Partitions == nil {
		check.Balance = predictDefaults.Balance // the data's partitions, read later
	}
	if err := check.Check(); err != nil {
		return sweepError(err, nil)
	}
	return nil
}

// predictDefaults stands in for the data when the flags are checked
// before the data is read.
var predictDefaults = config.Sweep{
	Models:       defaultProfileModels,
	Batches:      defaultProfileBatches,
	Devices:      defaultProfileDevices,
	Micro:        defaultProfileMicro,
	Schedules:    defaultProfileSchedules,
	Variants:     schedule.DefaultVariants(),
	Balance:      config.BalanceTime,
	Backend:      tensor.CPUBackend,
	Dataset:      "synthetic",
	Seed:         1,
	SizeVariants: defaultProfileSizes(),
}

// sweep returns the sweep of the flags given, taking every list, the
// balance, threads and backend not given from data.
func (o *PredictOptions) sweep(data config.Sweep) config.Sweep {
	s := data
	pick := func(given, fallback []string) []string {
		if given != nil {
			return given
		}
		return fallback
	}
	pickInt := func(given, fallback []int) []int {
		if given != nil {
			return given
		}
		return fallback
	}
	s.Models = pick(o.Models, data.Models)
	s.SizeVariants = o.SizeVariants.Or(data.SizeVariants)
	s.Batches = pickInt(o.Batches, data.Batches)
	s.Devices = pickInt(o.Devices, data.Devices)
	s.Replicas = pickInt(o.Replicas, data.Replicas)
	s.Micro = pickInt(o.Micro, data.Micro)
	s.Schedules = pick(o.Schedules, data.Schedules)
	s.Variants = o.Variants.Or(data.Variants)
	if o.Balance != "" {
		s.Balance = o.Balance
		if o.Partitions != nil || o.Balance != config.BalanceGiven {
			s.Partitions = o.Partitions // another balance drops the data's partitions
		}
	}
	if o.Threads != 0 {
		s.Threads = o.Threads
	}
	s.DeviceThreads, s.Speeds = o.DeviceThreads, o.Speeds
	if o.Backend != "" {
		s.Backend = o.Backend
	}
	if o.Transport != "" {
		s.Transport = o.Transport
	}
	if o.Optimizer != "" {
		s.Optimizer = o.Optimizer
	}
	if o.LR != 0 {
		s.LR = o.LR
	}
	if o.WeightDecay != nil {
		s.WeightDecay = o.WeightDecay
	}
	if o.Betas != nil {
		s.Betas = o.Betas
	}
	if o.Eps != nil {
		s.Eps = o.Eps
	}
	s.Straggler = o.Straggler
	return s
}

// readMeasured reads the data files, reporting bad lines on errOut, and
// returns their measured records; predicted records in the data are
// skipped, since forecasts must not be fitted to forecasts.
func readMeasured(errOut io.Writer, files []string) ([]profiler.Record, error) {
	var all []profiler.Record
	for _, path := range files {
		recs, err := readRecords(errOut, path)
		if err != nil {
			return nil, err // it names the file
		}
		for _, r := range recs {
			if r.Kind == profiler.KindMeasured {
				all = append(all, r)
			}
		}
	}
	if len(all) == 0 {
		return nil, &InputError{Err: fmt.Errorf("%w: %s holds no measured run", errNoRecords, strings.Join(files, ", "))}
	}
	return all, nil
}

func predictRun(ctx context.Context, opts *PredictOptions) error {
	fc, err := forecast(ctx, opts)
	if err != nil {
		return err
	}
	preds, recs := fc.preds, fc.recs
	if opts.Out != "" {
		if err := profiler.Append(filepath.Join(opts.Out, "runs.jsonl"), preds...); err != nil {
			return err
		}
	}
	if err := writeExports(opts.Trace, opts.Pprof, preds); err != nil {
		return err
	}
	if opts.SVG != "" {
		if err := writeAtomically(opts.SVG, func(w io.Writer) error { return writePredictionTimeline(w, preds[0], recs) }); err != nil {
			return err
		}
	}
	return renderTable(opts.IO.Out, predictTable(fc), opts.Output, opts.Wide)
}

// forecasts are predict's forecasts and what they rest on.
type forecasts struct {
	preds []profiler.Record
	// keys are the cost models forecast with, in order; recs the
	// measured records.
	keys []predictor.Key
	recs []profiler.Record
	// notes are footnotes per cost model: the forecasts that extend its
	// block costs beyond the measured micro-batch sizes, and what the
	// partitions balance.
	notes []string
}

// forecast reads the data, fits its cost models and predicts every
// configuration the flags select; notes on skipped combinations go to
// standard error.
func forecast(ctx context.Context, opts *PredictOptions) (*forecasts, error) {
	fits, recs, err := fitMeasured(opts.IO.ErrOut, opts.Data)
	if err != nil {
		return nil, err
	}
	fc := &forecasts{recs: recs}
	if fc.keys, err = opts.targets(recs); err != nil {
		return nil, err
	}
	var notes []string
	for _, key := range fc.keys {
		cfgs, skipped, err := opts.sweep(predictor.DataSweep(recs, key)).Expand()
		if err != nil {
			return nil, sweepError(err, skipped)
		}
		for _, n := range skipped {
			if !slices.Contains(notes, n) {
				notes = append(notes, n)
				fmt.Fprintln(opts.IO.ErrOut, "pipecast: "+n)
			}
		}
		for _, cfg := range cfgs {
			if cfg.Speeds == nil {
				if cfg.Speeds, err = predictor.DeviceSpeeds(fits, cfg); err != nil {
					return nil, &InputError{Err: fmt.Errorf("--threads %s: %w", opts.ThreadsFlag, err)}
				}
			}
			rec, err := predictor.Predict(ctx, fits[key], cfg)
			if err != nil {
				return nil, fmt.Errorf("predict %s: %w", cfg, err)
			}
			fc.preds = append(fc.preds, rec)
		}
		label := ""
		if len(fc.keys) > 1 {
			label = key.String()
		}
		if n := extrapolationNote(fits[key], cfgs, label, "± step"); n != "" {
			fc.notes = append(fc.notes, n)
		}
		if len(cfgs) > 0 {
			if n := balanceNote(fits[key], cfgs, label, fmt.Sprintf("(--balance %s)", cfgs[0].Balance)); n != "" {
				fc.notes = append(fc.notes, n)
			}
		}
	}
	return fc, nil
}

// fitMeasured reads the measured records of the data files (see
// readMeasured) and fits their cost models, one per key.
func fitMeasured(errOut io.Writer, files []string) (map[predictor.Key]*predictor.CostModel, []profiler.Record, error) {
	recs, err := readMeasured(errOut, files)
	if err != nil {
		return nil, nil, err
	}
	fits, err := predictor.Fit(recs)
	if errors.Is(err, predictor.ErrMixedHugePages) {
		return nil, nil, &InputError{Err: fmt.Errorf("--data: %w", err)}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("fit cost models: %w", err)
	}
	return fits, recs, nil
}
