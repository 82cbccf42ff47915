package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/predictor"
	"github.com/pipecast/pipecast/reports"
)

// extrapolationNote says which of the configurations c forecasts at
// micro-batch sizes outside the range its records measured (see
// CostModel.Extrapolated), and of a language model at sequence lengths
// outside theirs (CostModel.ExtrapolatedSeqs), naming the cost model by label when it is not
// "" and the uncertainty's column or figure by band; "" when none does.
func extrapolationNote(c *predictor.CostModel, cfgs []config.Config, label, band string) string {
	if c == nil {
		return ""
	}
	var sizes, seqs []int
	for _, cfg := range cfgs {
		sizes = append(sizes, cfg.MicroBatchSize())
		seqs = append(seqs, resolvedSeq(cfg))
	}
	of := ""
	if label != "" {
		of = " (" + label + ")"
	}
	var notes []string
	if out := c.Extrapolated(sizes); len(out) > 0 {
		notes = append(notes, extrapolatedSizes(out, c.Samples(), of, band))
	}
	if out := c.ExtrapolatedSeqs(seqs); len(out) > 0 {
		names := make([]string, len(out))
		for i, s := range out {
			names[i] = strconv.Itoa(s)
		}
		notes = append(notes, fmt.Sprintf("Extrapolated%s: sequences of %s tokens lie outside the %s tokens the runs measured; "+
			"their forecasts extend the fitted growth of the block costs with the sequence length beyond the data and are less sure than %s says.",
			of, reports.JoinAnd(names), span(c.Seqs()), band))
	}
	return strings.Join(notes, " ")
}

// span names the range of sorted measured values: "8", "8–64".
func span(measured []int) string {
	if lo, hi := measured[0], measured[len(measured)-1]; hi != lo {
		return fmt.Sprintf("%d–%d", lo, hi)
	}
	return strconv.Itoa(measured[0])
}

// extrapolatedSizes is extrapolationNote's sentence on the micro-batch
// sizes out, outside the measured ones; of names the cost model.
func extrapolatedSizes(out, measured []int, of, band string) string {
	names := make([]string, len(out))
	for i, m := range out {
		names[i] = strconv.Itoa(m)
	}
	unit := "samples"
	if len(out) == 1 && out[0] == 1 {
		unit = "sample"
	}
	return fmt.Sprintf("Extrapolated%s: micro-batches of %s %s lie outside the %s samples the runs measured; "+
		"their forecasts extend the fitted block costs beyond the data and are less sure than %s says.",
		of, reports.JoinAnd(names), unit, span(measured), band)
}
