package models

import (
	"math"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// TestDropoutMicroBatchInvariance checks that a mini-batch drops the same
// units whether it runs whole or as two micro-batches whose Pass.Sample
// gives their first sample's index: masks depend on the sample, not on
// how the batch was split.
func TestDropoutMicroBatchInvariance(t *testing.T) {
	dev := newDevice(t)
	rng := newRand(8)
	d := NewDropout(0.5, 3)
	const first = 6 // the batch's first sample within the step's mini-batch
	x, _ := uploadRand(dev, tensor.Boundary, rng, 4, 3, 5)
	dy, _ := uploadRand(dev, tensor.Boundary, rng, 4, 3, 5)
	whole := &Pass{Dev: dev, Train: true, Grad: true, Seed: 1, Step: 7, Sample: first}
	y, ctx := d.Forward(whole, x)
	dx := d.Backward(whole, ctx, dy)
	wantY, wantDx := host(y), host(dx)
	y.Release()
	dx.Release()

	var gotY, gotDx []float64
	for _, half := range [][2]int{{0, 2}, {2, 4}} {
		xs, dys := x.Slice(half[0], half[1]), dy.Slice(half[0], half[1])
		p := *whole
		p.Sample = first + half[0]
		y, ctx := d.Forward(&p, xs)
		dx := d.Backward(&p, ctx, dys)
		gotY, gotDx = append(gotY, host(y)...), append(gotDx, host(dx)...)
		for _, t := range []*tensor.Tensor{xs, dys, y, dx} {
			t.Release()
		}
	}
	equalValues(t, "y of two micro-batches", gotY, wantY)
	equalValues(t, "dx of two micro-batches", gotDx, wantDx)

	// The mask is a function of the key: another step drops other units.
	next := *whole
	next.Step++
	next.Grad = false
	y, _ = d.Forward(&next, x)
	if same := countEqual(host(y), wantY); same == len(wantY) {
		t.Error("the next step drops the same units")
	}
	y.Release()
	x.Release()
	dy.Release()
	checkNoLeak(t, dev)
}

// TestDropoutRateAndIdentity checks that training drops about a fraction
// P of the units and scales the others by 1/(1 − P), and that evaluation
// returns x unchanged.
func TestDropoutRateAndIdentity(t *testing.T) {
	dev := newDevice(t)
	rng := newRand(9)
	const p = 0.3
	d := NewDropout(p, 1)
	x, xv := uploadRand(dev, tensor.Boundary, rng, 20, 500)
	y, _ := d.Forward(&Pass{Dev: dev, Train: true, Seed: 2}, x)
	dropped := 0
	for i, v := range host(y) {
		switch {
		case v == 0:
			dropped++
		case math.Abs(v-xv[i]/(1-p)) > 1e-6*math.Abs(v):
			t.Fatalf("element %d: got %v, want 0 or %v", i, v, xv[i]/(1-p))
		}
	}
	// A binomial count: 5 standard errors of √(n·p·(1−p)) ≈ 102.
	n := float64(len(xv))
	if se := math.Sqrt(n * p * (1 - p)); math.Abs(float64(dropped)-n*p) > momentSE*se {
		t.Errorf("dropped %d of %v units, want %v ± %.0f", dropped, n, n*p, momentSE*se)
	}
	y.Release()
	y, _ = d.Forward(&Pass{Dev: dev, Seed: 2}, x)
	equalValues(t, "y in evaluation", host(y), xv)
	y.Release()
	x.Release()
	checkNoLeak(t, dev)
}

func countEqual(a, b []float64) int {
	n := 0
	for i := range a {
		if a[i] == b[i] {
			n++
		}
	}
	return n
}
