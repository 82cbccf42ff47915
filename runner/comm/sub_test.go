package comm_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
)

// TestSubEndpoint splits 6 ranks as a job of 2 replicas of 3-device
// pipelines splits them, into pipelines {0 1 2} {3 4 5} and replica sets
// {0 3} {1 4} {2 5}, and runs point-to-point transfers, all-gathers and
// all-to-alls in every subset at once: each must address the subset's
// ranks, deliver what its own members sent, and leave nothing in flight.
func TestSubEndpoint(t *testing.T) {
	const n, k = 6, 3
	devs := newDevices(t, n)
	tr := comm.NewInProcessTransport(n)
	// A misaddressed message leaves its receiver waiting: fail, not hang.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pipe := func(d int) []int { return []int{d / k * k, d/k*k + 1, d/k*k + 2} }
	reps := func(d int) []int { return []int{d % k, d%k + k} }
	var wg sync.WaitGroup
	for d := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dev := devs[d]
			for _, members := range [][]int{pipe(d), reps(d)} {
				ep := comm.SubEndpoint(tr.Endpoint(d), members)
				me, size := ep.Rank(), ep.Size()
				if members[me] != d || size != len(members) {
					t.Errorf("device %d: rank %d of %d in %v", d, me, size, members)
					return
				}
				tag := comm.Tag{Kind: "sub", Stage: members[0], Micro: size}
				// Point to point: to the next member, from the previous.
				out := alloc(dev, tensor.Comm, fill(d, 0, 5))
				if err := ep.Send(ctx, (me+1)%size, tag, out); err != nil {
					t.Error(err)
				}
				out.Release()
				in := dev.Alloc(tensor.Comm, 5)
				from := (me + size - 1) % size
				if err := ep.Recv(ctx, from, tag, in); err != nil {
					t.Error(err)
				}
				equal(t, "recv", tensor.ToHost(in), fill(members[from], 0, 5))
				in.Release()
				// All-gather.
				tag.Kind = "sub-gather"
				local := alloc(dev, tensor.Comm, fill(d, 1, 4))
				dsts := make([]*tensor.Tensor, size)
				for r := range dsts {
					if r != me {
						dsts[r] = dev.Alloc(tensor.Comm, 4)
					}
				}
				if err := ep.AllGather(ctx, tag, local, dsts); err != nil {
					t.Error(err)
				}
				for r, got := range dsts {
					if got != nil {
						equal(t, "all-gather", tensor.ToHost(got), fill(members[r], 1, 4))
						got.Release()
					}
				}
				local.Release()
				// All-to-all.
				tag.Kind = "sub-a2a"
				parts := make([]*tensor.Tensor, size)
				for r := range dsts {
					parts[r] = alloc(dev, tensor.Comm, fill(d, 2+members[r], 3))
					dsts[r] = dev.Alloc(tensor.Comm, 3)
				}
				if err := ep.AllToAll(ctx, tag, parts, dsts); err != nil {
					t.Error(err)
				}
				for r := range dsts {
					equal(t, "all-to-all", tensor.ToHost(dsts[r]), fill(members[r], 2+d, 3))
					dsts[r].Release()
					parts[r].Release()
				}
			}
		}()
	}
	wg.Wait()
	tr.Close()
	noLeak(t, devs, make([]int64, n))
}
