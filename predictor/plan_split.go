package predictor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/tensor"
)

// Splits by memory. A configuration's balance evens out compute, but what
// limits memory is often a device that holds more than its share: 1F1B's
// first stage keeps K micro-batches in flight and its last one, a
// transformer's first and last stages hold the embedding and the LM head
// (V·D each, with their gradients and optimizer state). The exact peaks
// come from meta replays, a fraction of a second each for a 7-billion
// parameter model: too slow to replay every split, fast enough to replay
// a few. So the search weighs every split with config.MemoryModel (the
// linear partition's dynamic program, exact for the model), replays the
// split the model picks, calibrates the model to every replay so far
// (config.MemoryModel.Calibrate) and asks it again, until it picks a split
// already replayed or the replays allowed run out; what it returns is the
// best split replayed. Replays left over go to a local search around it
// (one bound moved by one block at a time, kept while the largest peak
// falls), which finds what the model's remaining error hides; a plan,
// which weighs dozens of configurations, leaves it out.

// planSplitReplays is how many meta replays a plan spends on each search
// of a configuration's split (its lightest; under a budget, then the
// most even that fits) beside the replay of its balanced split: on
// llama2-7b at K = 8 the calibrated model picks its last split within two
// (the replay confirms the model's pick after one calibration for 1f1b
// and zb-h2; zb-h1's effective in-flight count takes two), so that a plan
// of 40 configurations stays within a few seconds.
const planSplitReplays = 3

// splitSearch finds a configuration's split by its memory model
// calibrated to meta replays; obs are the splits replayed so far with
// their peaks, mem their devices' memory and holdings.
type splitSearch struct {
	ctx     context.Context
	cfg     config.Config
	mm      *config.MemoryModel
	replays int // left
	obs     []config.MemoryObservation
	mem     [][]tensor.MemStats
	held    [][]Holding
}

// newSplitSearch starts a search of cfg's splits (cfg.Bounds is ignored)
// for model that may replay replays splits; config.ErrNotSeparable where
// the memory model does not hold for cfg's schedule.
func newSplitSearch(ctx context.Context, cfg config.Config, model *models.Model, replays int) (*splitSearch, error) {
	cfg.Bounds = nil
	mm, err := cfg.MemoryModel(model)
	if err != nil {
		return nil, err
	}
	return &splitSearch{ctx: ctx, cfg: cfg, mm: mm, replays: replays}, nil
}

// observe adds a split whose memory is known.
func (s *splitSearch) observe(bounds []int, mem []tensor.MemStats, held []Holding) {
	peaks := make([]int64, len(mem))
	for d := range mem {
		peaks[d] = mem[d].PeakTotalBytes
	}
	s.obs = append(s.obs, config.MemoryObservation{Bounds: slices.Clone(bounds), Peaks: peaks})
	s.mem, s.held = append(s.mem, mem), append(s.held, held)
}

// seen returns the observation of bounds, or −1.
func (s *splitSearch) seen(bounds []int) int {
	return slices.IndexFunc(s.obs, func(o config.MemoryObservation) bool { return slices.Equal(o.Bounds, bounds) })
}

// replay replays cfg at bounds (in the order of equal costs, as a plan
// without data does) unless it was, and returns its observation's index;
// −1 when no replay is left.
func (s *splitSearch) replay(bounds []int) (int, error) {
	if i := s.seen(bounds); i >= 0 {
		return i, nil
	}
	if s.replays <= 0 {
		return -1, nil
	}
	s.replays--
	cfg := s.cfg
	cfg.Bounds = bounds
	mem, held, _, err := evenPeakMemory(s.ctx, cfg)
	if err != nil {
		return -1, err
	}
	s.observe(bounds, mem, held)
	return len(s.obs) - 1, nil
}

// largest is observation i's largest device peak.
func (s *splitSearch) largest(i int) int64 { return slices.Max(s.obs[i].Peaks) }

