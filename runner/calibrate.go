package runner

import (
	"context"
	"fmt"
	"sync"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
)

// The calibration's transfer sizes: point-to-point from a few pages to a
// large activation, collectives at a small and a large size.
var (
	p2pCalibrationBytes        = []int64{4 << 10, 256 << 10, 4 << 20, 16 << 20}
	collectiveCalibrationBytes = []int64{256 << 10, 4 << 20}
	// The gradient sums of data-parallel replicas, from a small bucket to
	// the largest (DPBucketBytes), on both sides of where the sum's
	// buffers outgrow the caches: the predictor interpolates between
	// them.
	dpCalibrationBytes = []int64{256 << 10, 1 << 20, 4 << 20, 12 << 20, DPBucketBytes}
)

// DPAllReduceKind is the calibration's kind of the replicas' gradient
// sum (schedule.DPAllReduce): a sample's Bytes are each replica's
// gradients, its Devices the replicas.
const DPAllReduceKind = "dp-allreduce"

// calibrationReps is how many times each transfer is timed; a sample is
// the median, which shrugs off a descheduled repetition.
const calibrationReps = 5

// dpCalibrationReps returns how many times the replicas' gradient sum of
// bytes is timed: about 32 MiB summed in all, from 3 repetitions (the
// largest takes tens of milliseconds each) to 15 (the smallest take
// tenths of one, where a descheduled repetition weighs most).
func dpCalibrationReps(bytes int64) int {
	return int(min(max((32<<20+bytes-1)/bytes, 3), 15))
}

// Calibrate measures the transfer path of backend between scratch
// devices of threads threads each: point-to-point transfers between two
// devices, and all-gathers and all-to-alls among min(devices, 4) of them
// (at least 2), and the gradient sum of two data-parallel replicas (the
// runs' own code, SumReplicas), over a scratch in-process transport. It fits
// t = latency + bytes/bandwidth to the point-to-point samples. It takes a
// fraction of a second and leaves no tensor behind.
func Calibrate(ctx context.Context, backend string, threads, devices int) (*profiler.Calibration, error) {
	n := max(2, min(devices, 4))
	devs := make([]tensor.Device, 0, n)
	defer func() {
		for _, d := range devs {
			d.Close()
		}
	}()
	for i := range n {
		d, err := tensor.Open(backend, tensor.Options{Index: i, Threads: threads})
		if err != nil {
			return nil, fmt.Errorf("calibrate: %w", err)
		}
		devs = append(devs, d)
	}
	tr := comm.NewInProcessTransport(n)
	defer tr.Close()
	cal := &profiler.Calibration{}
	for _, b := range p2pCalibrationBytes {
		ns, err := timeP2P(ctx, tr, devs, b)
		if err != nil {
			return nil, fmt.Errorf("calibrate p2p of %d bytes: %w", b, err)
		}
		cal.Samples = append(cal.Samples, profiler.TransferSample{Kind: "p2p", Devices: 2, Bytes: b, Nanos: ns})
	}
	for _, kind := range []string{"allgather", "alltoall"} {
		for _, b := range collectiveCalibrationBytes {
			ns, err := timeCollective(ctx, tr, devs, kind, b)
			if err != nil {
				return nil, fmt.Errorf("calibrate %s of %d bytes: %w", kind, b, err)
			}
			cal.Samples = append(cal.Samples, profiler.TransferSample{Kind: kind, Devices: n, Bytes: b, Nanos: ns})
		}
	}
	for _, b := range dpCalibrationBytes {
		ns, err := timeReplicaSum(ctx, devs[:2], b)
		if err != nil {
			return nil, fmt.Errorf("calibrate %s of %d bytes: %w", DPAllReduceKind, b, err)
		}
		cal.Samples = append(cal.Samples, profiler.TransferSample{Kind: DPAllReduceKind, Devices: 2, Bytes: b, Nanos: ns})
	}
	cal.LatencyNanos, cal.BandwidthBytesPerSecond = fitTransfer(cal.Samples[:len(p2pCalibrationBytes)])
	return cal, nil
}

// timeReplicaSum returns the median time of summing bytes of gradients
// over devs as replicas (SumReplicas, every device at once, each timing
// its own part as a run's dp-allreduce event does; a sample is the mean
// over the devices), after one untimed repetition that faults the pages
// in.
func timeReplicaSum(ctx context.Context, devs []tensor.Device, bytes int64) (int64, error) {
	n := len(devs)
	tr := comm.NewInProcessTransport(n)
	defer tr.Close()
	grads := make([]*tensor.Tensor, n)
	for r, d := range devs {
		grads[r] = d.Alloc(tensor.Gradients, int(bytes/4))
	}
	defer func() {
		for _, g := range grads {
			g.Release()
		}
	}()
	errs, took := make([]error, n), make([]int64, n)
	reps := dpCalibrationReps(bytes)
	times := make([]int64, 0, reps)
	for rep := -1; rep < reps; rep++ {
		tag := comm.Tag{Step: rep, Kind: "calibration-" + DPAllReduceKind, Stage: 0, Micro: int(bytes)}
		var wg sync.WaitGroup
		for r := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := tensor.Nanotime()
				_, errs[r] = SumReplicas(ctx, devs[r], tr.Endpoint(r), tag, grads[r:r+1])
				devs[r].Sync()
				took[r] = tensor.Nanotime() - start
			}()
		}
		wg.Wait()
		var sum int64
		for r, err := range errs {
			if err != nil {
				return 0, err
			}
			sum += took[r]
		}
		if rep >= 0 {
			times = append(times, sum/int64(n))
		}
	}
	return profiler.Median(times), nil
}

