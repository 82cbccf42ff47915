package main

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
)

// TestSyncsAgree checks that the parameter server and pipecast's
// all-reduce give every replica the same float32 sums, bit for bit, so
// that the -sync comparison times the same result two ways.
func TestSyncsAgree(t *testing.T) {
	for _, c := range []struct {
		replicas int
		sizes    []int
	}{
		{2, []int{5, 1000, 37}},
		{3, []int{5, 1000, 37}}, // chunks across the tensors' bounds
		{4, []int{3, 1042}},
		{3, []int{2}}, // fewer values than replicas: whole buckets
	} {
		syncsAgree(t, c.replicas, c.sizes)
	}
}

// syncsAgree checks TestSyncsAgree's claim for replicas replicas of
// tensors of the given sizes: every sum equal to the float32 sum in rank
// order, computed here.
func syncsAgree(t *testing.T, replicas int, sizes []int) {
	rng := rand.New(rand.NewPCG(1, 2))
	values := make([][][]float32, replicas)
	for r := range values {
		for _, n := range sizes {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
			values[r] = append(values[r], v)
		}
	}
	sum := func(ps bool) [][][]float32 {
		devs := make([]tensor.Device, replicas)
		for r := range devs {
			d, err := tensor.Open(tensor.CPUBackend, tensor.Options{Index: r, Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			devs[r] = d
		}
		tr := comm.NewInProcessTransport(replicas)
		defer tr.Close()
		out := make([][][]float32, replicas)
		var wg sync.WaitGroup
		for r := range replicas {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var ts []*tensor.Tensor
				for _, v := range values[r] {
					ts = append(ts, tensor.FromHost(devs[r], tensor.Gradients, tensor.Shape{len(v)}, v))
				}
				tag := comm.Tag{Kind: "test"}
				var err error
				if ps {
					err = psSum(context.Background(), devs[r], tr.Endpoint(r), tag, ts)
				} else {
					_, err = runner.SumReplicas(context.Background(), devs[r], tr.Endpoint(r), tag, ts)
				}
				if err != nil {
					t.Error(err)
				}
				for _, x := range ts {
					out[r] = append(out[r], tensor.ToHost(x))
					x.Release()
				}
			}()
		}
		wg.Wait()
		return out
	}
	ar, ps := sum(false), sum(true)
	for r := range replicas {
		for i, n := range sizes {
			want := make([]float32, n)
			for j := range want {
				acc := values[0][i][j]
				for q := 1; q < replicas; q++ {
					acc += values[q][i][j]
				}
				want[j] = acc
			}
			if !slices.Equal(ar[r][i], want) || !slices.Equal(ps[r][i], want) {
				t.Fatalf("R=%d, sizes %v: replica %d tensor %d: the sums differ from the sum in rank order", replicas, sizes, r, i)
			}
		}
	}
}
