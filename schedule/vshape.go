package schedule

// The V-shaped schedules cut the model into 2K stages and give device k
// stages k and 2K−1−k (Options.Owner): a micro-batch runs down the
// devices through stages 0..K−1, turns on the last device, which hands
// stage K−1's output to its own stage K in place, and runs back up
// through stages K..2K−1 to the loss on device 0. Device 0 thus holds
// the first and the last stage (a language model's embedding and LM
// head), every device a part of the first half and of the second, and
// each backward of a pair meets its forward's device again on the way
// back. Both split backwards into BackwardInput (I) and BackwardWeight
// (W). Both build their order for n ≥ M micro-batches, as their
// published forms need, and leave out the ops of the micro-batches
// beyond M, as interleaved does: the ops left out feed only each other,
// so a program that cannot deadlock stays so.

// vOp is one compute op of a V-shaped order: a forward, an input
// backward or a weight backward of (stage, micro).
type vOp struct {
	kind         OpKind // Forward, BackwardInput or BackwardWeight
	stage, micro int
}

// emitV turns device k's order into its program: the ops of
// micro-batches below M with their transfers, then the update.
func emitV(p *Program, k int, order []vOp) {
	M := p.Options.Micro
	var ops []Op
	for _, o := range order {
		if o.micro >= M {
			continue
		}
		switch o.kind {
		case Forward:
			ops = stageForward(ops, p.Owners, o.stage, o.micro)
		case BackwardInput:
			ops = stageBackward(ops, p.Owners, o.stage, o.micro, BackwardInput)
		case BackwardWeight:
			ops = append(ops, backwardWeightOp(o.stage, o.micro))
		}
	}
	p.Devices[k] = append(ops, updateOp(k))
	p.MaxLive[k] = peakLive(p.Devices[k])
}

// vCounters hands out each (stage, kind)'s next micro-batch in turn.
type vCounters map[[2]int]int

func (c vCounters) next(kind OpKind, stage int) vOp {
	key := [2]int{int(kind), stage}
	j := c[key]
	c[key] = j + 1
	return vOp{kind, stage, j}
}

