package cpu

import (
	"sync/atomic"

	"github.com/pipecast/pipecast/tensor"
)

// finiteGrain is the fewest chunks a thread's share of a screen holds
// (256 Ki values, about 0.1 ms).
const finiteGrain = 256

// FirstNonFinite implements tensor.FiniteScreener: the index of t's first
// NaN or infinity, or −1, screened in place by tensor.FirstNonFiniteIn,
// the device's threads each taking a run of whole chunks. A model's
// gradients (about 100 MB for ResNet-50) took one thread 3–4 % of a
// step; a run that finds one keeps the least index any thread found.
func (d *Device) FirstNonFinite(t *tensor.Tensor) int {
	vals := d.data("first non-finite", t, t.Len())
	chunks := (len(vals) + tensor.FiniteChunk - 1) / tensor.FiniteChunk
	var first atomic.Int64
	first.Store(-1)
	d.pool.parallel(chunks, finiteGrain, func(lo, hi int) {
		base := lo * tensor.FiniteChunk
		i := tensor.FirstNonFiniteIn(vals[base:min(hi*tensor.FiniteChunk, len(vals))])
		if i < 0 {
			return
		}
		for at := int64(base + i); ; {
			cur := first.Load()
			if cur >= 0 && cur <= at || first.CompareAndSwap(cur, at) {
				return
			}
		}
	})
	return int(first.Load())
}
