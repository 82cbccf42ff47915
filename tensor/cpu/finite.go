package cpu

import (
	"sort"
	"sync/atomic"

	"github.com/pipecast/pipecast/tensor"
)

// finiteGrain is the fewest chunks a thread's share of a screen holds
// (256 Ki values, about 0.1 ms).
const finiteGrain = 256

var _ tensor.FiniteScreener = (*Device)(nil)

// FirstNonFiniteOf implements tensor.FiniteScreener: the position in ts
// of the first tensor that holds a NaN or an infinity and the index of
// its first such value, or −1, −1. The tensors are screened in place by
// tensor.FirstNonFiniteIn as one run of chunks (each tensor cut into
// whole chunks, its last one short), the device's threads each taking a
// stretch of that run: a model's gradients (about 100 MB for ResNet-50)
// took one thread 3–4 % of a step, and most of its hundreds of tensors
// are too small to share out alone. A screen that finds one keeps the
// least position any thread found.
func (d *Device) FirstNonFiniteOf(ts []*tensor.Tensor) (int, int) {
	const op = "first non-finite"
	vals := make([][]float32, len(ts))
	// starts[k] is the first chunk of tensor k in the run.
	starts := make([]int, len(ts)+1)
	for k, t := range ts {
		vals[k] = d.data(op, t, t.Len())
		starts[k+1] = starts[k] + (len(vals[k])+tensor.FiniteChunk-1)/tensor.FiniteChunk
	}
	// first holds the least run position found, a tensor's first chunk
	// times FiniteChunk plus the value's index: positions of different
	// tensors order as the tensors do.
	var first atomic.Int64
	first.Store(-1)
	d.pool.parallel(starts[len(ts)], finiteGrain, func(lo, hi int) {
		eachRun(starts, lo, hi, func(k, c0, c1 int) {
			v := vals[k]
			base := c0 * tensor.FiniteChunk
			i := tensor.FirstNonFiniteIn(v[base:min(c1*tensor.FiniteChunk, len(v))])
			if i < 0 {
				return
			}
			at := int64(starts[k]*tensor.FiniteChunk + base + i)
			for {
				cur := first.Load()
				if cur >= 0 && cur <= at || first.CompareAndSwap(cur, at) {
					return
				}
			}
		})
	})
	at := int(first.Load())
	if at < 0 {
		return -1, -1
	}
	k := sort.SearchInts(starts, at/tensor.FiniteChunk+1) - 1
	return k, at - starts[k]*tensor.FiniteChunk
}

// eachRun cuts [lo, hi) of a run of items laid end to end — item range
// [starts[k], starts[k+1]) belonging to part k — at the parts' bounds
// and calls fn(k, a, b) for each piece, a and b relative to part k.
func eachRun(starts []int, lo, hi int, fn func(k, a, b int)) {
	k := sort.SearchInts(starts, lo+1) - 1
	for ; lo < hi; k++ {
		end := min(hi, starts[k+1])
		if end > lo {
			fn(k, lo-starts[k], end-starts[k])
		}
		lo = max(lo, end)
	}
}
