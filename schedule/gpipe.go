package schedule

// gpipe builds GPipe's fill-drain schedule as torchgpipe runs it (Huang et
// al., "GPipe", NeurIPS 2019; Kim et al., "torchgpipe", arXiv:2004.09910).
// Device k runs the forwards of micro-batches 0..M−1 as their inputs
// arrive from k−1, then the backwards of M−1..0 as their output gradients
// arrive from k+1, then the update. Micro-batches below the checkpoint
// stop (M−1 for except-last, M for always, 0 for never) keep only their
// stage input in the forward and are recomputed right before their
// backward, so a device keeps the activations of one micro-batch at a time
// unless the mode is never, when it keeps all M.
//
// Its chart for K = 4, M = 4, checkpoint except-last ("f" marks a forward
// that keeps only its input; see Chart):
//
//	tick  0    1    2    3    4    5    6    7    8    9    10   11   12   13   14   15   16   17   18   19   20   21   22   23   24
//	dev 0 f0.0 f0.1 f0.2 F0.3 .    .    .    .    .    .    .    .    .    .    B0.3 .    .    .    R0.2 B0.2 R0.1 B0.1 R0.0 B0.0 U
//	dev 1 .    f1.0 f1.1 f1.2 F1.3 .    .    .    .    .    .    .    .    B1.3 .    .    R1.2 B1.2 R1.1 B1.1 R1.0 B1.0 U    .    .
//	dev 2 .    .    f2.0 f2.1 f2.2 F2.3 .    .    .    .    .    .    B2.3 .    R2.2 B2.2 R2.1 B2.1 R2.0 B2.0 U    .    .    .    .
//	dev 3 .    .    .    f3.0 L0   f3.1 L1   f3.2 L2   F3.3 L3   B3.3 R3.2 B3.2 R3.1 B3.1 R3.0 B3.0 U    .    .    .    .    .    .
func gpipe(o Options) *Program {
	K, M := o.Devices, o.Micro
	stop := checkpointStop(o.Checkpoint, M)
	p := newProgram(o)
	for k := range K {
		var ops []Op
		for j := range M {
			ops = pipeForward(ops, k, K, j, j >= stop)
		}
		for j := M - 1; j >= 0; j-- {
			ops = pipeBackward(ops, k, K, j, j < stop)
		}
		p.Devices[k] = append(ops, updateOp(k))
		p.MaxLive[k] = 1
		if o.Checkpoint == Never {
			p.MaxLive[k] = M
		}
	}
	return p
}

// checkpointStop returns the index below which micro-batches are
// checkpointed under mode c.
func checkpointStop(c Checkpoint, M int) int {
	switch c {
	case Always:
		return M
	case Never:
		return 0
	}
	return M - 1
}
