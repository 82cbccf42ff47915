package predictor

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// PlanVariants returns the schedule options a plan tries by default:
// gpipe's checkpoint modes from the least recompute to the least memory;
// coop's shallowest look-ahead (least memory) and the next, which fills
// more of the bubble; interleaved's chunk counts per device Megatron-LM's
// usual two, and four, each shrinking the bubble further for more
// transfers. An option not listed is tried at its default.
func PlanVariants() schedule.Variants {
	return schedule.Variants{
		Checkpoints: []schedule.Checkpoint{schedule.Never, schedule.ExceptLast, schedule.Always},
		Prefetch:    []int{1, 2},
		Virtual:     []int{2, 4},
	}
}

// PlanSpace is the configurations a plan weighs: Base (model, sizes, batch,
// K in Schedule.Devices, balance, threads, backend) under every schedule
// of Schedules with each of its options and each micro-batch count of
// Micro.
type PlanSpace struct {
	Base      config.Config
	Micro     []int
	Schedules []string // nil: every schedule of the runner
	// Variants are the schedule options to try; each empty list takes
	// PlanVariants'.
	Variants schedule.Variants
	// JobDevices, when positive, is N, the devices of the job: the plan
	// tries every split of them into R data-parallel replicas of a
	// K-device pipeline (R·K = N), each replica on Base.Batch/R samples,
	// so that every configuration trains Base.Batch samples a step and
	// their steps compare. Base's K is then ignored.
	JobDevices int
}

// shape is one split of a job's devices: R replicas of K devices, each
// replica on batch samples; unsplit when the batch does not split into R
// replicas equally.
type shape struct {
	replicas, devices, batch int
	unsplit                  bool
}

// shapes returns the splits of the job's devices a plan tries.
func (s PlanSpace) shapes() []shape {
	if s.JobDevices <= 0 {
		return []shape{{replicas: 1, devices: s.Base.Schedule.Devices, batch: s.Base.Batch}}
	}
	var out []shape
	for r := 1; r <= s.JobDevices; r++ {
		if s.JobDevices%r == 0 {
			out = append(out, shape{replicas: r, devices: s.JobDevices / r, batch: s.Base.Batch / r, unsplit: s.Base.Batch%r != 0})
		}
	}
	return out
}

// PlanSkip counts the configurations of one kind that a plan left out,
// with the reason shared by all of them.
type PlanSkip struct {
	Reason string
	Count  int
}

// Configs returns the configurations of s that can run, in schedule,
// option and micro-batch order, and what it left out by kind: micro-batch
// counts the batch does not split into, coop where the batch does not
// split into K shards, interleaved where K·v stages are more than the
// model has blocks, and, where Base gives a split (Bounds), those of
// another stage count. single is left out without a note where K > 1.
// Any other rule that a configuration breaks is returned as an error.
func (s PlanSpace) Configs() ([]config.Config, []PlanSkip, error) {
	names := s.Schedules
	if names == nil {
		names = schedule.Names()
	}
	var out []config.Config
	skips := map[string]*PlanSkip{} // by reason
	var order []string
	unsplit := 0
	for _, sh := range s.shapes() {
		k := sh.devices
		for _, name := range names {
			if max := (schedule.Options{Name: name}).MaxDevices(); max > 0 && k > max {
				continue
			}
			for _, opts := range s.planOptions(name) {
				for _, m := range s.Micro {
					if sh.unsplit {
						unsplit++
						continue
					}
					cfg := s.Base
					cfg.Schedule = opts
					cfg.Schedule.Devices, cfg.Schedule.Micro, cfg.Schedule.Replicas = k, m, sh.replicas
					cfg.Batch = sh.batch
					var inv *config.InvalidError
					switch err := cfg.Validate(); {
					case errors.As(err, &inv) && (inv.Rule.Misfit() || inv.Rule == config.RuleStages && (cfg.Stages() > k || s.JobDevices > 0) ||
						inv.Rule == config.RulePartition && len(cfg.Bounds) != cfg.Stages()+1):
						// A job's split into a pipeline longer than the
						// model's blocks is a misfit like interleaved's.
						why := planSkipReason(inv.Rule, cfg)
						if skips[why] == nil {
							skips[why] = &PlanSkip{Reason: why}
							order = append(order, why)
						}
						skips[why].Count++
						continue
					case err != nil:
						return nil, nil, err
					}
					out = append(out, cfg.WithDefaults())
				}
			}
		}
	}
	var notes []PlanSkip
	if unsplit > 0 {
		notes = append(notes, PlanSkip{Reason: fmt.Sprintf("replica counts R that batch %d does not split into equally", s.Base.Batch), Count: unsplit})
	}
	for _, r := range order {
		notes = append(notes, *skips[r])
	}
	return out, notes, nil
}

