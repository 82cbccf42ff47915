package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/predictor"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/reports"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// PlanOptions is what the plan command needs.
type PlanOptions struct {
	IO     *IOStreams
	Output Format
	Wide   bool

	Model   string
	Size    ModelSize
	Batch   int
	Devices int
	// JobDevices, when positive, is N, planned every way as R replicas
	// of K devices (predictor.PlanSpace.JobDevices), in place of Devices.
	JobDevices int
	Memory     string // --memory as given; MemoryBytes parsed (0: no budget)
	Data       []string
	Schedules  []string
	Micro      []int
	// Variants are the schedule options to try.
	Variants schedule.Variants
	Threads  int
	// ThreadsFlag is --threads as given: one count, or one per device
	// ("2,1"), parsed into Threads (the largest) and DeviceThreads.
	ThreadsFlag   string
	DeviceThreads []int
	// StragglerFlag is --straggler DEVICE:FACTOR, parsed into Straggler.
	StragglerFlag string
	Straggler     config.Straggler
	// Speeds are --speeds: each device's, given.
	Speeds []float64
	SVG    string
	// Train holds the optimizer flags (addOptimizerFlags): its
	// Optimizer, LR, WeightDecay, Betas and Eps, and nothing else.
	Train config.Sweep
	// ByDevice prints every configuration's devices, a row each, in
	// place of the plan's table.
	ByDevice bool
	// Partition is --partition as given: the split every configuration
	// of its stage count takes instead of the plan's; PartitionSizes
	// its blocks per stage, parsed.
	Partition string

	MemoryBytes    int64
	PartitionSizes []int

	// fits are --data's cost models by key, which price devices of
	// different threads (planCosts sets them).
	fits map[predictor.Key]*predictor.CostModel
}

// defaultPlanMicro are the micro-batch counts a plan tries by default.
var defaultPlanMicro = []int{1, 2, 4, 8, 16, 32}

