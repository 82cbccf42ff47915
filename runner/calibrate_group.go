package runner

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
)

// CalibrateGroup measures the transfer path among the processes of g
// (at least two), as Calibrate does in one process: point-to-point
// transfers between ranks 0 and 1 (half of a round trip, so that one
// clock times it), all-gathers and all-to-alls among every rank (the
// slowest rank's time after a barrier), each at the same sizes, and the
// gradient sum of two data-parallel replicas between ranks 0 and 1 (the
// runs' own code, SumReplicas, as rank 0 times it) at Calibrate's sizes.
// Every rank calls it; all return the same calibration.
func CalibrateGroup(ctx context.Context, g comm.Group, backend string, threads int) (*profiler.Calibration, error) {
	if g.Size() < 2 {
		return nil, fmt.Errorf("calibrate: %d process, need at least 2", g.Size())
	}
	dev, err := tensor.Open(backend, tensor.Options{Index: g.Rank(), Threads: threads})
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	defer dev.Close()
	cal := &profiler.Calibration{}
	for _, b := range p2pCalibrationBytes {
		ns, err := timeRoundTrip(ctx, g, dev, b)
		if err != nil {
			return nil, fmt.Errorf("calibrate p2p of %d bytes: %w", b, err)
		}
		cal.Samples = append(cal.Samples, profiler.TransferSample{Kind: "p2p", Devices: 2, Bytes: b, Nanos: ns})
	}
	for _, kind := range []string{"allgather", "alltoall"} {
		for _, b := range collectiveCalibrationBytes {
			ns, err := timeGroupCollective(ctx, g, dev, kind, b)
			if err != nil {
				return nil, fmt.Errorf("calibrate %s of %d bytes: %w", kind, b, err)
			}
			cal.Samples = append(cal.Samples, profiler.TransferSample{Kind: kind, Devices: g.Size(), Bytes: b, Nanos: ns})
		}
	}
	pair, err := replicaPair(ctx, g)
	if err != nil {
		return nil, fmt.Errorf("calibrate %s: %w", DPAllReduceKind, err)
	}
	if c, ok := pair.(comm.Group); ok {
		defer c.Close()
	}
	for _, b := range dpCalibrationBytes {
		ns, err := timeGroupReplicaSum(ctx, pair, dev, b)
		if err != nil {
			return nil, fmt.Errorf("calibrate %s of %d bytes: %w", DPAllReduceKind, b, err)
		}
		cal.Samples = append(cal.Samples, profiler.TransferSample{Kind: DPAllReduceKind, Devices: 2, Bytes: b, Nanos: ns})
	}
	cal.LatencyNanos, cal.BandwidthBytesPerSecond = fitTransfer(cal.Samples[:len(p2pCalibrationBytes)])
	// Rank 0's clock timed the point-to-point samples: share its view.
	b, err := json.Marshal(cal)
	if err != nil {
		return nil, err
	}
	if b, err = g.Broadcast(ctx, 0, b); err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	out := &profiler.Calibration{}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	return out, nil
}

// timeRoundTrip returns, on rank 0, the median of half the time bytes
// take from rank 0 to rank 1 and back; ranks above 1 take no part.
func timeRoundTrip(ctx context.Context, g comm.Group, dev tensor.Device, bytes int64) (int64, error) {
	me := g.Rank()
	if me > 1 {
		return 0, nil
	}
	buf := dev.Alloc(tensor.Comm, int(bytes/4))
	defer buf.Release()
	peer := 1 - me
	times := make([]int64, 0, calibrationReps)
	for rep := -1; rep < calibrationReps; rep++ {
		there := comm.Tag{Step: rep, Kind: "calibration", Stage: 0, Micro: int(bytes)}
		back := comm.Tag{Step: rep, Kind: "calibration", Stage: 1, Micro: int(bytes)}
		start := tensor.Nanotime()
		if me == 0 {
			if err := g.Send(ctx, peer, there, buf); err != nil {
				return 0, err
			}
			if err := g.Recv(ctx, peer, back, buf); err != nil {
				return 0, err
			}
		} else {
			if err := g.Recv(ctx, peer, there, buf); err != nil {
				return 0, err
			}
			if err := g.Send(ctx, peer, back, buf); err != nil {
				return 0, err
			}
		}
		dev.Sync()
		if rep >= 0 {
			times = append(times, (tensor.Nanotime()-start)/2)
		}
	}
	return profiler.Median(times), nil
}