// lightest returns the observation of the lightest split found: the
// model's picks, calibrated after each replay, then, when descend is set,
// a local search with the replays left. Ties keep the split observed
// first.
func (s *splitSearch) lightest(descend bool) (int, error) {
	for {
		s.mm.Calibrate(s.obs)
		b, err := s.mm.Lightest()
		if err != nil {
			return -1, err
		}
		if s.seen(b) >= 0 || s.replays <= 0 {
			break
		}
		if _, err := s.replay(b); err != nil {
			return -1, err
		}
	}
	if len(s.obs) == 0 {
		return -1, nil
	}
	best := 0
	for i := range s.obs {
		if s.largest(i) < s.largest(best) {
			best = i
		}
	}
	if !descend {
		return best, nil
	}
	return s.descend(best)
}

// descend moves one bound of observation i's split by one block while
// that lowers the largest peak, as long as replays are left, and returns
// the observation it ends at.
func (s *splitSearch) descend(i int) (int, error) {
	for {
		next := i
		bounds := s.obs[i].Bounds
		for b := 1; b+1 < len(bounds); b++ {
			for _, step := range []int{-1, 1} {
				nb := slices.Clone(bounds)
				nb[b] += step
				if nb[b] <= nb[b-1] || nb[b] >= nb[b+1] {
					continue
				}
				j, err := s.replay(nb)
				if err != nil {
					return -1, err
				}
				if j >= 0 && s.largest(j) < s.largest(next) {
					next = j
				}
			}
		}
		if next == i {
			return i, nil
		}
		i = next
	}
}

// within returns the observation of a split whose every device stays
// within budget bytes with the most even compute (compute: a cost per
// block) the calibrated model finds, or −1 where no replay confirms one.
func (s *splitSearch) within(budget int64, compute []float64) (int, error) {
	for {
		s.mm.Calibrate(s.obs)
		b, err := s.mm.Within(float64(budget), compute)
		if errors.Is(err, models.ErrNoPartition) {
			return -1, nil
		}
		if err != nil {
			return -1, err
		}
		if i := s.seen(b); i >= 0 {
			// Replayed before: the calibration learns nothing new.
			if s.largest(i) <= budget {
				return i, nil
			}
			return -1, nil
		}
		i, err := s.replay(b)
		if err != nil || i < 0 {
			return -1, err
		}
		if s.largest(i) <= budget {
			return i, nil
		}
	}
}

// LightestSplit returns the split of cfg's model (cfg.Bounds and balance
// ignored) whose largest device peak is lowest, as the memory model
// calibrated to meta replays finds it (see splitSearch): the replay of
// the split of even multiply-accumulates and at most replays more,
// those the model's picks leave over searching around the best. It
// returns the split's devices' memory too; config.ErrNotSeparable for a
// schedule whose devices hold more than one stage's memory (interleaved,
// coop).
func LightestSplit(ctx context.Context, cfg config.Config, replays int) ([]int, []tensor.MemStats, error) {
	cfg = cfg.WithDefaults()
	model, err := models.Describe(cfg.Model, cfg.ModelConfig)
	if err != nil {
		return nil, nil, err
	}
	s, err := newSplitSearch(ctx, cfg, model, replays)
	if err != nil {
		return nil, nil, err
	}
	even := cfg
	even.Bounds, even.Balance = nil, config.BalanceMACs
	mem, held, bounds, err := evenPeakMemory(ctx, even)
	if err != nil {
		return nil, nil, err
	}
	s.observe(bounds, mem, held)
	i, err := s.lightest(true)
	if err != nil {
		return nil, nil, err
	}
	if i < 0 {
		return nil, nil, fmt.Errorf("lightest split of %s: no replay", cfg)
	}
	return s.obs[i].Bounds, s.mem[i], nil
}

