package predictor

import "slices"

// Extrapolated returns, in increasing order and once each, the
// micro-batch sizes among samples that lie outside the range of sizes
// c's records measured. A forecast at such a size extends the fitted
// block lines beyond their data, so it is less sure than RelErr says:
// per-sample block times need not stay on the line (cache and threading
// effects change with the size), and nothing measured shows how far they
// leave it.
func (c *CostModel) Extrapolated(samples []int) []int {
	if len(c.samples) == 0 {
		return nil
	}
	lo, hi := c.samples[0], c.samples[len(c.samples)-1]
	var out []int
	for _, m := range samples {
		if (m < lo || m > hi) && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// ExtrapolatedSeqs returns, in increasing order and once each, the
// sequence lengths among seqs that lie outside the range of those a
// language model's records measured: a forecast there extends the block
// costs' growth in the tokens and in attention's m·S² beyond the data.
// It is nil for any other model (whose records measured no sequence
// length).
func (c *CostModel) ExtrapolatedSeqs(seqs []int) []int {
	if len(c.seqs) == 0 {
		return nil
	}
	lo, hi := c.seqs[0], c.seqs[len(c.seqs)-1]
	var out []int
	for _, s := range seqs {
		if (s < lo || s > hi) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}