// planOptions are the option sets of a schedule that a plan tries.
func (s PlanSpace) planOptions(name string) []schedule.Options {
	return s.Variants.Or(PlanVariants()).Of(name)
}

// planSkipReason says why configurations breaking rule r are left out.
func planSkipReason(r config.Rule, cfg config.Config) string {
	switch r {
	case config.RuleMicro:
		return fmt.Sprintf("micro-batch counts that batch %d does not split into equally", cfg.Batch)
	case config.RuleShards:
		return fmt.Sprintf("coop, whose batch %d does not split into %d equal shards", cfg.Batch, cfg.Schedule.Devices)
	case config.RuleStages:
		if cfg.Stages() == cfg.Schedule.Devices {
			return fmt.Sprintf("pipelines of more devices than %s has blocks", cfg.Model)
		}
		return fmt.Sprintf("schedules of several stages a device that cut %s into more stages than its blocks", cfg.Model)
	case config.RulePartition:
		return fmt.Sprintf("configurations of other stage counts than the %d of the partition given", len(cfg.Bounds)-1)
	}
	return "single at K > 1"
}

// PlanRow is one configuration of a plan: each device's peak memory by
// category, what each device holds of the model and, with a cost model,
// the forecast run.
type PlanRow struct {
	Config config.Config
	Memory []tensor.MemStats
	// Holdings[d] is what device d holds: its stages, their blocks and
	// their parameters, at the partition its memory was replayed at,
	// Bounds (stage s holds blocks [Bounds[s], Bounds[s+1])).
	Holdings []Holding
	Bounds   []int
	// MemorySplit says that Bounds are not the split Config's balance
	// gives but one SplitPlan chose for memory.
	MemorySplit bool
	// Predicted is the forecast of Config (nil without a cost model).
	Predicted *profiler.Record
	// Rank is the row's place among those within the budget (1: the
	// best), 0 when over it; OverBudget says so.
	Rank       int
	OverBudget bool
}

// PeakBytes returns the largest device's peak bytes and that device.
func (r *PlanRow) PeakBytes() (bytes int64, device int) {
	for d, m := range r.Memory {
		if m.PeakTotalBytes > bytes {
			bytes, device = m.PeakTotalBytes, d
		}
	}
	return bytes, device
}

// TopCategory returns the category holding the most of the largest
// device's memory at its peak.
func (r *PlanRow) TopCategory() tensor.Category {
	_, d := r.PeakBytes()
	top := tensor.Category(0)
	if d >= len(r.Memory) {
		return top
	}
	for c := range tensor.NumCategories {
		if r.Memory[d].PeakBytes[c] > r.Memory[d].PeakBytes[top] {
			top = tensor.Category(c)
		}
	}
	return top
}

// PlanFailure is a configuration whose meta step refused to run (a batch
// norm given one value per channel, say): a plan leaves it out.
type PlanFailure struct {
	Config config.Config
	Err    error
}