// NewCmdPlan returns the plan command. runF, when not nil, runs instead
// of the real work, so that tests can check what the flags parsed into.
func NewCmdPlan(streams *IOStreams, runF func(*PlanOptions) error) *cobra.Command {
	opts := &PlanOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "plan [--model M] [--batch B] [--devices K] [flags]",
		Short: "Pick the schedule, micro-batches and checkpointing under a memory budget",
		Long: `Weigh every schedule for one model, batch and device count (by default
profile's: resnet50 at 32×32 and width 0.25, batch 16, 2 devices; a language
model at its own width unless --width is given, and sized by --seq, --vocab and
--layers), trained by the model's optimizer (--optimizer): gpipe in each
checkpoint mode (never, except-last, always), coop at look-ahead 1 and 2,
1f1b, interleaved at 2 and 4 chunks per device (--checkpoint, --prefetch
and --virtual-stages list others), zb-h1, zb-h2, and single on
one device, each at every micro-batch count of
--microbatches that the batch splits into. Each configuration's peak
memory per device, by category, comes from one step on the meta backend:
exact, and without training: each device's weights, gradients and
optimizer state (AdamW's two moments, SGD's momentum, allocated by the
step's update) as well as its activations, boundaries, transfer buffers and
kernel scratch. A second table shows the best configuration's devices, what
blocks each holds and its peak in each category; --by-device prints that
for every configuration in place of the plan (in every --output format).
With --data (the runs.jsonl of measured
runs of the same model and sizes, as pipecast predict takes) each is
also forecast as pipecast predict forecasts it: step time, bubble and
samples/s; one the data ran shows its measured step beside the forecast.

Each configuration's split (the partition column: the blocks of each stage)
balances compute: multiply-accumulates, or with --data the fitted block
times. Where memory limits, a plan looks for a better split: the first
and last stages often hold more than their layers (1F1B's first stage K
micro-batches in flight, a transformer's embedding and LM head), so an
uneven split can lower the largest device's peak. Without --memory and
without --data, which rank by peak, every configuration takes its
lightest split; with --memory, a configuration whose balanced split is
over budget takes the split of most even compute that fits (else its
lightest). Splits are weighed by a model of each device's memory,
calibrated to meta replays of the splits it picks, and each chosen split
is replayed exactly; interleaved and coop, whose devices hold more than
one stage's memory, keep their balanced split. --partition 3,4,4,3 gives
the split instead (K stages, or K·v for interleaved; the configurations
of another stage count are left out).

A configuration whose largest device needs more than --memory bytes (16GiB,
512MiB, 2e9) is over budget. The others are ranked by forecast step time
with --data, by peak memory without. The line after the table names the
best, and with it those forecast within the forecast's 1-σ uncertainty
of it, which the forecast cannot tell apart from it; a note names the
micro-batch sizes outside those the data measured, whose forecasts are
extrapolated. --svg FILE draws forecast step time against peak memory
with the budget line (without --data: each configuration's peak as a
bar).`,
		Example: `  pipecast plan --model resnet50 --image 224 --width 1 --batch 32 --devices 4
  pipecast plan --model llama2-7b --seq 4096 --batch 8 --devices 8 --memory 80GiB
  pipecast plan --model gpt2 --seq 128 --layers 4 --width 0.25 --devices 2 --by-device --output json
  pipecast plan --model mlp --batch 16 --devices 2 --memory 2MiB --output markdown
  pipecast plan --model resnet50 --image 32 --width 0.25 --batch 16 --devices 2 --data runs/runs.jsonl --svg plan.svg`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.languageModelSize(cmd.Flags().Changed("width"), cmd.Flags().Changed("seq"))
			if cmd.Flags().Changed("devices") && cmd.Flags().Changed("job-devices") {
				return usageErrorf("--devices and --job-devices: give one (--job-devices plans every K that divides it)")
			}
			if err := opts.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return planRun(ctx, opts)
		},
	}
	f := cmd.Flags()
	// profile's defaults, so that a plan is about what profile then runs.
	f.StringVar(&opts.Model, "model", defaultProfileModels[0], "the model to plan for (see pipecast models)")
	opts.Size = ModelSize{defaultProfileSizes()}
	addSizeFlags(f, &opts.Size)
	f.IntVar(&opts.Batch, "batch", defaultProfileBatches[0], "mini-batch size B")
	f.IntVar(&opts.Devices, "devices", defaultProfileDevices[0], "number of devices K")
	f.IntVar(&opts.JobDevices, "job-devices", 0, "plan N devices every way as R data-parallel replicas of a K-device pipeline (R·K = N), --batch samples a step split over the replicas; in place of --devices")
	f.StringVar(&opts.Memory, "memory", "", "memory budget per device in bytes (16GiB, 512MiB, 2e9)")
	f.StringSliceVar(&opts.Data, "data", nil, "runs.jsonl files of measured runs to forecast step times from")
	f.StringSliceVar(&opts.Schedules, "schedule", nil, "schedules to weigh: "+strings.Join(schedule.Names(), ",")+" (default: all)")
	f.IntSliceVar(&opts.Micro, "microbatches", defaultPlanMicro, "numbers of micro-batches M per step to try")
	opts.Variants = predictor.PlanVariants()
	addScheduleOptionFlags(f, &opts.Variants, "; a plan tries each")
	f.StringVar(&opts.ThreadsFlag, "threads", "", "worker threads per device (default: the data's, else the cores over K), or one count per device (2,1: devices that differ, planned by speed from --data's runs at each count)")
	f.Float64SliceVar(&opts.Speeds, "speeds", nil, "each device's speed relative to a device of --threads threads (1,0.5: device 1 takes twice as long), planned by speed with --data")
	f.StringVar(&opts.StragglerFlag, "straggler", "", "DEVICE:FACTOR: plan for a device DEVICE that computes FACTOR times as slowly (profile --straggler), by speed with --data")
	f.StringVar(&opts.SVG, "svg", "", "write an SVG chart of the plan to this file")
	addOptimizerFlags(f, &opts.Train)
	f.BoolVar(&opts.ByDevice, "by-device", false, "print each configuration's devices, a row each: blocks, parameters and peak bytes by category")
	f.StringVar(&opts.Partition, "partition", "", partitionUsage+"; configurations of other stage counts are left out")
	addTableFlags(cmd, &opts.Output, &opts.Wide)
	_ = cmd.RegisterFlagCompletionFunc("schedule", cobra.FixedCompletions(schedule.Names(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// languageModelSize plans a language model at its own width (1) and
// sequence length where --width and --seq were not given (the flags say
// whether they were): profile's defaults (width 0.25, 128 tokens) shrink
// a workload for a CPU to measure quickly, while a language model
// planned by name is planned as it trains, shrunk, if at all, by the
// size flags given.
func (o *PlanOptions) languageModelSize(width, seq bool) {
	if a, err := models.LookupArch(o.Model); err == nil && a.Tokens != nil {
		if !width {
			o.Size.Widths = []float64{1}
		}
		if !seq {
			o.Size.Seqs = nil
		}
	}
}

// validate checks the flags before any work: one line for the first
// that is wrong.
func (o *PlanOptions) validate() error {
	if _, err := models.LookupArch(o.Model); err != nil {
		return usageErrorf("--model %q: %v", o.Model, err)
	}
	if err := o.parseDevices(); err != nil {
		return err
	}
	switch {
	case o.Devices < 1:
		return usageErrorf("--devices %d: need at least 1 device", o.Devices)
	case o.JobDevices < 0:
		return usageErrorf("--job-devices %d: need at least 1 device (or 0 to plan --devices)", o.JobDevices)
	case o.Batch < 1:
		return usageErrorf("--batch %d: need at least 1 sample", o.Batch)
	case o.Threads < 0:
		return usageErrorf("--threads %d: need at least 1 (or 0 for the default)", o.Threads)
	case len(o.Micro) == 0:
		return usageErrorf("--microbatches: empty list")
	}
	if err := o.Size.validate(); err != nil {
		return err
	}
	if err := o.checkOptimizer(); err != nil {
		return err
	}
	for _, s := range o.Schedules {
		if !slices.Contains(schedule.Names(), s) {
			return usageErrorf("--schedule %q: unknown schedule (want %s)", s, strings.Join(schedule.Names(), ", "))
		}
	}
	if !slices.ContainsFunc(o.Micro, func(m int) bool { return m >= 1 && o.Batch%m == 0 }) {
		return usageErrorf("--batch %d: it splits into none of the micro-batch counts %v; give --microbatches that divide it",
			o.Batch, o.Micro)
	}
	var err error
	if o.MemoryBytes, err = parseBytes(o.Memory); err != nil {
		return usageErrorf("--memory %q: %v", o.Memory, err)
	}
	for _, path := range o.Data {
		if _, err := os.Stat(path); err != nil {
			return usageErrorf("--data %s: %v", path, errors.Unwrap(err))
		}
	}
	if err := checkOutputFiles("svg", o.SVG); err != nil {
		return err
	}
	if err := o.validateVariants(); err != nil {
		return err
	}
	if err := o.parsePartition(); err != nil {
		return err
	}
	base := o.base(0)
	base.Schedule.Name = schedule.GPipe
	base.Schedule.Micro = 1
	if o.PartitionSizes != nil && len(o.PartitionSizes) != o.Devices {
		// A partition for interleaved's K·v stages: parsePartition
		// checked it against the model.
		base.Bounds, base.Balance = nil, config.BalanceMACs
	}
	var inv *config.InvalidError
	if err := base.Validate(); errors.As(err, &inv) && !inv.Rule.Misfit() {
		return usageErrorf("--%s %s: %s", inv.Field, inv.Value, inv.Reason)
	}
	return nil
}

// parseDevices parses --threads and --straggler: devices that differ are
// those of one pipeline of --devices, not a plan of --job-devices.
func (o *PlanOptions) parseDevices() error {
	var err error
	if o.ThreadsFlag != "" {
		if o.Threads, o.DeviceThreads, err = config.ParseThreads(o.ThreadsFlag); err != nil {
			return &UsageError{Err: fmt.Errorf("--%w", err)}
		}
	}
	if o.Straggler, err = config.ParseStraggler(o.StragglerFlag); err != nil {
		return &UsageError{Err: fmt.Errorf("--%w", err)}
	}
	if err := checkSpeeds(o.Speeds); err != nil {
		return err
	}
	differ := len(o.DeviceThreads) > 0 || o.Straggler.Active() || len(o.Speeds) > 0
	switch {
	case differ && o.JobDevices > 0:
		return usageErrorf("--job-devices %d: plans devices alike; give --devices for a pipeline of devices that differ", o.JobDevices)
	case len(o.DeviceThreads) > 0 && len(o.DeviceThreads) != o.Devices:
		return usageErrorf("--threads %s: %d devices' threads, but --devices %d", o.ThreadsFlag, len(o.DeviceThreads), o.Devices)
	case len(o.Speeds) > 0 && len(o.Speeds) != o.Devices:
		return usageErrorf("--speeds: %d devices' speeds, but --devices %d", len(o.Speeds), o.Devices)
	case len(o.DeviceThreads) > 0 && len(o.Speeds) == 0 && len(o.Data) == 0:
		return usageErrorf("--threads %s: the devices' speeds come from --data's runs at each thread count; give --data", o.ThreadsFlag)
	case o.Straggler.Active() && o.Straggler.Device >= o.Devices:
		return usageErrorf("--straggler %s: want a device below --devices %d", o.StragglerFlag, o.Devices)
	}
	if len(o.DeviceThreads) > 0 {
		o.Threads = slices.Max(o.DeviceThreads)
	}
	return nil
}

// byteUnits are the suffixes parseBytes takes, lower case.
var byteUnits = map[string]float64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// parseBytes parses a size in bytes: a number (2e9, 1.5) with an
// optional unit, decimal (kB, MB, GB, TB) or binary (KiB, MiB, GiB, TiB,
// and K, M, G, T as their short forms), in any case. "" is 0: no budget.
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	end := len(s)
	for end > 0 && (s[end-1] < '0' || s[end-1] > '9') && s[end-1] != '.' {
		end--
	}
	unit, ok := byteUnits[strings.ToLower(strings.TrimSpace(s[end:]))]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q (want B, kB, MB, GB, KiB, MiB, GiB, TiB)", strings.TrimSpace(s[end:]))
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s[:end]), 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) || v*unit > math.MaxInt64/2 {
		return 0, errors.New("want a positive size such as 16GiB, 512MiB or 2e9")
	}
	return int64(math.Round(v * unit)), nil
}