// zbV builds ZB-V (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR
// 2024, §6; the order torch.distributed.pipelining's
// ScheduleZBVZeroBubble runs). Device k holds stage a = k (the way down)
// and b = 2K−1−k (the way back) and runs, for n = max(M, 2K−1):
//
//  1. 2(K−k)−1 forwards of a;
//  2. k times: a forward of b, a forward of a;
//  3. K−k times: a forward of b, then its I and W;
//  4. while a's forwards are not all run or b's lag behind them: a
//     forward of a (while any is left), I and W of a, a forward of b, I
//     and W of b;
//  5. k times: I of a, I of b, their W's deferred;
//  6. K−k times: I of a and the oldest deferred W of a;
//  7. the deferred W's of b, then those of a; then the update.
//
// Device 0 starts with 2K−1 forwards of its first stage, as many pairs
// as 1F1B's device 0 holds of its stage (whose chunks are twice as
// large), and no device holds more than 2K pairs of its half-size stages:
// 1F1B's activation memory. With F = I = W = 1 per stage and everything
// else free, every device computes 6M and the step takes 6M + K − 1 when
// M ≥ 2K−1: the zero bubble of the paper, whose only idle time is the
// skew of the devices' first forwards.
//
// Its chart for K = 4, M = 8 (see Chart; F7.0 is the forward of stage 7,
// the second of device 0, on micro-batch 0; L the loss, on device 0):
//
//	tick  0    1    2    3    4    5    6    7    8    9    10   11   12   13   14   15   16   17   18   19   20   21   22   23   24   25   26   27   28   29   30   31   32   33   34   35   36   37   38   39   40   41   42   43   44   45   46   47   48   49   50   51   52   53   54   55   56   57   58
//	dev 0 F0.0 F0.1 F0.2 F0.3 F0.4 F0.5 F0.6 F7.0 L0   I7.0 W7.0 F7.1 L1   I7.1 W7.1 F7.2 L2   I7.2 W7.2 F7.3 L3   I7.3 W7.3 F0.7 I0.0 W0.0 F7.4 L4   I7.4 W7.4 I0.1 W0.1 F7.5 L5   I7.5 W7.5 I0.2 W0.2 F7.6 L6   I7.6 W7.6 I0.3 W0.3 F7.7 L7   I7.7 W7.7 I0.4 W0.4 I0.5 W0.5 I0.6 W0.6 I0.7 W0.7 U    .    .
//	dev 1 .    F1.0 F1.1 F1.2 F1.3 F1.4 F6.0 F1.5 F6.1 .    I6.0 W6.0 F6.2 .    I6.1 W6.1 F6.3 .    I6.2 W6.2 F1.6 I1.0 W1.0 F6.4 I6.3 W6.3 F1.7 I1.1 W1.1 F6.5 I6.4 W6.4 I1.2 W1.2 F6.6 I6.5 W6.5 I1.3 W1.3 F6.7 .    I6.6 W6.6 I1.4 .    .    .    I6.7 I1.5 W1.4 I1.6 W1.5 I1.7 W1.6 W6.7 W1.7 U    .    .
//	dev 2 .    .    F2.0 F2.1 F2.2 F5.0 F2.3 F5.1 F2.4 F5.2 .    I5.0 W5.0 F5.3 .    I5.1 W5.1 F2.5 I2.0 W2.0 F5.4 I5.2 W5.2 F2.6 I2.1 W2.1 F5.5 I5.3 W5.3 F2.7 I2.2 W2.2 F5.6 I5.4 W5.4 I2.3 W2.3 F5.7 I5.5 W5.5 I2.4 .    I5.6 I2.5 .    .    .    .    I5.7 I2.6 W2.4 I2.7 W2.5 W5.6 W5.7 W2.6 W2.7 U    .
//	dev 3 .    .    .    F3.0 F4.0 F3.1 F4.1 F3.2 F4.2 F3.3 F4.3 .    I4.0 W4.0 F3.4 I3.0 W3.0 F4.4 I4.1 W4.1 F3.5 I3.1 W3.1 F4.5 I4.2 W4.2 F3.6 I3.2 W3.2 F4.6 I4.3 W4.3 F3.7 I3.3 W3.3 F4.7 I4.4 W4.4 I3.4 I4.5 I3.5 .    .    I4.6 I3.6 .    .    .    .    I4.7 I3.7 W3.4 W4.5 W4.6 W4.7 W3.5 W3.6 W3.7 U
func zbV(o Options) *Program {
	K, M := o.Devices, o.Micro
	p := newProgram(o)
	n := max(M, 2*K-1)
	for k := range K {
		a, b := k, 2*K-1-k
		c := vCounters{}
		var order []vOp
		add := func(kind OpKind, stage int) vOp {
			op := c.next(kind, stage)
			order = append(order, op)
			return op
		}
		fwd := func(stage int) int { return add(Forward, stage).micro + 1 }
		for range 2*(K-k) - 1 {
			fwd(a)
		}
		for range k {
			fwd(b)
			fwd(a)
		}
		for range K - k {
			fwd(b)
			add(BackwardInput, b)
			add(BackwardWeight, b)
		}
		fa, fb := c[[2]int{int(Forward), a}], c[[2]int{int(Forward), b}]
		for fb < fa || fa < n {
			if fa < n {
				fa = fwd(a)
			}
			add(BackwardInput, a)
			add(BackwardWeight, a)
			fb = fwd(b)
			add(BackwardInput, b)
			add(BackwardWeight, b)
		}
		for range k {
			add(BackwardInput, a)
			add(BackwardInput, b)
		}
		for range K - k {
			add(BackwardInput, a)
			add(BackwardWeight, a)
		}
		for _, s := range []int{b, a} {
			for c[[2]int{int(BackwardWeight), s}] < c[[2]int{int(BackwardInput), s}] {
				add(BackwardWeight, s)
			}
		}
		emitV(p, k, order)
	}
	return p
}

