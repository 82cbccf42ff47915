package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// Sweep is lists of values whose every combination is one configuration:
// models × sizes (every combination of SizeVariants' lists) × batches ×
// devices × micro-batches
// × schedules, each schedule times the values of its options that
// Variants lists (gpipe's checkpoint modes, coop's look-ahead depths,
// interleaved's virtual stages). The other fields are the same in every
// configuration.
type Sweep struct {
	Models []string
	// SizeVariants are the models' sizes to try, each field's list
	// (empty: the model's default).
	models.SizeVariants
	Batches []int
	Devices []int
	// Replicas are the data-parallel replica counts R to try (empty:
	// one replica).
	Replicas  []int
	Micro     []int
	Schedules []string
	// Variants are the values of the schedules' options to try; an empty
	// list means the option's default.
	Variants schedule.Variants

	Balance Balance
	// Partitions are splits given whole, as block counts per stage, for
	// BalanceGiven: each configuration runs with every one of them that
	// has its stage count (K, or K·v for interleaved), and a
	// configuration that none has fails the sweep.
	Partitions [][]int
	Threads    int // per device; 0: DefaultThreads of the sweep's largest K
	// DeviceThreads, when set, are each pipeline device's threads
	// (Config.DeviceThreads): the sweep's configurations of another K
	// are skipped with a note.
	DeviceThreads []int
	// Speeds, when set, are each pipeline device's speed
	// (Config.Speeds), for forecasts of devices whose speeds are known;
	// the sweep's configurations of another K are skipped with a note.
	Speeds    []float64
	Backend   string
	Transport string // "": in-process
	// Optimizer names the optimizer of every configuration ("":
	// each model's own, models.OptimizerOf).
	Optimizer string
	// LR, WeightDecay, Betas and Eps set the optimizer's hyper-parameters
	// of those names (its record's) where it has them, and are ignored
	// where it has not (SGD has no betas); LR 0 and nil leave the
	// optimizer's own (DefaultHyper's). SGD's momentum is DefaultSGD's.
	LR          float64
	WeightDecay *float64
	Betas       []float64
	Eps         *float64
	// Straggler and Fail inject a slow device and a failure into every
	// configuration (see Config).
	Straggler Straggler
	Fail      *FailAt
	Dataset   string
	Seed      uint64
}

// FieldError reports a sweep value that no configuration can take, by the
// field's name in run records and on the command line.
type FieldError struct {
	Field string
	// Value is the value at fault as the message shows it, or "" when the
	// reason is about the field as a whole.
	Value  string
	Reason string
	Err    error
}

func (e *FieldError) Error() string {
	if e.Value == "" {
		return e.Field + ": " + e.Reason
	}
	return e.Field + " " + e.Value + ": " + e.Reason
}

func (e *FieldError) Unwrap() error { return e.Err }

// ErrNothingRuns is returned by Expand when every combination breaks a
// rule a sweep skips; the notes say which and why.
var ErrNothingRuns = errors.New("no combination can run")