// checkOptimizer checks --optimizer and its hyper-parameters as profile
// does (config.Sweep.Check).
func (o *PlanOptions) checkOptimizer() error {
	s := o.Train
	s.Models, s.Batches, s.Devices, s.Micro = []string{o.Model}, []int{o.Batch}, []int{o.Devices}, []int{1}
	s.Schedules, s.Backend, s.Balance = []string{schedule.GPipe}, tensor.CPUBackend, config.BalanceMACs
	return sweepError(s.Check(), nil)
}

// optimizer is the optimizer planned: --optimizer's, else the model's.
func (o *PlanOptions) optimizer() string {
	if o.Train.Optimizer != "" {
		return o.Train.Optimizer
	}
	return models.OptimizerOf(o.Model)
}

// base is the configuration every planned one shares, with threads
// (0: the flag's, else the default for K).
func (o *PlanOptions) base(threads int) config.Config {
	a, _ := models.LookupArch(o.Model) // validate checked it
	if threads == 0 {
		threads = o.Threads
	}
	if threads == 0 {
		threads = config.DefaultThreads(max(o.Devices, o.JobDevices))
	}
	h := o.Train.Hyper(o.Model)
	cfg := config.Config{
		Model: o.Model, ModelConfig: o.Size.config(a), Batch: o.Batch,
		Schedule: schedule.Options{Devices: o.Devices}, Balance: config.BalanceMACs, Backend: tensor.CPUBackend,
		Threads: threads, Dataset: "synthetic", Seed: 1, Optimizer: o.optimizer(), SGD: h.SGD, AdamW: h.AdamW,
		DeviceThreads: o.DeviceThreads, Straggler: o.Straggler, Speeds: o.Speeds,
	}
	if o.PartitionSizes != nil {
		cfg.Bounds, cfg.Balance = config.BoundsOf(o.PartitionSizes), config.BalanceGiven
	}
	return cfg
}

