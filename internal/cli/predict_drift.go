package cli

import (
	"fmt"
	"math"
	"strings"

	"github.com/pipecast/pipecast/predictor"
)

// driftNotes says, per fold and cost model, how long the held-out runs'
// blocks took against the fitted runs' at the same micro-batch sizes:
// the range over the sizes of the summed ratio, forward and backward.
func driftNotes(drift []predictor.Drift) []string {
	type group struct {
		fold string
		key  predictor.Key
	}
	var order []group
	byGroup := map[group][]predictor.Drift{}
	for _, d := range drift {
		g := group{d.Fold, d.Key}
		if _, ok := byGroup[g]; !ok {
			order = append(order, g)
		}
		byGroup[g] = append(byGroup[g], d)
	}
	var out []string
	for _, g := range order {
		var parts []string
		var lo, hi = math.Inf(1), math.Inf(-1)
		for _, phase := range []string{"forward", "backward"} {
			pl, ph := math.Inf(1), math.Inf(-1)
			for _, d := range byGroup[g] {
				if d.Phase == phase {
					pl, ph = min(pl, d.Ratio), max(ph, d.Ratio)
					lo, hi = min(lo, float64(d.Samples)), max(hi, float64(d.Samples))
				}
			}
			if math.IsInf(pl, 1) {
				continue
			}
			r := fmt.Sprintf("×%.2f", pl)
			if fmt.Sprintf("%.2f", pl) != fmt.Sprintf("%.2f", ph) {
				r = fmt.Sprintf("×%.2f–%.2f", pl, ph)
			}
			parts = append(parts, phase+" "+r)
		}
		if len(parts) == 0 {
			continue
		}
		sizes := fmt.Sprintf("%.0f", lo)
		if hi > lo {
			sizes = fmt.Sprintf("%.0f–%.0f", lo, hi)
		}
		out = append(out, fmt.Sprintf("Blocks of %s in the held-out runs (%s) took %s the fitted runs' time at the same micro-batch size (%s samples): a difference no fit of those runs can see.",
			g.key, g.fold, strings.Join(parts, ", "), sizes))
	}
	return out
}