// dualPipeV builds DualPipeV: DeepSeek-V3's DualPipe (DeepSeek-AI, 2024)
// cut in half onto K devices in a V, in the order
// torch.distributed.pipelining's ScheduleDualPipeV runs. DualPipe pairs
// the forward of one stage with the backward of the other (F&B) so that a
// GPU overlaps one's compute with the other's communication; torch runs
// the pair's two halves one after the other, and so does pipecast, whose
// devices have one compute stream: a pair is the forward, then the
// backward's I and W. A full backward (B) is I then W at once; a split
// one queues its W, which later slots run oldest first. Device k holds a
// = k and b = 2K−1−k and runs, for n = max(M, 2K):
//
//  1. 2(K−k−1) forwards of a;
//  2. k+1 times: a forward of a, a forward of b;
//  3. K−k−1 times: I of b, one queued W, a forward of b;
//  4. n−2K+k+1 times: a forward of a with B of b (on the last device the
//     first time: the forward, then B of b), then a forward of b with B
//     of a;
//  5. K−k−1 times: B of b, then a forward of b with B of a;
//  6. k+1 times: a backward of b, then of a, full until the middle of
//     the k+1 (odd k switch before b's, even k before a's) and split
//     after it;
//  7. K−k−1 times: one queued W, a backward of a (split if 6 switched);
//  8. the queued W's; then the update.
//
// With F = I = W = 1 per stage, a pair's F&B = F + B = 3 (no overlap)
// and everything else free, each device computes 6M and the step takes
// 6M + K − 1 when M ≥ 2K, as ZB-V's: an idle time of K − 1 a device,
// below DualPipe's published bubble (PP/2 − 1)(F&B + B − 3W) on PP = 2K
// stages, 2(K − 1) here, which counts a pair as one slot waiting for both
// its inputs where run in turn its forward starts on its own. Device 0
// holds at most 2K+1 pairs of its half-size stages: PP + 1 activations
// in the published table's terms.
//
// Its chart for K = 4, M = 8 (see Chart):
//
//	tick  0    1    2    3    4    5    6    7    8    9    10   11   12   13   14   15   16   17   18   19   20   21   22   23   24   25   26   27   28   29   30   31   32   33   34   35   36   37   38   39   40   41   42   43   44   45   46   47   48   49   50   51   52   53   54   55   56
//	dev 0 F0.0 F0.1 F0.2 F0.3 F0.4 F0.5 F0.6 F7.0 L0   I7.0 W7.0 F7.1 L1   I7.1 W7.1 F7.2 L2   I7.2 W7.2 F7.3 L3   F0.7 I7.3 W7.3 F7.4 L4   I0.0 W0.0 I7.4 W7.4 F7.5 L5   I0.1 W0.1 I7.5 W7.5 F7.6 L6   I0.2 W0.2 I7.6 W7.6 F7.7 L7   I0.3 W0.3 I7.7 W7.7 I0.4 W0.4 I0.5 W0.5 I0.6 W0.6 I0.7 W0.7 U
//	dev 1 .    F1.0 F1.1 F1.2 F1.3 F1.4 F6.0 F1.5 F6.1 .    I6.0 W6.0 F6.2 .    I6.1 W6.1 F6.3 F1.6 I6.2 W6.2 F6.4 I1.0 W1.0 F1.7 I6.3 W6.3 F6.5 I1.1 W1.1 I6.4 W6.4 F6.6 I1.2 W1.2 .    I6.5 W6.5 F6.7 I1.3 W1.3 .    I6.6 W6.6 I1.4 W1.4 .    .    I6.7 I1.5 W6.7 I1.6 W1.5 I1.7 W1.6 W1.7 U    .
//	dev 2 .    .    F2.0 F2.1 F2.2 F5.0 F2.3 F5.1 F2.4 F5.2 .    I5.0 W5.0 F5.3 F2.5 I5.1 W5.1 F5.4 I2.0 W2.0 F2.6 I5.2 W5.2 F5.5 I2.1 W2.1 F2.7 I5.3 W5.3 F5.6 I2.2 W2.2 I5.4 W5.4 F5.7 I2.3 W2.3 I5.5 W5.5 I2.4 W2.4 .    I5.6 W5.6 I2.5 .    .    .    I5.7 I2.6 W2.5 I2.7 W5.7 W2.6 W2.7 U    .
//	dev 3 .    .    .    F3.0 F4.0 F3.1 F4.1 F3.2 F4.2 F3.3 F4.3 F3.4 I4.0 W4.0 F4.4 I3.0 W3.0 F3.5 I4.1 W4.1 F4.5 I3.1 W3.1 F3.6 I4.2 W4.2 F4.6 I3.2 W3.2 F3.7 I4.3 W4.3 F4.7 I3.3 W3.3 I4.4 W4.4 I3.4 W3.4 I4.5 W4.5 I3.5 W3.5 I4.6 I3.6 .    .    .    .    I4.7 I3.7 W4.6 W3.6 W4.7 W3.7 U    .
func dualPipeV(o Options) *Program {
	K, M := o.Devices, o.Micro
	p := newProgram(o)
	n := max(M, 2*K)
	for k := range K {
		a, b := k, 2*K-1-k
		c := vCounters{}
		var order, queue []vOp
		forward := func(s int) { order = append(order, c.next(Forward, s)) }
		full := func(s int) {
			i := c.next(BackwardInput, s)
			order = append(order, i, c.next(BackwardWeight, s))
		}
		split := func(s int) {
			i := c.next(BackwardInput, s)
			order = append(order, i)
			queue = append(queue, vOp{BackwardWeight, s, i.micro})
		}
		weight := func() {
			if len(queue) == 0 {
				return
			}
			w := queue[0]
			queue = queue[1:]
			c.next(BackwardWeight, w.stage)
			order = append(order, w)
		}
		for range 2 * (K - k - 1) {
			forward(a)
		}
		for range k + 1 {
			forward(a)
			forward(b)
		}
		for range K - k - 1 {
			split(b)
			weight()
			forward(b)
		}
		for range n - 2*K + k + 1 {
			forward(a)
			full(b)
			forward(b)
			full(a)
		}
		for range K - k - 1 {
			full(b)
			forward(b)
			full(a)
		}
		zb := false
		backward := func(s int) {
			if zb {
				split(s)
			} else {
				full(s)
			}
		}
		for i := range k + 1 {
			if i == (k+1)/2 && k%2 == 1 {
				zb = true
			}
			backward(b)
			if i == (k+1)/2 && k%2 == 0 {
				zb = true
			}
			backward(a)
		}
		for range K - k - 1 {
			weight()
			backward(a)
		}
		for len(queue) > 0 {
			weight()
		}
		emitV(p, k, order)
	}
	return p
}