// planCosts fits the data's cost models and returns the one of the
// planned model, with the configuration it is planned on and the data's
// measured records; nil costs without data.
func planCosts(o *PlanOptions) (*predictor.CostModel, config.Config, []profiler.Record, error) {
	if len(o.Data) == 0 {
		return nil, o.base(0), nil, nil
	}
	fits, recs, err := fitMeasured(o.IO.ErrOut, o.Data)
	if err != nil {
		return nil, config.Config{}, nil, err
	}
	// The data's runs of the planned size: each field as given, or the
	// model's default (0 selects it).
	sel := &PredictOptions{Sweep: config.Sweep{Models: []string{o.Model}, Threads: o.Threads, Optimizer: o.optimizer()}}
	if a, err := models.LookupArch(o.Model); err == nil {
		sel.SizeVariants.Add(o.Size.config(a).Record())
	}
	keys, err := sel.targets(recs)
	if err != nil {
		return nil, config.Config{}, nil, err
	}
	if len(keys) > 1 {
		return nil, config.Config{}, nil, usageErrorf("--data holds runs of %s at several thread counts or backends; pick one with --threads", o.Model)
	}
	key := keys[0]
	cfg := o.base(key.Threads)
	data := predictor.DataSweep(recs, key)
	cfg.Backend, cfg.Transport = key.Backend, key.Transport
	if cfg.Balance != config.BalanceGiven {
		cfg.Balance = data.Balance
		if b := data.Balance; b == config.BalanceGiven || b == config.BalanceMemory {
			// The data's runs were split as given or for memory; a plan
			// balances the fitted block times and finds memory splits
			// itself.
			cfg.Balance = config.BalanceTime
		}
		if cfg.Balance == config.BalanceTime && (len(cfg.DeviceThreads) > 0 || cfg.Straggler.Active() || cfg.Speeds != nil) {
			// Devices that differ: the data's block times on each
			// device's speed, as profile --balance speed splits.
			cfg.Balance = config.BalanceSpeed
		}
	}
	o.fits = fits
	return fits[key], cfg, recs, nil
}

