package schedule

// coop builds the cooperative prediction/synchronisation schedule of C. Yu
// and K. Park, "Accelerated Synchronous Model Parallelism Using
// Cooperative Process for Training Compute-Intensive Models", IEEE Access
// 11 (2023), doi:10.1109/ACCESS.2023.3296609. With K ≥ 2 devices every
// device
//
//  1. all-gathers the weights of stages 0..K−2 (sync), in the one group
//     of every device;
//  2. on device p, predicts the input of every stage 1..K−1 for shard p
//     of the mini-batch, which it loads (Program.Loads) at the start of
//     the step, by running Predict(s, p) for s = 0..K−2, each producing
//     the input of stage s+1;
//  3. all-to-alls the predicted boundaries, so that device k holds the
//     input of stage k for the whole mini-batch and activations never
//     travel by Send during training;
//  4. trains slice by slice: device k < K−1 runs the forwards of slices
//     0..d (d = Prefetch, the look-ahead), then for every slice j waits for
//     the gradient of its output from k+1, runs Backward(k, j), sends the
//     input gradient to k−1 and runs the forward of slice j+d+1; the last
//     device runs Forward, Loss and Backward of each slice in turn;
//  5. updates its own stage.
//
// Device k < K−1 keeps at most min(d+1, M) slices' activations: the slice
// whose gradient it awaits and d ahead of it; the last device keeps one.
// With K = 1 only the training part remains.
//
// Its chart for K = 4, M = 4, d = 1 (see Chart):
//
//	tick  0     1     2     3     4     5     6     7     8     9     10    11    12    13    14    15    16    17    18    19    20
//	dev 0 AG    P0.s0 P1.s0 P2.s0 A2A   F0.0  F0.1  .     .     .     B0.0  F0.2  .     B0.1  F0.3  .     B0.2  .     .     B0.3  U
//	dev 1 AG    P0.s1 P1.s1 P2.s1 A2A   F1.0  F1.1  .     .     B1.0  F1.2  .     B1.1  F1.3  .     B1.2  .     .     B1.3  U     .
//	dev 2 AG    P0.s2 P1.s2 P2.s2 A2A   F2.0  F2.1  .     B2.0  F2.2  .     B2.1  F2.3  .     B2.2  .     .     B2.3  U     .     .
//	dev 3 AG    P0.s3 P1.s3 P2.s3 A2A   F3.0  L0    B3.0  F3.1  L1    B3.1  F3.2  L2    B3.2  F3.3  L3    B3.3  U     .     .     .
func coop(o Options) *Program {
	K, M, d := o.Devices, o.Micro, o.Prefetch
	p := newProgram(o)
	const everyone = 0 // the index of the group of every device
	if K > 1 {
		p.Groups = [][]int{allDevices(K)}
	}
	for k := range K {
		var ops []Op
		if K > 1 {
			p.Loads[k] = []Load{shardLoad(Inputs, Predict, k, K)}
			// Each device gets its own stage list, so that a consumer that
			// edits one op cannot change another's.
			ops = append(ops, allGatherOp(everyone, firstStages(K-1)))
			for s := range K - 1 {
				ops = append(ops, predictOp(s, k))
			}
			ops = append(ops, allToAllOp(everyone))
		}
		if k == K-1 {
			for j := range M {
				ops = append(ops, forwardOp(k, j, true), lossOp(k, j), backwardOp(k, j))
				if k > 0 {
					ops = append(ops, sendOp(Gradient, k, j, k-1))
				}
			}
			p.MaxLive[k] = 1
		} else {
			ahead := min(d+1, M)
			for j := range ahead {
				ops = append(ops, forwardOp(k, j, true))
			}
			for j := range M {
				ops = append(ops, recvOp(Gradient, k+1, j, k+1), backwardOp(k, j))
				if k > 0 {
					ops = append(ops, sendOp(Gradient, k, j, k-1))
				}
				if j+d+1 < M {
					ops = append(ops, forwardOp(k, j+d+1, true))
				}
			}
			p.MaxLive[k] = ahead
		}
		p.Devices[k] = append(ops, updateOp(k))
	}
	return p
}
