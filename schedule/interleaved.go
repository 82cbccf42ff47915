package schedule

// interleaved builds Megatron-LM's interleaved 1F1B (Narayanan et al.,
// "Efficient Large-Scale Language Model Training on GPU Clusters Using
// Megatron-LM", SC 2021, §2.2.2). The model is cut into K·v stages; device
// k holds the v chunks k, k+K, …, (v−1)K+k. Every device runs the M·v
// forwards of (chunk, micro-batch) pairs in the same order: micro-batches
// in groups of K, and for each group chunk 0 on the group's micro-batches,
// then chunk 1, …, chunk v−1. The backwards follow the same order with the
// chunks reversed (v−1 … 0). Device k runs min(M·v, 2(K−k−1) + (v−1)K)
// warm-up forwards, then alternates one forward and one backward, then
// drains the backwards, then updates all its chunks. Every forward and
// backward receives and sends as in 1F1B, between the owners of
// neighbouring stages; with K = 1 the chunks hand their outputs over in
// place.
//
// With v = 1 the warm-up is 1F1B's min(M, K−k−1) and the program is
// 1F1B's op for op: Megatron-LM runs its non-interleaved schedule there.
//
// When K does not divide M, the order and the warm-up are those of M
// rounded up to a multiple of K, and the ops of the micro-batches beyond M
// are left out. The plain rule, a smaller last group, deadlocks (K = 4,
// M = 5, v = 3, for one): chunk c+1 of a micro-batch of a group of r < K
// comes r places after chunk c in the order, too soon for it to have gone
// round the K devices. Leaving ops out of a program that cannot deadlock
// keeps it so, as the ops left out feed only each other.
//
// MaxLive is the peak the program reaches: min(M·v, warm-up + 1) pairs
// when K divides M. With F = 1 and B = 2 per chunk and everything else
// free, the step's bubble is (K−1)/(vM+K−1) when K divides M: 1F1B's
// divided by about v.
//
// Its chart for K = 4, M = 8, v = 2 (see Chart; F4.0 is the forward of
// stage 4, chunk 1 of device 0, on micro-batch 0):
//
//	tick  0    1    2    3    4    5    6    7    8    9    10   11   12   13   14   15   16   17   18   19   20   21   22   23   24   25   26   27   28   29   30   31   32   33   34   35   36   37   38   39   40   41   42   43   44   45   46
//	dev 0 F0.0 F0.1 F0.2 F0.3 F4.0 F4.1 F4.2 F4.3 F0.4 F0.5 F0.6 .    B4.0 F0.7 .    B4.1 .    .    .    .    F4.4 B4.2 F4.5 B4.3 F4.6 B0.0 F4.7 B0.1 B0.2 B0.3 .    .    B4.4 .    .    B4.5 .    .    B4.6 .    .    B4.7 B0.4 B0.5 B0.6 B0.7 U
//	dev 1 .    F1.0 F1.1 F1.2 F1.3 F5.0 F5.1 F5.2 F5.3 F1.4 .    B5.0 F1.5 .    B5.1 F1.6 .    B5.2 F1.7 .    B5.3 F5.4 B1.0 F5.5 B1.1 F5.6 B1.2 F5.7 B1.3 .    .    B5.4 .    .    B5.5 .    .    B5.6 .    .    B5.7 B1.4 B1.5 B1.6 B1.7 U    .
//	dev 2 .    .    F2.0 F2.1 F2.2 F2.3 F6.0 F6.1 F6.2 .    B6.0 F6.3 .    B6.1 F2.4 .    B6.2 F2.5 .    B6.3 F2.6 B2.0 F2.7 B2.1 F6.4 B2.2 F6.5 B2.3 F6.6 .    B6.4 F6.7 .    B6.5 .    .    B6.6 .    .    B6.7 B2.4 B2.5 B2.6 B2.7 U    .    .
//	dev 3 .    .    .    F3.0 F3.1 F3.2 F3.3 F7.0 L0   B7.0 F7.1 L1   B7.1 F7.2 L2   B7.2 F7.3 L3   B7.3 F3.4 B3.0 F3.5 B3.1 F3.6 B3.2 F3.7 B3.3 F7.4 L4   B7.4 F7.5 L5   B7.5 F7.6 L6   B7.6 F7.7 L7   B7.7 B3.4 B3.5 B3.6 B3.7 U    .    .    .
func interleaved(o Options) *Program {
	K, M, v := o.Devices, o.Micro, o.Virtual
	p := newProgram(o)
	// The order runs over whole groups; the micro-batches beyond M are
	// placeholders whose ops are left out.
	order := interleavedOrder(K, (M+K-1)/K*K, v)
	for k := range K {
		var ops []Op
		forward := func(i int) {
			if c, j := order[i].chunk, order[i].micro; j < M {
				ops = stageForward(ops, p.Owners, c*K+k, j)
			}
		}
		backward := func(i int) {
			if c, j := order[i].chunk, order[i].micro; j < M {
				ops = stageBackward(ops, p.Owners, (v-1-c)*K+k, j, Backward)
			}
		}
		total := len(order)
		warmup := interleavedWarmup(K, k, v, total)
		for i := range warmup {
			forward(i)
		}
		for i := range total - warmup {
			forward(i + warmup)
			backward(i)
		}
		for i := total - warmup; i < total; i++ {
			backward(i)
		}
		p.Devices[k] = append(ops, updateOp(k))
		p.MaxLive[k] = peakLive(p.Devices[k])
	}
	return p
}

// chunkMicro is a (chunk, micro-batch) pair of interleaved's order.
type chunkMicro struct{ chunk, micro int }

// interleavedOrder returns the forward order every device follows, for M
// a multiple of K: for each group of K micro-batches, chunks 0..v−1 on
// the group's micro-batches.
func interleavedOrder(K, M, v int) []chunkMicro {
	order := make([]chunkMicro, 0, M*v)
	for first := 0; first < M; first += K {
		for c := range v {
			for j := first; j < first+K; j++ {
				order = append(order, chunkMicro{c, j})
			}
		}
	}
	return order
}

// interleavedWarmup returns how many forwards device k runs before its
// first backward, out of total.
func interleavedWarmup(K, k, v, total int) int {
	if v == 1 {
		return min(K-k-1, total)
	}
	return min(2*(K-k-1)+(v-1)*K, total)
}
