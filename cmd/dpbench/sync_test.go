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
	const replicas = 3
	sizes := []int{5, 1000, 37}
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
		for i := range sizes {
			if !slices.Equal(ar[r][i], ps[r][i]) || !slices.Equal(ar[r][i], ar[0][i]) {
				t.Fatalf("replica %d tensor %d: the sums differ", r, i)
			}
			if want := values[0][i][0] + values[1][i][0] + values[2][i][0]; ar[r][i][0] != want {
				t.Fatalf("replica %d tensor %d: sum %v, want %v", r, i, ar[r][i][0], want)
			}
		}
	}
}