func planRun(ctx context.Context, opts *PlanOptions) error {
	costs, base, recs, err := planCosts(opts)
	if err != nil {
		return err
	}
	space := predictor.PlanSpace{Base: base, Micro: opts.Micro, Schedules: opts.Schedules, Variants: opts.Variants, JobDevices: opts.JobDevices}
	cfgs, skips, err := space.Configs()
	if err != nil {
		return sweepError(err, nil)
	}
	for _, s := range skips {
		fmt.Fprintf(opts.IO.ErrOut, "pipecast: skipped %d configuration(s): %s\n", s.Count, s.Reason)
	}
	if len(cfgs) == 0 {
		return &InputError{Err: errors.New("no configuration can run; give other --microbatches, --batch or --devices")}
	}
	if costs != nil && opts.Speeds == nil {
		for i := range cfgs {
			// A device's speed is its threads' block times at the
			// configuration's micro-batch size.
			if cfgs[i].Speeds, err = predictor.DeviceSpeeds(opts.fits, cfgs[i]); err != nil {
				return &InputError{Err: fmt.Errorf("--threads %s: %w", opts.ThreadsFlag, err)}
			}
		}
	}
	rows, failed, err := predictor.Plan(ctx, costs, cfgs, 0)
	if err != nil {
		return err
	}
	if len(failed) > 0 {
		fmt.Fprintf(opts.IO.ErrOut, "pipecast: skipped %d configuration(s) that cannot train, the first %s: %v\n",
			len(failed), failed[0].Config, failed[0].Err)
	}
	if len(rows) == 0 {
		return &InputError{Err: errors.New("no configuration can train; give other --microbatches, --batch or --devices")}
	}
	if err := predictor.SplitPlan(ctx, costs, rows, opts.MemoryBytes, 0); err != nil {
		return err // a given split (--partition) is kept
	}
	predictor.RankPlan(rows, opts.MemoryBytes)
	entries := planEntries(rows, costs, recs)
	topts := reports.PlanTableOptions{Title: planTitle(base, opts.JobDevices, len(rows), costs != nil), Timed: costs != nil, BudgetBytes: opts.MemoryBytes,
		Replicas: opts.JobDevices > 0}
	verdict := reports.PlanVerdict(entries, topts)
	if opts.SVG != "" {
		if err := writeAtomically(opts.SVG, func(w io.Writer) error { return reports.WritePlanSVG(w, entries, topts) }); err != nil {
			return err
		}
	}
	topts.Footnotes = []string{verdict}
	if n := extrapolationNote(costs, planConfigs(rows), "", "the step's ±"); n != "" {
		topts.Footnotes = append(topts.Footnotes, n)
		if opts.Output == FormatCSV || opts.Output == FormatJSON {
			fmt.Fprintln(opts.IO.ErrOut, n)
		}
	}
	why := "(no --data times the blocks)"
	switch {
	case base.Balance == config.BalanceSpeed:
		why = "(the devices differ: profile --balance speed)"
	case costs != nil:
		why = "(as the data's runs did)"
	}
	if slices.ContainsFunc(rows, func(r predictor.PlanRow) bool { return r.MemorySplit }) {
		why += ", but for the splits marked * in the partition column, chosen for memory"
	}
	if n := balanceNote(costs, planConfigs(rows), "", why); n != "" {
		topts.Footnotes = append(topts.Footnotes, n)
	}
	if opts.Output == FormatCSV || opts.Output == FormatJSON {
		fmt.Fprintln(opts.IO.ErrOut, verdict) // machine formats carry no footnotes
	}
	model, err := models.Describe(base.Model, base.ModelConfig)
	if err != nil {
		return err
	}
	if opts.ByDevice {
		t := planDeviceTable(rows, model, topts.Title+", each device", true)
		t.Footnotes = append(t.Footnotes, topts.Footnotes...)
		return renderTable(opts.IO.Out, t, opts.Output, opts.Wide)
	}
	if err := renderTable(opts.IO.Out, reports.PlanTable(entries, topts), opts.Output, opts.Wide); err != nil {
		return err
	}
	if opts.Output == FormatCSV || opts.Output == FormatJSON {
		return nil // one table: --by-device gives the devices
	}
	// The best configuration's devices: where its memory goes.
	fmt.Fprintln(opts.IO.Out)
	best := planDeviceTable(rows[:1], model, planDevicesTitle(&rows[0], costs != nil), false)
	return renderTable(opts.IO.Out, best, opts.Output, opts.Wide)
}

