package schedule

// oneF1B builds PipeDream-Flush (Narayanan et al., "Memory-Efficient
// Pipeline-Parallel DNN Training", ICML 2021): device k runs
// min(K−1−k, M) warm-up forwards, then alternates one forward and one
// backward, then drains the remaining backwards, then updates. Each
// forward and backward receives and sends as in gpipe; nothing is
// checkpointed. Device k keeps at most min(K−k, M) micro-batches'
// activations, where gpipe without checkpointing keeps M.
//
// Its chart for K = 4, M = 4 (see Chart):
//
//	tick  0    1    2    3    4    5    6    7    8    9    10   11   12   13   14   15   16   17   18
//	dev 0 F0.0 F0.1 F0.2 F0.3 .    .    .    .    B0.0 .    .    B0.1 .    .    B0.2 .    .    B0.3 U
//	dev 1 .    F1.0 F1.1 F1.2 .    .    .    B1.0 F1.3 .    B1.1 .    .    B1.2 .    .    B1.3 U    .
//	dev 2 .    .    F2.0 F2.1 .    .    B2.0 F2.2 .    B2.1 F2.3 .    B2.2 .    .    B2.3 U    .    .
//	dev 3 .    .    .    F3.0 L0   B3.0 F3.1 L1   B3.1 F3.2 L2   B3.2 F3.3 L3   B3.3 U    .    .    .
func oneF1B(o Options) *Program {
	K, M := o.Devices, o.Micro
	p := newProgram(o)
	for k := range K {
		warmup := min(K-1-k, M)
		var ops []Op
		for j := range warmup {
			ops = pipeForward(ops, k, K, j, true)
		}
		for j := range M - warmup {
			ops = pipeForward(ops, k, K, j+warmup, true)
			ops = pipeBackward(ops, k, K, j, false)
		}
		for j := M - warmup; j < M; j++ {
			ops = pipeBackward(ops, k, K, j, false)
		}
		p.Devices[k] = append(ops, updateOp(k))
		p.MaxLive[k] = min(K-k, M)
	}
	return p
}
