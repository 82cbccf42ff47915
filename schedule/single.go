package schedule

// single builds the single-device schedule: the whole model as one stage,
// M micro-batches with gradient accumulation, then the update. It is the
// correctness reference the other schedules are compared with.
//
// Its chart for M = 4 (see Chart):
//
//	tick  0    1    2    3    4    5    6    7    8    9    10   11   12
//	dev 0 F0.0 L0   B0.0 F0.1 L1   B0.1 F0.2 L2   B0.2 F0.3 L3   B0.3 U
func single(o Options) *Program {
	p := newProgram(o)
	ops := make([]Op, 0, 3*o.Micro+1)
	for j := range o.Micro {
		ops = append(ops, forwardOp(0, j, true), lossOp(0, j), backwardOp(0, j))
	}
	p.Devices[0] = append(ops, updateOp(0))
	p.MaxLive[0] = 1
	return p
}
