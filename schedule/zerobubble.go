package schedule

// zbH1 builds ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR
// 2024, §3.1): 1F1B with every backward split into BackwardInput (I) and
// BackwardWeight (W). Device k runs w = min(K−1−k, M) warm-up forwards;
// then for j = 0..M−w−1 the forward of j+w, I(j) and, if j ≥ k, W(j−k);
// then I(j) for the remaining j, each followed by W(j−k) if j ≥ k; then
// every W not yet run, in order; then the update. Delaying W by k
// micro-batches lets the W's fill the cool-down bubbles while device k
// holds at most min(K, M) micro-batches, 1F1B's peak on device 0, so
// MaxLive[k] = min(K, M). With F = I = W = 1 and everything else free the
// step takes 3M + K − 1 for M ≥ K: a bubble of (K−1)/(3M+K−1), a third of
// 1F1B's (the paper's (p−1)(T_F+T_B−T_W) with T_B = 2T_W).
//
// Its chart for K = 4, M = 8 (see Chart):
//
//	tick  0    1    2    3    4    5    6    7    8    9    10   11   12   13   14   15   16   17   18   19   20   21   22   23   24   25   26   27   28   29   30   31   32   33   34   35
//	dev 0 F0.0 F0.1 F0.2 F0.3 .    .    .    .    I0.0 W0.0 F0.4 I0.1 W0.1 F0.5 I0.2 W0.2 F0.6 I0.3 W0.3 F0.7 .    I0.4 W0.4 .    .    I0.5 W0.5 .    .    I0.6 W0.6 .    .    I0.7 W0.7 U
//	dev 1 .    F1.0 F1.1 F1.2 .    .    .    I1.0 F1.3 .    I1.1 W1.0 F1.4 I1.2 W1.1 F1.5 I1.3 W1.2 F1.6 .    I1.4 W1.3 F1.7 .    I1.5 W1.4 .    .    I1.6 W1.5 .    .    I1.7 W1.6 W1.7 U
//	dev 2 .    .    F2.0 F2.1 .    .    I2.0 F2.2 .    I2.1 F2.3 .    I2.2 W2.0 F2.4 I2.3 W2.1 F2.5 .    I2.4 W2.2 F2.6 .    I2.5 W2.3 F2.7 .    I2.6 W2.4 .    .    I2.7 W2.5 W2.6 W2.7 U
//	dev 3 .    .    .    F3.0 L0   I3.0 F3.1 L1   I3.1 F3.2 L2   I3.2 F3.3 L3   I3.3 W3.0 F3.4 L4   I3.4 W3.1 F3.5 L5   I3.5 W3.2 F3.6 L6   I3.6 W3.3 F3.7 L7   I3.7 W3.4 W3.5 W3.6 W3.7 U
func zbH1(o Options) *Program {
	K, M := o.Devices, o.Micro
	p := newProgram(o)
	for k := range K {
		w := min(K-1-k, M)
		var ops []Op
		weight := func(j int) {
			if j >= 0 {
				ops = append(ops, backwardWeightOp(k, j))
			}
		}
		for j := range w {
			ops = stageForward(ops, p.Owners, k, j)
		}
		for j := range M - w {
			ops = stageForward(ops, p.Owners, k, j+w)
			ops = stageBackward(ops, p.Owners, k, j, BackwardInput)
			weight(j - k)
		}
		for j := M - w; j < M; j++ {
			ops = stageBackward(ops, p.Owners, k, j, BackwardInput)
			weight(j - k)
		}
		for j := max(M-k, 0); j < M; j++ {
			weight(j)
		}
		p.Devices[k] = append(ops, updateOp(k))
		p.MaxLive[k] = min(K, M)
	}
	return p
}