// Plan computes every configuration's memory on the meta backend and,
// when costs is not nil, forecasts it as Predict does (whose record then
// gives the memory too, replayed in the forecast's op order). The
// configurations run on up to workers goroutines (planWorkers when 0).
// A configuration whose meta step fails with a runner fault is returned
// among the failures; any other error stops the plan.
func Plan(ctx context.Context, costs *CostModel, cfgs []config.Config, workers int) ([]PlanRow, []PlanFailure, error) {
	if workers <= 0 {
		workers = planWorkers()
	}
	rows := make([]PlanRow, len(cfgs))
	errs := make([]error, len(cfgs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, max(1, len(cfgs))) {
		wg.Go(func() {
			for i := range next {
				rows[i], errs[i] = planRow(ctx, costs, cfgs[i])
			}
		})
	}
	for i := range cfgs {
		next <- i
	}
	close(next)
	wg.Wait()
	var kept []PlanRow
	var failed []PlanFailure
	for i, err := range errs {
		var f *runner.Fault
		switch {
		case errors.As(err, &f):
			failed = append(failed, PlanFailure{Config: cfgs[i], Err: err})
		case err != nil:
			return nil, nil, fmt.Errorf("plan %s: %w", cfgs[i], err)
		default:
			kept = append(kept, rows[i])
		}
	}
	return kept, failed, nil
}

// planWorkers is how many configurations a plan replays at once by
// default: four per CPU. A meta replay in a plan's order keeps its
// devices' goroutines waiting on each other, op by op, and used 44 % of
// one CPU on llama2-7b (2 CPUs, 2026-12-02), so that one worker per CPU
// left them idle; at four per CPU the plan of llama2-7b at K = 8 took
// 2.4 s instead of 4.3 s.
func planWorkers() int { return 4 * runtime.GOMAXPROCS(0) }

// planRow is the row of one configuration.
func planRow(ctx context.Context, costs *CostModel, cfg config.Config) (PlanRow, error) {
	if costs == nil {
		mem, held, bounds, err := evenPeakMemory(ctx, cfg)
		return PlanRow{Config: cfg, Memory: mem, Holdings: held, Bounds: bounds}, err
	}
	rec, err := Predict(ctx, costs, cfg)
	if err != nil {
		return PlanRow{}, err
	}
	mem := make([]tensor.MemStats, len(rec.Devices))
	for d, dev := range rec.Devices {
		mem[d].PeakTotalBytes = dev.PeakBytes
		for c := range tensor.NumCategories {
			mem[d].PeakBytes[c] = dev.PeakBytesByCategory[tensor.Category(c).String()]
		}
	}
	model, err := models.Describe(cfg.Model, cfg.ModelConfig)
	if err != nil {
		return PlanRow{}, err
	}
	bounds := rec.Bounds()
	prog, err := cfg.Program(model, bounds)
	if err != nil {
		return PlanRow{}, err
	}
	return PlanRow{Config: cfg, Memory: mem, Holdings: holdings(model, prog, bounds), Bounds: bounds, Predicted: &rec}, nil
}

// evenPeakMemory is PeakMemory with the devices' ops interleaved as the
// program runs when every compute op takes the same time and transfers
// none (schedule.ChartCost), with what each device holds and the stage
// bounds of the partition (cfg.Bounds where set). Free-running
// devices interleave as the goroutines happen to, and what is in flight
// between them, and so a peak, can differ by a message from one call to
// the next (coop at M = 4 by 24 KiB on the mlp); without costs to order
// them by, a plan orders them evenly so that its ranking does not change
// between calls.
//
// The all-reduces of a model's tied parameters depend on the partition,
// so the meta run of a model with ties is given the partition its
// program was built for; any other runs the partition of its balance,
// which is the one computed here.
func evenPeakMemory(ctx context.Context, cfg config.Config) ([]tensor.MemStats, []Holding, []int, error) {
	model, err := models.Describe(cfg.Model, cfg.ModelConfig)
	if err != nil {
		return nil, nil, nil, err
	}
	bounds, err := cfg.Partition(model, cfg.Stages(), nil)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(model.Ties()) > 0 {
		cfg.Bounds = bounds
	}
	prog, err := cfg.Program(model, bounds)
	if err != nil {
		return nil, nil, nil, err
	}
	tl, err := schedule.Simulate(prog, schedule.ChartCost)
	if err != nil {
		return nil, nil, nil, err
	}
	ms, err := orderedMetaRun(ctx, cfg, tl)
	if err != nil {
		return nil, nil, nil, err
	}
	return ms.memory(), holdings(model, prog, bounds), bounds, nil
}

// RankPlan marks the rows whose largest device's peak exceeds budget
// bytes (none when budget ≤ 0) and ranks the others, fastest forecast
// step first when every row has a forecast, otherwise lightest peak
// first; ties keep the rows' order. It sorts rows: ranked rows first,
// then those over budget, lightest first.
func RankPlan(rows []PlanRow, budget int64) {
	timed := len(rows) > 0 && !slices.ContainsFunc(rows, func(r PlanRow) bool { return r.Predicted == nil })
	for i := range rows {
		peak, _ := rows[i].PeakBytes()
		rows[i].OverBudget = budget > 0 && peak > budget
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := &rows[i], &rows[j]
		if a.OverBudget != b.OverBudget {
			return !a.OverBudget
		}
		pa, _ := a.PeakBytes()
		pb, _ := b.PeakBytes()
		if timed && !a.OverBudget {
			sa, sb := a.Predicted.Summary.StepNanosMedian, b.Predicted.Summary.StepNanosMedian
			if sa != sb {
				return sa < sb
			}
		}
		return pa < pb
	})
	for i := range rows {
		rows[i].Rank = 0
		if !rows[i].OverBudget {
			rows[i].Rank = i + 1
		}
	}
}
