package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/tensor"
)

// Both sides keep their threads polling for a while after a product so
// that back-to-back products start at once — OpenBLAS for 2^28 cycles
// (its THREAD_TIMEOUT, a tenth of a second at 2.6 GHz), pipecast's pool
// for 0.5 ms — and a side's polling threads would take the cores from the
// other side's repetition that follows: each repetition waits for the
// previous side's threads to park first. Then each side runs its product
// untimed for a while to wake its own threads, so that each is timed at
// its best, as in a training step's stream of products.
const (
	openblasSettle = 120 * time.Millisecond
	pipecastSettle = 2 * time.Millisecond
)

// warmTime is the least time each side runs its product untimed before a
// repetition (see warm in bench.time).
const warmTime = 20 * time.Millisecond

// side is one implementation under test.
type side struct {
	name string
	dev  tensor.Device
	// settle is how long the side's threads poll after a product before
	// they park: the pause the other side waits after it.
	settle time.Duration
}

// timing is a product's median seconds per call on each side.
type timing []float64

// bench times products on every side.
type bench struct {
	sides    []side
	o        options
	progress io.Writer
	data     []float32 // random operand values, shared by all products
}

// time returns p's median seconds per call on each side. Each side gets
// its own operands holding the same values; a repetition runs the
// product as many times as fit in o.minTime (the count calibrated on the
// first side's warm-up call) and the sides take turns going first.
func (b *bench) time(p product) (timing, error) {
	fmt.Fprintf(b.progress, "\r\033[K%s", p)
	aShape, bShape := []int{p.m, p.k}, []int{p.k, p.n}
	if p.transA {
		aShape = []int{p.k, p.m}
	}
	if p.transB {
		bShape = []int{p.n, p.k}
	}
	need := max(p.m*p.k, p.k*p.n, p.m*p.n)
	if len(b.data) < need {
		rng := rand.New(rand.NewPCG(1, 2))
		b.data = make([]float32, need)
		for i := range b.data {
			b.data[i] = float32(rng.Float64()*2 - 1)
		}
	}
	type operands struct{ a, b, c *tensor.Tensor }
	ops := make([]operands, len(b.sides))
	for i, s := range b.sides {
		x := operands{s.dev.Alloc(tensor.Activations, aShape...), s.dev.Alloc(tensor.Activations, bShape...), s.dev.Alloc(tensor.Activations, p.m, p.n)}
		s.dev.Upload(x.a, b.data[:x.a.Len()])
		s.dev.Upload(x.b, b.data[:x.b.Len()])
		ops[i] = x
	}
	defer func() {
		for _, x := range ops {
			x.a.Release()
			x.b.Release()
			x.c.Release()
		}
	}()
	call := func(i int) {
		b.sides[i].dev.Gemm(p.transA, p.transB, 1, ops[i].a, ops[i].b, 0, ops[i].c)
	}
	// warm runs side i's product untimed until its threads are awake: on
	// a VM the first product after an idle pause took 4–9 ms where the
	// next took 0.9 (an idle virtual CPU wakes at a timer tick).
	warm := func(i int) {
		start := time.Now()
		for n := 0; n < 3 || time.Since(start) < warmTime; n++ {
			call(i)
		}
	}
	// The calls per repetition are calibrated on the first side, awake:
	// the fastest of a few calls, so that one slow call does not shrink
	// every repetition to a single call.
	warm(0)
	fastest := time.Duration(1<<63 - 1)
	for range 3 {
		start := time.Now()
		call(0)
		fastest = min(fastest, time.Since(start))
	}
	iters := max(1, int(min(b.o.minTime/max(fastest, time.Microsecond), 10000)))
	samples := make([][]float64, len(b.sides))
	for r := range b.o.reps {
		for j := range b.sides {
			i := (j + r) % len(b.sides)
			// A collection running beside a repetition would take one of
			// its threads' processors: collect first, while nothing is
			// timed (the repetitions allocate nothing).
			runtime.GC()
			if len(b.sides) > 1 {
				prev := b.sides[(i+len(b.sides)-1)%len(b.sides)]
				time.Sleep(prev.settle)
			}
			warm(i)
			// The repetition's median call, not its mean: one call
			// stretched by the machine (a descheduled thread, a virtual
			// CPU woken late) must not stand for the product's speed.
			calls := make([]float64, 0, iters)
			for range iters {
				start := time.Now()
				call(i)
				calls = append(calls, time.Since(start).Seconds())
			}
			samples[i] = append(samples[i], profiler.Median(calls))
		}
	}
	tm := make(timing, len(b.sides))
	for i, s := range samples {
		tm[i] = profiler.Median(s)
	}
	if len(b.sides) > 1 {
		if err := sameResult(b.sides, ops[0].c, ops[1].c, p.k); err != nil {
			return nil, fmt.Errorf("%v: %w", p, err)
		}
	}
	return tm, nil
}

// sameResult checks that both sides computed the same product, up to
// float32 rounding of a k-term sum of values in [−1, 1), so that a table
// never compares a fast wrong answer.
func sameResult(sides []side, c0, c1 *tensor.Tensor, k int) error {
	x, y := make([]float32, c0.Len()), make([]float32, c1.Len())
	sides[0].dev.Download(x, c0)
	sides[1].dev.Download(y, c1)
	tol := 1e-5 * math.Sqrt(float64(k)+1)
	for i := range x {
		if d := math.Abs(float64(x[i] - y[i])); d > tol*(1+math.Abs(float64(y[i]))) || math.IsNaN(float64(x[i])) {
			return fmt.Errorf("element %d: %s %v, %s %v", i, sides[0].name, x[i], sides[1].name, y[i])
		}
	}
	return nil
}