// SplitPlan gives each row the split that serves the plan best where it
// is not the split its balance gives: with a budget, a row over it takes
// the split of most even compute (costs' block times where the balance is
// by time, else its balance's costs) that fits, else the lightest; without
// a budget, a plan without costs ranks by peak memory, so every row takes
// its lightest split, and a plan with costs (ranked by step) keeps the
// balanced splits. A row that changes splits holds the new split's memory
// and forecast, its Config has the split as Bounds and BalanceMemory, and
// MemorySplit says so. Rows of a split given, of one stage, or of a
// schedule the memory model does not hold for (interleaved, coop) keep
// theirs, and so does a row whose search meets a split the meta step
// refuses (a runner fault). Rows are searched on up to workers
// goroutines (as many as Plan runs when 0).
func SplitPlan(ctx context.Context, costs *CostModel, rows []PlanRow, budget int64, workers int) error {
	if workers <= 0 {
		workers = planWorkers()
	}
	errs := make([]error, len(rows))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, max(1, len(rows))) {
		wg.Go(func() {
			for i := range next {
				errs[i] = splitRow(ctx, costs, &rows[i], budget)
			}
		})
	}
	for i := range rows {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		var f *runner.Fault
		switch {
		case errors.As(err, &f):
			// A split the meta step refuses (as Plan leaves out a
			// configuration): the row keeps its own.
		case err != nil:
			return fmt.Errorf("split %s: %w", rows[i].Config, err)
		}
	}
	return nil
}

// splitRow is SplitPlan's work on one row.
func splitRow(ctx context.Context, costs *CostModel, r *PlanRow, budget int64) error {
	cfg := r.Config
	peak, _ := r.PeakBytes()
	switch {
	case cfg.Stages() < 2 || cfg.Balance == config.BalanceGiven || len(r.Bounds) == 0:
		return nil
	case budget > 0 && peak <= budget:
		return nil // the balanced split fits: the best step
	case budget <= 0 && costs != nil:
		return nil // ranked by step, under no limit
	}
	model, err := models.Describe(cfg.Model, cfg.ModelConfig)
	if err != nil {
		return err
	}
	s, err := newSplitSearch(ctx, cfg, model, planSplitReplays)
	if errors.Is(err, config.ErrNotSeparable) {
		return nil
	}
	if err != nil {
		return err
	}
	// With costs, the row's memory is its forecast's, replayed in the
	// order of the forecast timeline; the search replays in the order of
	// equal costs, which can differ by what is in flight between devices.
	s.observe(r.Bounds, r.Memory, r.Holdings)
	pick, err := s.lightest(false)
	if err != nil {
		return err
	}
	if budget > 0 && s.largest(pick) <= budget {
		compute, err := splitCompute(costs, cfg, model)
		if err != nil {
			return err
		}
		s.replays = planSplitReplays
		if i, err := s.within(budget, compute); err != nil {
			return err
		} else if i >= 0 {
			pick = i
		}
	}
	if pick == 0 || s.largest(pick) >= peak && (budget <= 0 || s.largest(pick) > budget) {
		return nil // the balanced split, or no lighter one
	}
	cfg.Bounds, cfg.Balance = slices.Clone(s.obs[pick].Bounds), config.BalanceMemory
	row := PlanRow{Config: cfg, Memory: s.mem[pick], Holdings: s.held[pick], Bounds: cfg.Bounds}
	if costs != nil {
		if row, err = planRow(ctx, costs, cfg); err != nil {
			return err
		}
	}
	row.MemorySplit = true
	*r = row
	return nil
}

// splitCompute returns the compute cost per block that a split within a
// budget evens out: the block times costs forecast where cfg balances
// time, else the costs of cfg's balance.
func splitCompute(costs *CostModel, cfg config.Config, model *models.Model) ([]float64, error) {
	if cfg.Balance == config.BalanceTime && costs != nil {
		t, _, err := costs.BalanceTimes(cfg.MicroBatchSize(), model.Config.Seq)
		return t, err
	}
	b := cfg.Balance
	if b == config.BalanceTime {
		b = config.BalanceMACs // no times without costs
	}
	return b.BlockCosts(model.Blocks, nil)
}