// replicaPair returns, to ranks 0 and 1 of g, the endpoint of the two
// as two replicas, as a run's replicas get theirs (Trainer.replicaGroup):
// a group split off where g splits, so that the calibration times the
// library's own sum, else their subset of g; nil to the other ranks.
// Every rank calls it.
func replicaPair(ctx context.Context, g comm.Group) (comm.Endpoint, error) {
	s, ok := g.(comm.Splitter)
	if !ok {
		if g.Rank() > 1 {
			return nil, nil
		}
		return comm.SubEndpoint(g, []int{0, 1}), nil
	}
	color := 0
	if g.Rank() > 1 {
		color = -1
	}
	pair, err := s.SplitBy(ctx, color, g.Rank())
	if err != nil || pair == nil {
		return nil, err // a nil *Group would not read as a nil Endpoint
	}
	return pair, nil
}

// timeGroupReplicaSum returns, on rank 0, the median time of summing
// bytes of gradients over ranks 0 and 1 as two replicas (SumReplicas
// over ep, their endpoint: replicaPair), each repetition starting after a
// barrier of the two; ranks above 1 (ep nil) take no part.
func timeGroupReplicaSum(ctx context.Context, ep comm.Endpoint, dev tensor.Device, bytes int64) (int64, error) {
	if ep == nil {
		return 0, nil
	}
	grad := dev.Alloc(tensor.Gradients, int(bytes/4))
	defer grad.Release()
	out, in := dev.Alloc(tensor.Comm, 1), dev.Alloc(tensor.Comm, 1)
	defer out.Release()
	defer in.Release()
	reps := dpCalibrationReps(bytes)
	times := make([]int64, 0, reps)
	for rep := -1; rep < reps; rep++ {
		// A value each way lines the two up, as a barrier would.
		ready := comm.Tag{Step: rep, Kind: "calibration-" + DPAllReduceKind + "-ready", Stage: 0, Micro: int(bytes)}
		if err := ep.Send(ctx, 1-ep.Rank(), ready, out); err != nil {
			return 0, err
		}
		if err := ep.Recv(ctx, 1-ep.Rank(), ready, in); err != nil {
			return 0, err
		}
		tag := comm.Tag{Step: rep, Kind: "calibration-" + DPAllReduceKind, Stage: 0, Micro: int(bytes)}
		start := tensor.Nanotime()
		if _, err := SumReplicas(ctx, dev, ep, tag, []*tensor.Tensor{grad}); err != nil {
			return 0, err
		}
		dev.Sync()
		if rep >= 0 {
			times = append(times, tensor.Nanotime()-start)
		}
	}
	return profiler.Median(times), nil
}

// timeGroupCollective returns the median over repetitions of the slowest
// rank's time for one all-gather or all-to-all in which every piece
// carries bytes, each repetition starting after a barrier.
func timeGroupCollective(ctx context.Context, g comm.Group, dev tensor.Device, kind string, bytes int64) (int64, error) {
	n, me := g.Size(), g.Rank()
	src := dev.Alloc(tensor.Comm, int(bytes/4))
	defer src.Release()
	dsts := make([]*tensor.Tensor, n)
	parts := make([]*tensor.Tensor, n)
	for p := range n {
		if p != me {
			dsts[p] = dev.Alloc(tensor.Comm, int(bytes/4))
			defer dsts[p].Release()
			parts[p] = src
		}
	}
	times := make([]int64, 0, calibrationReps)
	for rep := -1; rep < calibrationReps; rep++ {
		if err := g.Barrier(ctx); err != nil {
			return 0, err
		}
		tag := comm.Tag{Step: rep, Kind: "calibration-" + kind, Stage: 0, Micro: int(bytes)}
		start := tensor.Nanotime()
		var err error
		if kind == "allgather" {
			err = g.AllGather(ctx, tag, src, dsts)
		} else {
			err = g.AllToAll(ctx, tag, parts, dsts)
		}
		if err != nil {
			return 0, err
		}
		dev.Sync()
		took := tensor.Nanotime() - start
		all, err := g.Gather(ctx, 0, fmt.Appendf(nil, "%d", took))
		if err != nil {
			return 0, err
		}
		if rep >= 0 && me == 0 {
			var slowest int64
			for _, b := range all {
				var t int64
				if _, err := fmt.Sscan(string(b), &t); err != nil {
					return 0, fmt.Errorf("a rank's time %q: %w", b, err)
				}
				slowest = max(slowest, t)
			}
			times = append(times, slowest)
		}
	}
	return profiler.Median(times), nil
}