// timeP2P returns the median time of sending bytes from device 0 to
// device 1 and receiving them there, after one untimed repetition that
// faults the pages in.
func timeP2P(ctx context.Context, tr *comm.InProcess, devs []tensor.Device, bytes int64) (int64, error) {
	src := devs[0].Alloc(tensor.Comm, int(bytes/4))
	defer src.Release()
	dst := devs[1].Alloc(tensor.Comm, int(bytes/4))
	defer dst.Release()
	from, to := tr.Endpoint(0), tr.Endpoint(1)
	times := make([]int64, 0, calibrationReps)
	for rep := -1; rep < calibrationReps; rep++ {
		tag := comm.Tag{Step: rep, Kind: "calibration", Stage: 0, Micro: int(bytes)}
		start := tensor.Nanotime()
		if err := from.Send(ctx, 1, tag, src); err != nil {
			return 0, err
		}
		if err := to.Recv(ctx, 0, tag, dst); err != nil {
			return 0, err
		}
		devs[1].Sync()
		if rep >= 0 {
			times = append(times, tensor.Nanotime()-start)
		}
	}
	return profiler.Median(times), nil
}

// timeCollective returns the median time of an all-gather or all-to-all
// among all devs in which every piece carries bytes: from the start of
// the first rank to the end of the last.
func timeCollective(ctx context.Context, tr *comm.InProcess, devs []tensor.Device, kind string, bytes int64) (int64, error) {
	n := len(devs)
	// srcs[r] is rank r's contribution, dsts[r][p] where it receives
	// rank p's piece (nil for its own).
	srcs := make([]*tensor.Tensor, n)
	dsts := make([][]*tensor.Tensor, n)
	for r, d := range devs {
		srcs[r] = d.Alloc(tensor.Comm, int(bytes/4))
		dsts[r] = make([]*tensor.Tensor, n)
		for p := range n {
			if p != r {
				dsts[r][p] = d.Alloc(tensor.Comm, int(bytes/4))
			}
		}
	}
	defer func() {
		for r := range n {
			srcs[r].Release()
			for _, t := range dsts[r] {
				t.Release()
			}
		}
	}()
	errs := make([]error, n)
	times := make([]int64, 0, calibrationReps)
	for rep := -1; rep < calibrationReps; rep++ {
		tag := comm.Tag{Step: rep, Kind: "calibration-" + kind, Stage: 0, Micro: int(bytes)}
		start := tensor.Nanotime()
		var wg sync.WaitGroup
		for r := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ep := tr.Endpoint(r)
				if kind == "allgather" {
					errs[r] = ep.AllGather(ctx, tag, srcs[r], dsts[r])
				} else {
					// Every rank sends its contribution to every other.
					parts := make([]*tensor.Tensor, n)
					for p := range n {
						if p != r {
							parts[p] = srcs[r]
						}
					}
					errs[r] = ep.AllToAll(ctx, tag, parts, dsts[r])
				}
				devs[r].Sync()
			}()
		}
		wg.Wait()
		end := tensor.Nanotime()
		for _, err := range errs {
			if err != nil {
				return 0, err
			}
		}
		if rep >= 0 {
			times = append(times, end-start)
		}
	}
	return profiler.Median(times), nil
}

// fitTransfer fits t = latency + bytes/bandwidth to the samples by least
// squares on the relative error (weights 1/t²): the sizes span four
// orders of magnitude, and an unweighted fit would let the largest
// transfer decide the latency alone, often making it negative. When the
// fit still gives no positive latency (the small transfers are all
// noise), the smallest transfer's time stands in for it: an upper bound.
// It returns the latency in nanoseconds and the bandwidth in bytes per
// second.
func fitTransfer(samples []profiler.TransferSample) (latencyNanos, bytesPerSecond float64) {
	var s, sx, sy, sxx, sxy float64
	for _, p := range samples {
		x, y := float64(p.Bytes), float64(max(p.Nanos, 1))
		w := 1 / (y * y)
		s += w
		sx += w * x
		sy += w * y
		sxx += w * x * x
		sxy += w * x * y
	}
	den := s*sxx - sx*sx
	var slope, icept float64 // nanoseconds per byte, nanoseconds
	if den > 0 {
		slope = (s*sxy - sx*sy) / den
		icept = (sy - slope*sx) / s
	}
	smallest, largest := samples[0], samples[0]
	for _, p := range samples {
		if p.Bytes < smallest.Bytes {
			smallest = p
		}
		if p.Bytes > largest.Bytes {
			largest = p
		}
	}
	if slope*float64(largest.Bytes) < 1 {
		// Larger transfers were not measurably slower (under a
		// nanosecond for the largest): noise swamped the copy, so the
		// largest transfer's average rate is the best estimate.
		slope = float64(max(largest.Nanos, 1)) / float64(largest.Bytes)
	}
	if icept <= 0 {
		icept = float64(max(smallest.Nanos, 1))
	}
	return icept, 1e9 / slope
}