// Check reports a value that no configuration can take, looking at each
// list on its own: empty lists, unknown models, schedules, checkpoint
// modes and balances, counts below their least, widths that are not
// positive, a negative thread count and a backend this build lacks.
// How values combine is Expand's to check.
func (s Sweep) Check() error {
	for _, list := range []struct {
		field string
		n     int
	}{{"model", len(s.Models)},
		{"batch", len(s.Batches)}, {"devices", len(s.Devices)}, {"microbatches", len(s.Micro)},
		{"schedule", len(s.Schedules)}} {
		if list.n == 0 {
			return &FieldError{Field: list.field, Reason: "empty list"}
		}
	}
	for _, m := range s.Models {
		if _, err := models.LookupArch(m); err != nil {
			return &FieldError{Field: "model", Reason: err.Error(), Err: err}
		}
	}
	for _, n := range s.Schedules {
		if !slices.Contains(schedule.Names(), n) {
			return &FieldError{Field: "schedule", Value: fmt.Sprintf("%q", n),
				Reason: "unknown schedule (want " + strings.Join(schedule.Names(), ", ") + ")"}
		}
	}
	var oe *schedule.OptionError
	if err := s.Variants.Check(); errors.As(err, &oe) {
		return &FieldError{Field: oe.Field, Value: fmt.Sprint(oe.Value), Reason: oe.Why, Err: err}
	}
	if err := s.checkCounts(); err != nil {
		return err
	}
	if _, err := ParseBalance(string(s.Balance)); err != nil {
		return &FieldError{Field: "balance", Value: fmt.Sprintf("%q", s.Balance), Reason: "unknown balance (want " + balanceWant() + ")"}
	}
	if err := s.checkPartitions(); err != nil {
		return err
	}
	if s.Optimizer != "" && !slices.Contains(models.OptimizerNames(), s.Optimizer) {
		return &FieldError{Field: "optimizer", Value: fmt.Sprintf("%q", s.Optimizer),
			Reason: "unknown optimizer (want " + strings.Join(models.OptimizerNames(), ", ") + ")"}
	}
	if err := s.checkHyper(); err != nil {
		return err
	}
	if s.Threads < 0 {
		return &FieldError{Field: "threads", Value: fmt.Sprint(s.Threads), Reason: "need at least 1 (or 0 for the default)"}
	}
	if t := s.DeviceThreads; len(t) > 0 && slices.Min(t) < 1 {
		return &FieldError{Field: "threads", Value: profiler.FormatThreads(t), Reason: "need at least 1 thread a device"}
	}
	if t := s.Transport; t != "" && t != profiler.TransportInProcess && t != profiler.TransportMPI {
		return &FieldError{Field: "transport", Value: fmt.Sprintf("%q", t),
			Reason: "unknown transport (want " + profiler.TransportInProcess + " or " + profiler.TransportMPI + ")"}
	}
	var backends []string
	for _, b := range tensor.Backends() {
		backends = append(backends, b.Name)
	}
	if !slices.Contains(backends, s.Backend) {
		reason := "not compiled in (have " + strings.Join(backends, ", ") + ")"
		if hint, ok := backendBuilds[s.Backend]; ok {
			reason += "; " + hint
		}
		return &FieldError{Field: "backend", Value: fmt.Sprintf("%q", s.Backend), Reason: reason}
	}
	return nil
}

// checkPartitions checks the partitions given on their own: each stage
// of a block at least, and given where (and only where) the balance is
// BalanceGiven.
func (s Sweep) checkPartitions() error {
	switch {
	case s.Balance == BalanceGiven && len(s.Partitions) == 0:
		return &FieldError{Field: "balance", Value: string(s.Balance), Reason: "no partition given: give the blocks of each stage"}
	case s.Balance != BalanceGiven && len(s.Partitions) > 0:
		return &FieldError{Field: "balance", Value: string(s.Balance),
			Reason: "a partition is given (" + FormatPartition(s.Partitions[0]) + "), so nothing is balanced"}
	}
	for _, p := range s.Partitions {
		if err := checkSizes(p); err != nil {
			return &FieldError{Field: "partition", Value: FormatPartition(p), Reason: err.Error(), Err: err}
		}
	}
	return nil
}

// checkCounts checks that every count is at least its least and every
// width a positive number.
func (s Sweep) checkCounts() error {
	for _, p := range []struct {
		field string
		vals  []int
		least int
	}{{"batch", s.Batches, 1}, {"devices", s.Devices, 1}, {"replicas", s.Replicas, 1},
		{"microbatches", s.Micro, 1}} {
		for _, v := range p.vals {
			if v < p.least {
				return &FieldError{Field: p.field, Value: fmt.Sprint(v), Reason: fmt.Sprintf("need at least %d", p.least)}
			}
		}
	}
	var se *models.SizeError
	if err := s.SizeVariants.Check(); errors.As(err, &se) {
		return &FieldError{Field: se.Field, Value: se.Value, Reason: se.Why, Err: err}
	}
	return nil
}