// zbH2 builds ZB-H2 (Qi et al. 2024, §3.1): more warm-up forwards fill the
// start-up bubble and W's move to the tail, turning 1F1B's trapezoid into
// a parallelogram at the price of memory. Device k runs w = min(2(K−1−k)+1,
// M) warm-up forwards and then I(0), …, I(M−1) in order; what it runs
// after I(j), j < M−1, is
//
//   - W(j) then the next forward, while j < M−2K+1 (the steady state, the
//     same number of steps on every device);
//   - afterwards one op: the next forward while any is left, else the
//     next W;
//
// and after I(M−1) the W's still owed, in order; then the update. The
// simple rule (steady steps while forwards are left, then every I with
// all W's deferred) leaves the cool-down I's waiting for gradients that
// arrive only every three ticks; here, for M ≥ 2K−1, device k runs 2k
// forwards and 2K−2−2k W's in the cool-down and 2k+1 W's at the tail, so
// that each I runs one tick after its successor's. With F = I = W = 1
// and everything else free, device k is busy without a gap from tick k to
// 3M+k when M ≥ 2K−1, and the step takes 3M + K − 1 when M ≥ K. MaxLive
// is the peak the program reaches: 2K−1 pairs on every device when
// M ≥ 2K−1 (the paper's 2p−1), M below.
//
// Its chart for K = 4, M = 8 (see Chart, where the loss takes a tick and
// so leaves gaps the cost model above does not have):
//
//	tick  0    1    2    3    4    5    6    7    8    9    10   11   12   13   14   15   16   17   18   19   20   21   22   23   24   25   26   27   28   29   30   31   32   33   34   35
//	dev 0 F0.0 F0.1 F0.2 F0.3 F0.4 F0.5 F0.6 .    I0.0 W0.0 F0.7 .    I0.1 W0.1 .    I0.2 W0.2 .    I0.3 W0.3 .    I0.4 W0.4 .    I0.5 W0.5 .    I0.6 W0.6 .    I0.7 W0.7 U    .    .    .
//	dev 1 .    F1.0 F1.1 F1.2 F1.3 F1.4 .    I1.0 W1.0 F1.5 .    I1.1 F1.6 .    I1.2 F1.7 .    I1.3 W1.1 .    I1.4 W1.2 .    I1.5 W1.3 .    I1.6 W1.4 .    I1.7 W1.5 W1.6 W1.7 U    .    .
//	dev 2 .    .    F2.0 F2.1 F2.2 .    I2.0 W2.0 F2.3 .    I2.1 F2.4 .    I2.2 F2.5 .    I2.3 F2.6 .    I2.4 F2.7 .    I2.5 W2.1 .    I2.6 W2.2 .    I2.7 W2.3 W2.4 W2.5 W2.6 W2.7 U    .
//	dev 3 .    .    .    F3.0 L0   I3.0 W3.0 F3.1 L1   I3.1 F3.2 L2   I3.2 F3.3 L3   I3.3 F3.4 L4   I3.4 F3.5 L5   I3.5 F3.6 L6   I3.6 F3.7 L7   I3.7 W3.1 W3.2 W3.3 W3.4 W3.5 W3.6 W3.7 U
func zbH2(o Options) *Program {
	K, M := o.Devices, o.Micro
	p := newProgram(o)
	steady := M - 2*K + 1 // steps with a W and a forward after their I
	for k := range K {
		var ops []Op
		nextF, nextW := 0, 0
		forward := func() {
			ops = stageForward(ops, p.Owners, k, nextF)
			nextF++
		}
		weight := func() {
			ops = append(ops, backwardWeightOp(k, nextW))
			nextW++
		}
		for range min(2*(K-1-k)+1, M) {
			forward()
		}
		for j := range M {
			ops = stageBackward(ops, p.Owners, k, j, BackwardInput)
			switch {
			case j == M-1:
			case j < steady:
				weight()
				if nextF < M {
					forward()
				}
			case nextF < M:
				forward()
			default:
				weight()
			}
		}
		for nextW < M {
			weight()
		}
		p.Devices[k] = append(ops, updateOp(k))
		p.MaxLive[k] = peakLive(p.Devices[k])
	}
	return p
}
