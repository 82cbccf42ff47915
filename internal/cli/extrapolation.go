package cli

import (
	"fmt"
	"strconv"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/predictor"
	"github.com/pipecast/pipecast/reports"
)

// extrapolationNote says which of the configurations c forecasts at
// micro-batch sizes outside the range its records measured (see
// CostModel.Extrapolated), naming the cost model by label when it is not
// "" and the uncertainty's column or figure by band; "" when none does.
func extrapolationNote(c *predictor.CostModel, cfgs []config.Config, label, band string) string {
	if c == nil {
		return ""
	}
	var sizes []int
	for _, cfg := range cfgs {
		sizes = append(sizes, cfg.MicroBatchSize())
	}
	out := c.Extrapolated(sizes)
	if len(out) == 0 {
		return ""
	}
	names := make([]string, len(out))
	for i, m := range out {
		names[i] = strconv.Itoa(m)
	}
	measured := c.Samples()
	span := strconv.Itoa(measured[0])
	if lo, hi := measured[0], measured[len(measured)-1]; hi != lo {
		span = fmt.Sprintf("%d–%d", lo, hi)
	}
	of := ""
	if label != "" {
		of = " (" + label + ")"
	}
	unit := "samples"
	if len(out) == 1 && out[0] == 1 {
		unit = "sample"
	}
	return fmt.Sprintf("Extrapolated%s: micro-batches of %s %s lie outside the %s samples the runs measured; "+
		"their forecasts extend the fitted block costs beyond the data and are less sure than %s says.",
		of, reports.JoinAnd(names), unit, span, band)
}
