package predictor

import (
	"slices"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
)

// callShape is the shape of a block's call: its samples, and a language
// model's sequence length (0 for any other model).
type callShape struct{ samples, seq int }

// fitBalanceTimes keeps, per micro-batch size and sequence length, the
// block times the records' partitions by time balanced
// (profiler.RunConfig.BalanceNanos): block by block, the median over the
// records that name any, of as many blocks as the model has.
func (c *CostModel) fitBalanceTimes(recs []*profiler.Record) {
	byMB := map[callShape][][]float64{}
	for _, r := range recs {
		t := config.BalanceTimes(r.Config)
		if t == nil || len(t) != len(c.blocks) {
			continue
		}
		mb := callShape{r.Config.MicroBatchSize(), r.Config.Seq}
		byMB[mb] = append(byMB[mb], t)
	}
	if len(byMB) == 0 {
		return
	}
	c.balanceTimes = map[callShape][]float64{}
	for mb, sets := range byMB {
		med := make([]float64, len(c.blocks))
		for b := range med {
			col := make([]float64, len(sets))
			for i, s := range sets {
				col[i] = s[b]
			}
			med[b] = profiler.Median(col)
		}
		c.balanceTimes[mb] = med
	}
}

// BalanceTimes returns the block times a partition by time balances at
// micro-batch size mb (of a language model, of sequences of seq tokens;
// 0 for any other model), in ns: those the runner measured and recorded
// at that size (measured true), so that a forecast splits the model where
// the runner did, else each block's fitted forward and backward.
func (c *CostModel) BalanceTimes(mb, seq int) (times []float64, measured bool, err error) {
	if t, ok := c.balanceTimes[callShape{mb, seq}]; ok {
		return slices.Clone(t), true, nil
	}
	times = make([]float64, len(c.blocks))
	for i := range c.blocks {
		f, err := c.Block(i, PhaseForward, mb, seq)
		if err != nil {
			return nil, false, err
		}
		bw, err := c.Block(i, PhaseBackward, mb, seq)
		if err != nil {
			return nil, false, err
		}
		times[i] = f + bw
	}
	return times, false, nil
}

// MeasuredBalanceSizes returns the micro-batch sizes at which the records
// hold the block times the runner balanced, in increasing order: of a
// language model, at any sequence length (see BalanceMeasured).
func (c *CostModel) MeasuredBalanceSizes() []int {
	out := make([]int, 0, len(c.balanceTimes))
	for s := range c.balanceTimes {
		if !slices.Contains(out, s.samples) {
			out = append(out, s.samples)
		}
	}
	slices.Sort(out)
	return out
}

// BalanceMeasured says whether the records hold the block times the
// runner balanced at micro-batch size mb, of a language model of
// sequences of seq tokens (0 for any other model): whether BalanceTimes
// returns measured ones there.
func (c *CostModel) BalanceMeasured(mb, seq int) bool {
	_, ok := c.balanceTimes[callShape{mb, seq}]
	return ok
}

// partition returns the stage bounds the runner would use: cfg.Bounds if
// set, else the partition of cfg's balance; by time, of cfg.BalanceTimes
// when set, else of c.BalanceTimes at the micro-batch size. It returns
// cfg with the bounds and, by time, the times they balance.
func partition(c *CostModel, cfg config.Config, model *models.Model, stages int) (config.Config, error) {
	var used []float64
	bounds, err := cfg.Partition(model, stages, func() ([]float64, error) {
		t, _, err := c.BalanceTimes(cfg.MicroBatchSize(), model.Config.Seq)
		used = t
		return t, err
	})
	if err != nil {
		return cfg, err
	}
	cfg.Bounds = bounds
	if used != nil {
		cfg.BalanceTimes = used
	}
	return cfg, nil
}
