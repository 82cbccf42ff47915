package predictor

import (
	"github.com/pipecast/pipecast/models"
)

// seqProbe are the two sequence lengths at which quadBlocks compares a
// language model's blocks' multiply-accumulates: any two would do, and
// short ones describe fastest.
var seqProbe = [2]int{8, 16}

// quadBlocks says, per block of k's model, whether its time may grow
// with m·S², as attention's scores and context do: whether the block's
// multiply-accumulates per sample, as its cost annotations count them
// (models.BlockCost, attention's products included), more than double
// when the sequence doubles. An embedding, an LM head, a norm cost the
// same per token at any length, so their fits take a line in the tokens
// whatever their points say; the loss is such a line too. It returns nil,
// every block may, for a key that spans no sequence lengths or whose
// model this build cannot describe (then the data alone decides, see
// fitLine).
func quadBlocks(k Key) []bool {
	if !k.SpansSeq() {
		return nil
	}
	var macs [2][]int64
	for i, seq := range seqProbe {
		size := k.SizeRecord
		size.Seq = seq
		m, err := models.Describe(k.Model, size.Config())
		if err != nil {
			return nil
		}
		for _, b := range m.Blocks {
			macs[i] = append(macs[i], b.Cost.MACs)
		}
	}
	if len(macs[0]) != len(macs[1]) {
		return nil
	}
	out := make([]bool, len(macs[0]))
	for b := range out {
		out[b] = macs[1][b]*int64(seqProbe[0]) > macs[0][b]*int64(seqProbe[1])
	}
	return out
}
