package cli

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/predictor"
	"github.com/pipecast/pipecast/reports"
)

// balanceNote says what the forecasts' partitions balance, naming the
// cost model by label when it is not "": by time, the block times the
// runs measured where the data holds them at the micro-batch size (so
// that the forecast splits the model where a run would), the fitted
// block times elsewhere; by memory, what it minimises; otherwise the
// balance's cost; each with why (a parenthesis, or ""). "" when no
// configuration has more than one stage, or every split was decided
// otherwise (given whole, which the runs table's footnote and the plan's
// partition column show, or a plan's memory split).
func balanceNote(c *predictor.CostModel, cfgs []config.Config, label, why string) string {
	var balance config.Balance
	var measured, fitted []int
	for _, cfg := range cfgs {
		if cfg.Stages() < 2 || cfg.Bounds != nil {
			continue
		}
		balance = cfg.Balance
		if !cfg.Balance.Timed() || c == nil {
			continue
		}
		mb := cfg.MicroBatchSize()
		if c.BalanceMeasured(mb, resolvedSeq(cfg)) {
			measured = appendNew(measured, mb)
		} else {
			fitted = appendNew(fitted, mb)
		}
	}
	of := ""
	if label != "" {
		of = " (" + label + ")"
	}
	if balance == "" {
		return ""
	}
	if why != "" {
		why = " " + why
	}
	switch balance {
	case config.BalanceMemory:
		return fmt.Sprintf("Partitions%s minimise the largest device's peak memory as modelled from each stage's weights, "+
			"optimizer state and micro-batches in flight%s; interleaved and coop balance multiply-accumulates.", of, why)
	case config.BalanceTime, config.BalanceSpeed:
	default:
		return fmt.Sprintf("Partitions%s balance each block's %s%s.", of, balanceCost(balance), why)
	}
	var parts []string
	if len(measured) > 0 {
		parts = append(parts, "the block times the runs measured and balanced at "+sizes(measured)+", as a run would")
	}
	if len(fitted) > 0 {
		parts = append(parts, "the fitted block times at "+sizes(fitted))
	}
	if balance == config.BalanceSpeed {
		return fmt.Sprintf("Partitions%s balance time on each device's speed (a stage's block times times its device's slowdown): %s%s.",
			of, reports.JoinAnd(parts), why)
	}
	return fmt.Sprintf("Partitions%s balance time: %s.", of, reports.JoinAnd(parts))
}

// resolvedSeq is the sequence length cfg's model is built with: a
// language model's own where cfg leaves it 0; 0 for any other model.
func resolvedSeq(cfg config.Config) int {
	mc, err := models.Resolved(cfg.Model, cfg.ModelConfig)
	if err != nil {
		return cfg.ModelConfig.Seq
	}
	return mc.Seq
}

// balanceCost names what a balance evens out.
func balanceCost(b config.Balance) string {
	switch b {
	case config.BalanceParams:
		return "parameters"
	case config.BalanceMACs:
		return "multiply-accumulates"
	}
	return string(b)
}

// sizes names micro-batch sizes: "micro-batches of 2, 4 and 8 samples".
func sizes(mbs []int) string {
	slices.Sort(mbs)
	names := make([]string, len(mbs))
	for i, m := range mbs {
		names[i] = strconv.Itoa(m)
	}
	unit := "samples"
	if len(mbs) == 1 && mbs[0] == 1 {
		unit = "sample"
	}
	return "micro-batches of " + reports.JoinAnd(names) + " " + unit
}

// appendNew appends v to s unless s holds it.
func appendNew(s []int, v int) []int {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