// planConfigs are the rows' configurations.
func planConfigs(rows []predictor.PlanRow) []config.Config {
	cfgs := make([]config.Config, len(rows))
	for i := range rows {
		cfgs[i] = rows[i].Config
	}
	return cfgs
}

// planTitle names what was planned.
func planTitle(base config.Config, jobDevices, n int, timed bool) string {
	what := "peak memory"
	if timed {
		what = "peak memory and forecast step time"
	}
	label := reports.ModelLabel(profiler.RunConfig{Model: base.Model, SizeRecord: base.ModelConfig.Record()})
	if jobDevices > 0 {
		return fmt.Sprintf("pipecast plan: %s, batch %d a step on %d devices of %d thread(s) as R replicas of K: %d configurations by %s",
			label, base.Batch, jobDevices, base.Threads, n, what)
	}
	threads := fmt.Sprint(base.Threads)
	if len(base.DeviceThreads) > 0 {
		threads = profiler.FormatThreads(base.DeviceThreads)
	}
	slow := ""
	if st := base.Straggler; st.Active() {
		slow = fmt.Sprintf(", device %d %g× as slow", st.Device, st.Factor)
	}
	return fmt.Sprintf("pipecast plan: %s, batch %d on %d device(s) of %s thread(s)%s: %d configurations by %s",
		label, base.Batch, base.Schedule.Devices, threads, slow, n, what)
}

// planEntries are the rows as the plan table shows them, forecast with
// costs (nil: none), with the measured step of those the measured
// records recs ran.
func planEntries(rows []predictor.PlanRow, costs *predictor.CostModel, recs []profiler.Record) []reports.PlanEntry {
	out := make([]reports.PlanEntry, len(rows))
	for i := range rows {
		r := &rows[i]
		s := r.Config.Schedule
		peak, dev := r.PeakBytes()
		e := reports.PlanEntry{Schedule: s.Name, Micro: s.Micro, Replicas: max(s.Replicas, 1), Devices: s.Devices, PeakBytes: peak, PeakDevice: dev,
			TopCategory: r.TopCategory().String(), Rank: r.Rank, OverBudget: r.OverBudget}
		e.Options = s.OptionLabel()
		e.Partition, e.MemorySplit = config.FormatPartition(config.SizesOf(r.Bounds)), r.MemorySplit
		if p := r.Predicted; p != nil {
			e.Timed, e.StepNanos, e.StepRelErr = true, p.Summary.StepNanosMedian, p.Summary.PredictedRelErr
			e.Extrapolated = costs != nil && len(costs.Extrapolated([]int{r.Config.MicroBatchSize()})) > 0
			var runs []profiler.Record
			for j := range recs {
				if sameConfiguration(p, &recs[j]) {
					runs = append(runs, recs[j])
				}
			}
			e.MeasuredNanos, e.MeasuredRuns = predictor.MeasuredStepNanos(runs), len(runs)
			e.BubbleFraction, e.SamplesPerSecond = p.Summary.BubbleFraction, p.Summary.SamplesPerSecond
		}
		out[i] = e
	}
	return out
}
