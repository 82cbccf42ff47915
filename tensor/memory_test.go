package tensor_test

import (
	"sync"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

func TestCategoryString(t *testing.T) {
	tests := []struct {
		name string
		c    tensor.Category
		want string
	}{
		{name: "weights", c: tensor.Weights, want: "weights"},
		{name: "gradients", c: tensor.Gradients, want: "gradients"},
		{name: "optimizer", c: tensor.Optimizer, want: "optimizer"},
		{name: "activations", c: tensor.Activations, want: "activations"},
		{name: "boundary", c: tensor.Boundary, want: "boundary"},
		{name: "comm", c: tensor.Comm, want: "comm"},
		{name: "workspace", c: tensor.Workspace, want: "workspace"},
		{name: "past the end", c: tensor.NumCategories, want: "category(7)"},
		{name: "negative", c: -1, want: "category(-1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.String(); got != tc.want {
				t.Errorf("Category(%d).String(): got %q, want %q", int(tc.c), got, tc.want)
			}
		})
	}
}

func TestCategoryRoundTrip(t *testing.T) {
	cs := tensor.Categories()
	if len(cs) != int(tensor.NumCategories) {
		t.Fatalf("Categories: got %d, want %d", len(cs), tensor.NumCategories)
	}
	for i, c := range cs {
		if c != tensor.Category(i) {
			t.Errorf("Categories()[%d]: got %v, want report order", i, c)
		}
		got, err := tensor.ParseCategory(c.String())
		if err != nil || got != c {
			t.Errorf("ParseCategory(%q): got %v, %v; want %v", c.String(), got, err, c)
		}
	}
}

func TestParseCategoryUnknown(t *testing.T) {
	for _, s := range []string{"", "Weights", "weight", "category(7)", "activations "} {
		if c, err := tensor.ParseCategory(s); err == nil {
			t.Errorf("ParseCategory(%q): got %v, want an error", s, c)
		}
	}
}

func TestMemCounterPeaks(t *testing.T) {
	var m tensor.MemCounter
	steps := []struct {
		name               string
		do                 func()
		live, peak         [tensor.NumCategories]int64
		liveTotal, peakTot int64
		allocs             int64
	}{
		{name: "alloc weights", do: func() { m.Alloc(tensor.Weights, 100) },
			live: cat(tensor.Weights, 100), peak: cat(tensor.Weights, 100), liveTotal: 100, peakTot: 100, allocs: 1},
		{name: "alloc activations", do: func() { m.Alloc(tensor.Activations, 50) },
			live:      add(cat(tensor.Weights, 100), cat(tensor.Activations, 50)),
			peak:      add(cat(tensor.Weights, 100), cat(tensor.Activations, 50)),
			liveTotal: 150, peakTot: 150, allocs: 2},
		{name: "free activations keeps their peak", do: func() { m.Free(tensor.Activations, 50) },
			live:      cat(tensor.Weights, 100),
			peak:      add(cat(tensor.Weights, 100), cat(tensor.Activations, 50)),
			liveTotal: 100, peakTot: 150, allocs: 2},
		{name: "smaller activations stay under the peak", do: func() { m.Alloc(tensor.Activations, 30) },
			live:      add(cat(tensor.Weights, 100), cat(tensor.Activations, 30)),
			peak:      add(cat(tensor.Weights, 100), cat(tensor.Activations, 50)),
			liveTotal: 130, peakTot: 150, allocs: 3},
		{name: "move activations to boundary", do: func() { m.Move(tensor.Activations, tensor.Boundary, 30) },
			live:      add(cat(tensor.Weights, 100), cat(tensor.Boundary, 30)),
			peak:      add(add(cat(tensor.Weights, 100), cat(tensor.Activations, 50)), cat(tensor.Boundary, 30)),
			liveTotal: 130, peakTot: 150, allocs: 3},
		// The total's peak is the peak of the sum: workspace at 40 with
		// 130 live makes 170, more than the earlier 150, though no
		// category reached a new peak before.
		{name: "workspace raises the total's peak", do: func() { m.Alloc(tensor.Workspace, 40) },
			live:      add(add(cat(tensor.Weights, 100), cat(tensor.Boundary, 30)), cat(tensor.Workspace, 40)),
			peak:      add(add(add(cat(tensor.Weights, 100), cat(tensor.Activations, 50)), cat(tensor.Boundary, 30)), cat(tensor.Workspace, 40)),
			liveTotal: 170, peakTot: 170, allocs: 4},
		{name: "free workspace", do: func() { m.Free(tensor.Workspace, 40) },
			live:      add(cat(tensor.Weights, 100), cat(tensor.Boundary, 30)),
			peak:      add(add(add(cat(tensor.Weights, 100), cat(tensor.Activations, 50)), cat(tensor.Boundary, 30)), cat(tensor.Workspace, 40)),
			liveTotal: 130, peakTot: 170, allocs: 4},
		{name: "reset peaks to live", do: m.ResetPeak,
			live:      add(cat(tensor.Weights, 100), cat(tensor.Boundary, 30)),
			peak:      add(cat(tensor.Weights, 100), cat(tensor.Boundary, 30)),
			liveTotal: 130, peakTot: 130, allocs: 4},
		{name: "peak after reset", do: func() { m.Alloc(tensor.Gradients, 10); m.Free(tensor.Gradients, 10) },
			live:      add(cat(tensor.Weights, 100), cat(tensor.Boundary, 30)),
			peak:      add(add(cat(tensor.Weights, 100), cat(tensor.Boundary, 30)), cat(tensor.Gradients, 10)),
			liveTotal: 130, peakTot: 140, allocs: 5},
	}
	// The steps build on each other, so they run in order, as one test.
	for _, s := range steps {
		s.do()
		got := m.Stats()
		if got.LiveBytes != s.live || got.PeakBytes != s.peak || got.LiveTotalBytes != s.liveTotal ||
			got.PeakTotalBytes != s.peakTot || got.Allocs != s.allocs {
			t.Errorf("%s: got live %v total %d, peak %v total %d, %d allocs;\nwant live %v total %d, peak %v total %d, %d allocs",
				s.name, got.LiveBytes, got.LiveTotalBytes, got.PeakBytes, got.PeakTotalBytes, got.Allocs,
				s.live, s.liveTotal, s.peak, s.peakTot, s.allocs)
		}
	}
}

