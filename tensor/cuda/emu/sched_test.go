//go:build cudaemu

package emu

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// blockShapes are blocks of 1 to 1024 threads in one to three
// dimensions, powers of two and not.
var blockShapes = [][3]uint32{{1, 1, 1}, {7, 1, 1}, {256, 1, 1}, {16, 16, 1}, {5, 3, 2}, {1024, 1, 1}, {8, 8, 16}}

func threadsOf(v [3]uint32) int { return int(v[0] * v[1] * v[2]) }

// orders are the two orders the scheduler runs blocks and threads in.
var orders = []struct {
	name     string
	reversed bool
}{{"forward", false}, {"reversed", true}}

func TestBlockSumWithBarriers(t *testing.T) {
	grid := [3]uint32{3, 2, 2}
	for _, block := range blockShapes {
		t.Run(fmt.Sprint(block), func(t *testing.T) {
			n, blocks := threadsOf(block), threadsOf(grid)
			out := make([]float32, blocks)
			if err := runSelftest(selftestSum, grid, block, out, 0); err != nil {
				t.Fatal(err)
			}
			for b, got := range out {
				want := float32(n*(n+1)/2 + n*b)
				if got != want {
					t.Errorf("block %d: got sum %v, want %v", b, got, want)
				}
			}
		})
	}
}

func TestEveryThreadRunsOnce(t *testing.T) {
	for _, tc := range []struct {
		name        string
		grid, block [3]uint32
	}{
		{"1x1", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}},
		{"grid-stride", [3]uint32{300, 1, 1}, [3]uint32{256, 1, 1}},
		{"3-D", [3]uint32{4, 3, 2}, [3]uint32{5, 3, 2}},
		{"tiles", [3]uint32{2, 5, 1}, [3]uint32{16, 16, 1}},
	} {
		for _, o := range orders {
			t.Run(o.name+"/"+tc.name, func(t *testing.T) {
				setReversed(o.reversed)
				defer setReversed(false)
				total := threadsOf(tc.grid) * threadsOf(tc.block)
				out := make([]float32, total+6)
				if err := runSelftest(selftestVisit, tc.grid, tc.block, out, int64(len(out))); err != nil {
					t.Fatal(err)
				}
				for g, c := range out[:total] {
					if c != 1 {
						t.Fatalf("thread %d ran %v times, want once", g, c)
					}
				}
				want := []float32{float32(tc.grid[0]), float32(tc.grid[1]), float32(tc.grid[2]),
					float32(tc.block[0]), float32(tc.block[1]), float32(tc.block[2])}
				if got := out[total:]; fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("gridDim, blockDim: got %v, want %v", got, want)
				}
			})
		}
	}
}

// TestBarrierHoldsEveryThread rotates a shared array, which comes out
// wrong if any thread runs past a barrier before the others reach it, in
// either order.
func TestBarrierHoldsEveryThread(t *testing.T) {
	grid := [3]uint32{2, 1, 1}
	for _, tc := range orders {
		for _, block := range blockShapes {
			t.Run(fmt.Sprintf("%s/%v", tc.name, block), func(t *testing.T) {
				setReversed(tc.reversed)
				defer setReversed(false)
				n := threadsOf(block)
				const rounds = 5
				out := make([]float32, threadsOf(grid)*n)
				if err := runSelftest(selftestRotate, grid, block, out, rounds); err != nil {
					t.Fatal(err)
				}
				for i, got := range out {
					if want := float32((i%n + rounds) % n); got != want {
						t.Fatalf("element %d: got %v, want %v", i, got, want)
					}
				}
			})
		}
	}
}

func TestReturnBeforeBarrierFails(t *testing.T) {
	for _, o := range orders {
		setReversed(o.reversed)
		err := runSelftest(selftestEarlyReturn, [3]uint32{2, 1, 1}, [3]uint32{64, 1, 1}, make([]float32, 64), 0)
		setReversed(false)
		if err == nil || !strings.Contains(err.Error(), "thread (1,0,0) of block (0,0,0) returned while 63 threads") {
			t.Fatalf("%s: got error %v, want one naming thread 1 of block 0 and the 63 waiting", o.name, err)
		}
	}
	// The scheduler recovers: the next launch on the same stacks runs.
	sum := make([]float32, 1)
	if err := runSelftest(selftestSum, [3]uint32{1, 1, 1}, [3]uint32{64, 1, 1}, sum, 0); err != nil || sum[0] != 64*65/2 {
		t.Errorf("after the failed launch: sum %v, error %v; want %v and none", sum[0], err, 64*65/2)
	}
}

func TestInvalidGeometryFails(t *testing.T) {
	for _, tc := range []struct {
		name        string
		grid, block [3]uint32
		want        string
	}{
		{"empty grid", [3]uint32{0, 1, 1}, [3]uint32{1, 1, 1}, "invalid grid"},
		{"grid y", [3]uint32{1, 65536, 1}, [3]uint32{1, 1, 1}, "invalid grid"},
		{"empty block", [3]uint32{1, 1, 1}, [3]uint32{32, 0, 1}, "invalid block"},
		{"1025 threads", [3]uint32{1, 1, 1}, [3]uint32{1025, 1, 1}, "invalid block"},
		{"2048 threads in 2-D", [3]uint32{1, 1, 1}, [3]uint32{64, 32, 1}, "invalid block"},
		{"block z", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 65}, "invalid block"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runSelftest(selftestVisit, tc.grid, tc.block, make([]float32, 8), 8)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestConcurrentLaunches launches from several goroutines at once, as the
// devices of a pipeline do: each OS thread has its own stacks and its own
// copy of the shared arrays.
func TestConcurrentLaunches(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			block := [3]uint32{uint32(64 + 32*g), 1, 1}
			n := threadsOf(block)
			for range 20 {
				out := make([]float32, 4)
				if err := runSelftest(selftestSum, [3]uint32{4, 1, 1}, block, out, 0); err != nil {
					errs <- err
					return
				}
				for b, got := range out {
					if want := float32(n*(n+1)/2 + n*b); got != want {
						errs <- fmt.Errorf("goroutine %d, block %d: got sum %v, want %v", g, b, got, want)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
