//go:build openblas && cgo

package cpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
	"github.com/pipecast/pipecast/tensor/tensortest"
)

func TestOpenBLASSuite(t *testing.T) {
	tensortest.Run(t, func(index, threads int) tensor.Device {
		return cpu.NewOpenBLAS(tensor.Options{Index: index, Threads: threads})
	})
}

func TestOpenBLASRegistered(t *testing.T) {
	d, err := tensor.Open(cpu.OpenBLASBackendName, tensor.Options{Index: 1, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Name() != "openblas:1" || d.Threads() != 2 || d.Backend() != "openblas" {
		t.Errorf("got %s with %d threads on %s, want openblas:1 with 2 threads on openblas", d.Name(), d.Threads(), d.Backend())
	}
	// The plain backend keeps its own GEMM in this build too: its
	// products hold packing scratch, OpenBLAS's hold none of the
	// device's memory.
	c, err := tensor.Open(cpu.BackendName, tensor.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, dev := range []tensor.Device{d, c} {
		a := dev.Alloc(tensor.Activations, 64, 64)
		y := dev.Alloc(tensor.Activations, 64, 64)
		dev.ResetPeak()
		dev.Gemm(false, false, 1, a, a, 0, y)
		ws := dev.Memory().PeakBytes[tensor.Workspace]
		if native := dev == c; (ws > 0) != native {
			t.Errorf("%s: a 64×64×64 product held %d bytes of workspace; want some only on the native backend", dev.Name(), ws)
		}
		a.Release()
		y.Release()
	}
}

// TestOpenBLASGemmMatchesNative compares the openblas device's products
// with the native backend's on random shapes, transposes, alphas and
// betas, including shapes past the native GEMM's blocking (K > 256,
// M > 144) and ones too small to split over threads.
func TestOpenBLASGemmMatchesNative(t *testing.T) {
	const threads = 2
	ob := cpu.NewOpenBLAS(tensor.Options{Threads: threads})
	nat := cpu.New(tensor.Options{Index: 1, Threads: threads})
	defer ob.Close()
	defer nat.Close()
	rng := rand.New(rand.NewPCG(7, 8))
	dim := func() int {
		if rng.IntN(3) == 0 {
			return 1 + rng.IntN(8)
		}
		return 1 + rng.IntN(400)
	}
	cases := 40
	if testing.Short() {
		cases = 12
	}
	for i := range cases {
		m, n, k := dim(), dim(), dim()
		transA, transB := rng.IntN(2) == 1, rng.IntN(2) == 1
		alpha := []float32{1, -0.5, 2}[rng.IntN(3)]
		beta := []float32{0, 1, 0.25}[i%3]
		t.Run(fmt.Sprintf("%dx%dx%d,tA=%v,tB=%v,beta=%v", m, n, k, transA, transB, beta), func(t *testing.T) {
			aShape, bShape := []int{m, k}, []int{k, n}
			if transA {
				aShape = []int{k, m}
			}
			if transB {
				bShape = []int{n, k}
			}
			ah, bh, ch := openblasRand(rng, m*k), openblasRand(rng, k*n), openblasRand(rng, m*n)
			var got [2][]float32
			for j, dev := range []*cpu.Device{ob, nat} {
				a, b, c := dev.Alloc(tensor.Activations, aShape...), dev.Alloc(tensor.Activations, bShape...), dev.Alloc(tensor.Activations, m, n)
				dev.Upload(a, ah)
				dev.Upload(b, bh)
				dev.Upload(c, ch)
				dev.Gemm(transA, transB, alpha, a, b, beta, c)
				got[j] = make([]float32, m*n)
				dev.Download(got[j], c)
				a.Release()
				b.Release()
				c.Release()
			}
			// Both sum k products of values in [−1, 1) in float32, in
			// different orders: their difference grows like √k·ε.
			tol := 1e-5 * math.Sqrt(float64(k)+1) * float64(max(openblasAbs(alpha), 1))
			for e := range got[0] {
				if d := math.Abs(float64(got[0][e] - got[1][e])); d > tol*(1+math.Abs(float64(got[1][e]))) {
					t.Fatalf("element %d: openblas %v, native %v (|diff| %.3g, tolerance %.3g)", e, got[0][e], got[1][e], d, tol)
				}
			}
		})
	}
	for _, dev := range []*cpu.Device{ob, nat} {
		if live := dev.Memory().LiveTotalBytes; live != 0 {
			t.Errorf("%s: %d bytes live after the products", dev.Name(), live)
		}
	}
}

// TestOpenBLASConcurrentDevices runs products on two openblas devices of
// different thread counts at once: each must still get its own result,
// whatever thread count the other set last.
func TestOpenBLASConcurrentDevices(t *testing.T) {
	devs := []*cpu.Device{cpu.NewOpenBLAS(tensor.Options{Threads: 1}), cpu.NewOpenBLAS(tensor.Options{Index: 1, Threads: 3})}
	const m, n, k = 96, 80, 300
	rng := rand.New(rand.NewPCG(3, 4))
	ah, bh := openblasRand(rng, m*k), openblasRand(rng, k*n)
	want := make([]float64, m*n)
	for i := range m {
		for j := range n {
			for p := range k {
				want[i*n+j] += float64(ah[i*k+p]) * float64(bh[p*n+j])
			}
		}
	}
	errs := make(chan error, len(devs))
	for _, dev := range devs {
		go func() {
			defer dev.Close()
			a, b, c := dev.Alloc(tensor.Activations, m, k), dev.Alloc(tensor.Activations, k, n), dev.Alloc(tensor.Activations, m, n)
			defer a.Release()
			defer b.Release()
			defer c.Release()
			dev.Upload(a, ah)
			dev.Upload(b, bh)
			got := make([]float32, m*n)
			for range 20 {
				dev.Gemm(false, false, 1, a, b, 0, c)
				dev.Download(got, c)
				for e, w := range want {
					if math.Abs(float64(got[e])-w) > 1e-4*(1+math.Abs(w)) {
						errs <- fmt.Errorf("%s: element %d is %v, want %v", dev.Name(), e, got[e], w)
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range devs {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// openblasRand returns n values uniform in [−1, 1).
func openblasRand(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.Float64()*2 - 1)
	}
	return s
}

func openblasAbs(x float32) float64 { return math.Abs(float64(x)) }