// cat returns per-category bytes with only c set.
func cat(c tensor.Category, bytes int64) [tensor.NumCategories]int64 {
	var a [tensor.NumCategories]int64
	a[c] = bytes
	return a
}

// add sums per-category bytes.
func add(a, b [tensor.NumCategories]int64) [tensor.NumCategories]int64 {
	for i := range a {
		a[i] += b[i]
	}
	return a
}

func TestMemCounterConcurrent(t *testing.T) {
	// Several goroutines allocate, move and free at once, as the devices of
	// one process report to a shared view; the race detector checks the
	// locking and the totals check that no update was lost.
	const (
		goroutines = 8
		rounds     = 500
		bytes      = 64
	)
	var m tensor.MemCounter
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				m.Alloc(tensor.Activations, bytes)
				m.Move(tensor.Activations, tensor.Boundary, bytes)
				_ = m.Stats()
				m.Free(tensor.Boundary, bytes)
			}
		}()
	}
	wg.Wait()
	s := m.Stats()
	if s.LiveTotalBytes != 0 || s.LiveBytes != [tensor.NumCategories]int64{} {
		t.Errorf("live after every free: got total %d, by category %v; want 0", s.LiveTotalBytes, s.LiveBytes)
	}
	if s.Allocs != goroutines*rounds {
		t.Errorf("allocs: got %d, want %d", s.Allocs, goroutines*rounds)
	}
	// Each goroutine holds at most one allocation at a time.
	for _, c := range []tensor.Category{tensor.Activations, tensor.Boundary} {
		if p := s.PeakBytes[c]; p < bytes || p > goroutines*bytes {
			t.Errorf("peak %v: got %d, want between %d and %d", c, p, bytes, goroutines*bytes)
		}
	}
	if s.PeakTotalBytes < bytes || s.PeakTotalBytes > goroutines*bytes {
		t.Errorf("peak total: got %d, want between %d and %d", s.PeakTotalBytes, bytes, goroutines*bytes)
	}
}