// checkHyper checks the optimizer's hyper-parameters as torch.optim
// does: none negative, the betas in [0, 1).
func (s Sweep) checkHyper() error {
	if s.LR < 0 || math.IsNaN(s.LR) || math.IsInf(s.LR, 0) {
		return &FieldError{Field: "lr", Value: fmt.Sprint(s.LR), Reason: "must be a positive number (or 0 for the default)"}
	}
	for _, f := range []struct {
		field string
		v     *float64
	}{{"weight-decay", s.WeightDecay}, {"eps", s.Eps}} {
		if f.v != nil && !(*f.v >= 0 && !math.IsInf(*f.v, 0)) {
			return &FieldError{Field: f.field, Value: fmt.Sprint(*f.v), Reason: "must be a number of at least 0"}
		}
	}
	if s.Betas == nil {
		return nil
	}
	if len(s.Betas) != 2 {
		return &FieldError{Field: "betas", Value: fmt.Sprint(s.Betas), Reason: "want two values, β1 and β2"}
	}
	for _, b := range s.Betas {
		if !(b >= 0 && b < 1) {
			return &FieldError{Field: "betas", Value: fmt.Sprint(s.Betas), Reason: "each must lie in [0, 1)"}
		}
	}
	return nil
}

// Hyper returns the optimizers' hyper-parameters of model's
// configurations: DefaultHyper's, with the sweep's values set on the
// chosen optimizer (the model's own where Optimizer is "") through its
// record form, which names every optimizer's hyper-parameters.
func (s Sweep) Hyper(model string) models.Hyper {
	base := DefaultHyper()
	name := s.Optimizer
	if name == "" {
		name = models.OptimizerOf(model)
	}
	r := base.Record(name)
	if s.LR != 0 {
		r.LR = s.LR
	}
	if s.WeightDecay != nil {
		r.WeightDecay = *s.WeightDecay
	}
	if s.Betas != nil {
		r.Betas = s.Betas
	}
	if s.Eps != nil {
		r.Eps = *s.Eps
	}
	_, h := r.Hyper(base)
	return h
}

// Expand returns the configurations of every runnable combination, in
// list order, and notes on the combinations it skipped because they
// break a misfit rule (Rule.Misfit). A combination that breaks another
// rule fails the whole sweep with a *FieldError naming the value, before
// anything runs; so does a sweep of which nothing is left
// (ErrNothingRuns). Expand builds nothing but the models' symbolic
// descriptions. Threads, when zero, become DefaultThreads of the
// largest K left; every configuration comes normalised (WithDefaults).
func (s Sweep) Expand() ([]Config, []string, error) {
	var cfgs []Config
	var notes []string
	seen := map[string]bool{}
	for _, name := range s.Models {
		a, err := models.LookupArch(name)
		if err != nil {
			return nil, nil, &FieldError{Field: "model", Reason: err.Error(), Err: err}
		}
		for _, mc := range s.SizeVariants.Of(a) {
			for _, cfg := range s.combinations(name, mc) {
				var inv *InvalidError
				switch err := cfg.Validate(); {
				case errors.As(err, &inv) && inv.Rule.Misfit():
					if n := "skipping " + inv.Reason; !slices.Contains(notes, n) {
						notes = append(notes, n)
					}
					continue
				case errors.As(err, &inv) && inv.Rule == RulePartition && cfg.Bounds == nil:
					// No partition given has the configuration's stages.
					return nil, nil, &FieldError{Field: "partition", Value: formatPartitions(s.Partitions), Err: err,
						Reason: fmt.Sprintf("%s, but %s cuts %s into %d", stageCounts(s.Partitions), stagesOf(cfg), cfg.Model, cfg.Stages())}
				case errors.As(err, &inv) && (inv.Rule == RuleImage || inv.Rule == RuleStages || inv.Rule == RuleThreads ||
					inv.Rule == RuleInjection || inv.Rule == RulePartition):
					// The value is at fault whatever it combines with.
					return nil, nil, &FieldError{Field: inv.Field, Value: inv.Value, Reason: inv.Reason, Err: err}
				case err != nil:
					return nil, nil, err
				}
				// Go syntax, not Config.String, which names only some
				// fields (two splits of one configuration read alike).
				key := fmt.Sprintf("%#v", cfg)
				if seen[key] {
					continue // two sizes that one model takes alike
				}
				seen[key] = true
				cfgs = append(cfgs, cfg)
			}
		}
	}
	if len(cfgs) == 0 {
		return nil, notes, ErrNothingRuns
	}
	threads := s.Threads
	if threads == 0 {
		maxN := 1
		for _, c := range cfgs {
			maxN = max(maxN, c.JobDevices())
		}
		threads = DefaultThreads(maxN)
	}
	for i := range cfgs {
		cfgs[i].Threads = threads
		cfgs[i] = cfgs[i].WithDefaults()
	}
	return cfgs, notes, nil
}

