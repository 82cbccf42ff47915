package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
)

// The -sync comparison: the replicas' gradient sum as pipecast makes it
// (every replica sends its bucket to every other and adds theirs, an
// all-reduce) against a parameter server on the first replica (the
// others send it their buckets, it adds them all and sends every replica
// the sum), the synchronisation of "Performance modeling and analysis of
// distributed DNN training with parameter server". Both add the parts
// in replica order, so both give the same float32 sums; what differs is
// the time.

// psSum sums ts over ep's ranks through rank 0: the others send their
// tensors as one flat snapshot and receive the sum into them; rank 0
// receives the parts, adds them in rank order into its tensors, and
// sends the others the sum.
func psSum(ctx context.Context, dev tensor.Device, ep comm.Endpoint, tag comm.Tag, ts []*tensor.Tensor) error {
	total := 0
	for _, t := range ts {
		total += t.Len()
	}
	flat := dev.Alloc(tensor.Comm, total)
	defer flat.Release()
	R, me := ep.Size(), ep.Rank()
	if me != 0 {
		runner.EachPart(flat, ts, func(part, t *tensor.Tensor) { dev.Copy(part, t) })
		if err := ep.Send(ctx, 0, tag, flat); err != nil {
			return err
		}
		back := dev.Alloc(tensor.Comm, total)
		defer back.Release()
		if err := ep.Recv(ctx, 0, comm.Tag{Step: tag.Step, Kind: tag.Kind + "-sum", Stage: tag.Stage, Micro: tag.Micro}, back); err != nil {
			return err
		}
		runner.EachPart(back, ts, func(part, t *tensor.Tensor) { dev.Copy(t, part) })
		return nil
	}
	for r := 1; r < R; r++ {
		if err := ep.Recv(ctx, r, tag, flat); err != nil {
			return err
		}
		runner.EachPart(flat, ts, func(part, t *tensor.Tensor) { dev.Add(t, t, part) })
	}
	// The sum goes out as a snapshot: the in-process transport copies
	// it when the receiver asks.
	sum := dev.Alloc(tensor.Comm, total)
	defer sum.Release()
	runner.EachPart(sum, ts, func(part, t *tensor.Tensor) { dev.Copy(part, t) })
	for r := 1; r < R; r++ {
		if err := ep.Send(ctx, r, comm.Tag{Step: tag.Step, Kind: tag.Kind + "-sum", Stage: tag.Stage, Micro: tag.Micro}, sum); err != nil {
			return err
		}
	}
	return nil
}

// timeSync returns the median over reps of one sum of bytes of gradients
// in tensors of at most 2 MiB, in runner.Buckets, over replicas scratch
// devices, by the all-reduce (ps false) or the parameter server: the
// time from the start to when the last replica holds the sum.
func timeSync(ctx context.Context, o options, replicas int, bytes int64, ps bool, reps int) (float64, error) {
	devs := make([]tensor.Device, replicas)
	for r := range devs {
		d, err := tensor.Open(tensor.CPUBackend, tensor.Options{Index: r, Threads: o.threads})
		if err != nil {
			return 0, err
		}
		devs[r] = d
		defer d.Close()
	}
	var sizes []int64
	for b := bytes; b > 0; b -= 2 << 20 {
		sizes = append(sizes, min(b, 2<<20))
	}
	buckets := runner.Buckets(sizes)
	grads := make([][]*tensor.Tensor, replicas)
	for r, d := range devs {
		for _, s := range sizes {
			grads[r] = append(grads[r], d.Alloc(tensor.Gradients, int(s/4)))
		}
	}
	defer func() {
		for _, gs := range grads {
			for _, g := range gs {
				g.Release()
			}
		}
	}()
	tr := comm.NewInProcessTransport(replicas)
	defer tr.Close()
	errs := make([]error, replicas)
	var times []float64
	for rep := -1; rep < reps; rep++ {
		start := tensor.Nanotime()
		var wg sync.WaitGroup
		for r := range replicas {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i, b := range buckets {
					tag := comm.Tag{Step: rep, Kind: "sync", Stage: 0, Micro: i}
					ts := grads[r][b[0]:b[1]]
					if ps {
						errs[r] = psSum(ctx, devs[r], tr.Endpoint(r), tag, ts)
					} else {
						_, errs[r] = runner.SumReplicas(ctx, devs[r], tr.Endpoint(r), tag, ts)
					}
					if errs[r] != nil {
						return
					}
				}
				devs[r].Sync()
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return 0, err
			}
		}
		if rep >= 0 {
			times = append(times, float64(tensor.Nanotime()-start))
		}
	}
	return profiler.Median(times), nil
}

// compareSync times both synchronisations at every size and replica
// count, the two taking turns within each round, and prints the medians
// over the rounds and the parameter server's time over the all-reduce's.
func compareSync(ctx context.Context, o options, w io.Writer) error {
	type key struct {
		r int
		b float64
	}
	ar, ps := map[key][]float64{}, map[key][]float64{}
	rs := []int{2, 3, 4}
	start := time.Now()
	for round := range o.rounds {
		for _, r := range rs {
			for _, mib := range o.sizes {
				k := key{r, mib}
				bytes := int64(mib*(1<<20)) / 4 * 4
				// Alternate which goes first, round by round.
				for _, first := range []bool{round%2 == 0, round%2 != 0} {
					t, err := timeSync(ctx, o, r, bytes, first, 5)
					if err != nil {
						return err
					}
					if first {
						ps[k] = append(ps[k], t)
					} else {
						ar[k] = append(ar[k], t)
					}
				}
			}
		}
	}
	fmt.Fprintf(w, "gradient sums over R replicas, %d thread(s) each, %s (%d cores), %s; %d rounds in %v\n",
		o.threads, profiler.CPUModel(), runtime.NumCPU(), time.Now().UTC().Format("2006-01-02"), o.rounds, time.Since(start).Round(time.Second))
	fmt.Fprintf(w, "%3s %8s %17s %17s %10s %17s\n", "R", "MiB", "all-reduce (ms)", "param server (ms)", "ps / ar", "rounds' ps / ar")
	for _, r := range rs {
		for _, mib := range o.sizes {
			k := key{r, mib}
			a, p := profiler.Median(ar[k]), profiler.Median(ps[k])
			lo, hi := math.Inf(1), math.Inf(-1)
			for i := range ar[k] {
				q := ps[k][i] / ar[k][i]
				lo, hi = math.Min(lo, q), math.Max(hi, q)
			}
			fmt.Fprintf(w, "%3d %8.1f %17.3f %17.3f %9.2f× %8.2f…%.2f×\n", r, mib, a/1e6, p/1e6, p/a, lo, hi)
		}
	}
	return nil
}
