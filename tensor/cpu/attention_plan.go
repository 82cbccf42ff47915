package cpu

import (
	"sync/atomic"

	"github.com/pipecast/pipecast/tensor"
	ops "github.com/pipecast/pipecast/tensor/internal/transformerops"
)

// How the attention kernels (attention.go) share their work out: each
// kernel runs as tasks, a task being one block of up to attnRowBlock
// query positions of one (sequence, query head) pair — or, for dv and
// dk, which sum over the query heads of a group, one block of key
// positions of one (sequence, key/value head) pair. A task's products
// run serially on one thread (sgemmSerial) with that thread's packing
// buffers, and the threads take tasks from a shared counter, the most
// expensive first (under the causal mask a block's products grow with
// its last query position), so that they finish together.

// attnRowBlock is how many positions one task covers. Under the causal
// mask a block of query positions [t0, t1) multiplies against keys [0,
// t1), so blocks skip nearly all of the masked half of S²: the products
// do (S² + S·attnRowBlock)/2 of S²'s work. Each task packs the key (or
// value) rows it reads afresh, which costs a copy of them per
// attnRowBlock·hd multiply-adds on each: about 1% more. A multiple of
// every micro-kernel's MR (4, 6, 12), so only a sequence's last block
// has a ragged edge.
const attnRowBlock = 96

// attnPlan is one attention call's decomposition.
type attnPlan struct {
	p     ops.AttentionSizes
	b     int
	rows  int // positions per task
	steps int // blocks per sequence: ⌈S/rows⌉
	// slots are the threads the tasks are shared among, each with per
	// elements of packing buffers; 1 slot runs on the calling goroutine.
	slots, per int
}

// newAttnPlan plans an attention kernel over b sequences on a device of
// threads threads. ownGemm reports that products bring their own
// threads (Device.ownThreads): the tasks then run on the calling
// goroutine, with no packing buffers of the backend's.
func newAttnPlan(p tensor.AttentionParams, b, threads int, ownGemm bool) attnPlan {
	pl := attnPlan{
		p: ops.AttentionSizes{Seq: p.Seq, Heads: p.Heads, KVHeads: p.KVHeads, HeadDim: p.HeadDim, Scale: p.Scale, Causal: p.Causal},
		b: b, rows: min(attnRowBlock, p.Seq), slots: 1,
	}
	pl.steps = (p.Seq + pl.rows - 1) / pl.rows
	if ownGemm {
		return pl
	}
	s, hd := p.Seq, p.HeadDim
	if macs := b * p.Heads * s * s * hd; macs >= 2*gemmMinParallelMACs {
		pl.slots = max(1, min(threads, b*p.Heads*pl.steps))
	}
	// Every product of every kernel is at most rows × S × hd (scores,
	// dprobs) or rows × hd × S (context, dq, dv, dk).
	pl.per = max(gemmPackElems(pl.rows, s, hd), gemmPackElems(pl.rows, hd, s))
	return pl
}

// AttentionWorkspaceElems returns the float32 elements of scratch
// (Workspace) memory each attention kernel of the CPU backend holds on
// a device of threads threads, for batch sequences of sizes p: a set of
// packing buffers per thread that shares the tasks. The meta backend
// accounts it through the workspace model.
func AttentionWorkspaceElems(p tensor.AttentionParams, batch, threads int) int {
	pl := newAttnPlan(p, batch, threads, false)
	return pl.elems()
}

// elems is the plan's scratch.
func (pl attnPlan) elems() int { return pl.slots * pl.per }

// queryTasks is the number of tasks over query positions.
func (pl attnPlan) queryTasks() int { return pl.b * pl.p.Heads * pl.steps }

// queryTask returns query task i: pair j = b·Heads + h and positions
// [t0, t1), the last blocks of every pair first.
func (pl attnPlan) queryTask(i int) (j, t0, t1 int) {
	pairs := pl.b * pl.p.Heads
	blk := pl.steps - 1 - i/pairs
	t0 = blk * pl.rows
	return i % pairs, t0, min(pl.p.Seq, t0+pl.rows)
}

// keyTasks is the number of tasks over key positions.
func (pl attnPlan) keyTasks() int { return pl.b * pl.p.KVHeads * pl.steps }

// keyTask returns key task i: sequence b, key/value head g and positions
// [s0, s1), the first blocks (those most queries see) first.
func (pl attnPlan) keyTask(i int) (b, g, s0, s1 int) {
	pairs := pl.b * pl.p.KVHeads
	pair := i % pairs
	s0 = i / pairs * pl.rows
	return pair / pl.p.KVHeads, pair % pl.p.KVHeads, s0, min(pl.p.Seq, s0+pl.rows)
}

// attnRun calls fn on tasks [0, tasks) over the plan's slots, with buf
// (pl.elems() elements) cut into the slots' packing buffers.
func (d *Device) attnRun(pl attnPlan, buf []float32, tasks int, fn func(pack []float32, task int)) {
	if pl.slots <= 1 {
		for i := range tasks {
			fn(buf, i)
		}
		return
	}
	var next atomic.Int64
	d.pool.parallel(pl.slots, 1, func(lo, hi int) {
		for s := lo; s < hi; s++ {
			pack := buf[s*pl.per : (s+1)*pl.per]
			for i := int(next.Add(1)) - 1; i < tasks; i = int(next.Add(1)) - 1 {
				fn(pack, i)
			}
		}
	})
}