// combinations are the pipeline configurations of one sized model.
func (s Sweep) combinations(model string, mc models.Config) []Config {
	var out []Config
	h := s.Hyper(model)
	replicas := s.Replicas
	if len(replicas) == 0 {
		replicas = []int{1}
	}
	for _, b := range s.Batches {
		for _, r := range replicas {
			for _, k := range s.Devices {
				for _, m := range s.Micro {
					for _, name := range s.Schedules {
						for _, opts := range s.Variants.Of(name) {
							opts.Devices, opts.Micro, opts.Replicas = k, m, r
							cfg := Config{Optimizer: s.Optimizer, SGD: h.SGD, AdamW: h.AdamW, Straggler: s.Straggler, Fail: s.Fail,
								Model: model, ModelConfig: mc, Batch: b, Balance: s.Balance, Backend: s.Backend, Transport: s.Transport,
								Dataset: s.Dataset, Seed: s.Seed, Threads: s.Threads, DeviceThreads: s.DeviceThreads, Speeds: s.Speeds, Schedule: opts,
							}
							out = append(out, s.partitioned(cfg)...)
						}
					}
				}
			}
		}
	}
	return out
}

// partitioned returns cfg with each partition given of its stage count
// as its Bounds; cfg itself where none is given, or none has its stages
// (which Validate then refuses, unless the combination is a misfit).
func (s Sweep) partitioned(cfg Config) []Config {
	var out []Config
	for _, p := range s.Partitions {
		if len(p) == cfg.Stages() {
			c := cfg
			c.Bounds = BoundsOf(p)
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return []Config{cfg}
	}
	return out
}

// formatPartitions writes partitions as a sweep's message names them:
// "3,4,4,3" or "3,4,4,3 and 7,7".
func formatPartitions(ps [][]int) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = FormatPartition(p)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// stageCounts says how many stages partitions have: "4 stages", "4 and
// 2 stages".
func stageCounts(ps [][]int) string {
	var counts []string
	for _, p := range ps {
		if n := fmt.Sprint(len(p)); !slices.Contains(counts, n) {
			counts = append(counts, n)
		}
	}
	if len(counts) == 1 {
		if counts[0] == "1" {
			return "1 stage"
		}
		return counts[0] + " stages"
	}
	return strings.Join(counts[:len(counts)-1], ", ") + " and " + counts[len(counts)-1] + " stages"
}

// backendBuilds says how to build the backends that a default build
// leaves out.
var backendBuilds = map[string]string{
	"cuda":     "build pipecast with -tags cuda on a machine with an NVIDIA GPU (see docs/gpu.md)",
	"cuda-emu": "build pipecast with -tags cudaemu (the CUDA kernels emulated on the CPU, for tests)",
	"openblas": "build pipecast with -tags openblas (needs libopenblas-dev)",
}
