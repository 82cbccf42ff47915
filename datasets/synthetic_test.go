package datasets

import (
	"math"
	"slices"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// readAll reads the given indices of ds into fresh buffers: sample k's
// L labels at [k·L, (k+1)·L).
func readAll(t *testing.T, ds Dataset, indices []int) ([]float32, []int32) {
	t.Helper()
	x := make([]float32, len(indices)*ds.Shape().Numel())
	labels := make([]int32, len(indices)*ds.LabelsPerSample())
	if err := ds.Read(indices, x, labels); err != nil {
		t.Fatalf("read %v: %v", indices, err)
	}
	return x, labels
}

// span returns the indices lo … hi−1.
func span(lo, hi int) []int {
	s := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		s = append(s, i)
	}
	return s
}

var syntheticShapes = []struct {
	name  string
	shape tensor.Shape
}{
	{"cifar", tensor.Shape{3, 32, 32}},
	{"mnist", tensor.Shape{1, 28, 28}},
	{"flat", tensor.Shape{784}},
	{"tiny-image", tensor.Shape{2, 5, 3}},    // fewer pixels than knots
	{"wide-flat", tensor.Shape{5000}},        // interpolated features
	{"odd-image", tensor.Shape{3, 11, 17}},   // knots between pixels
	{"single-pixel", tensor.Shape{4, 1, 1}},  // no spatial extent at all
	{"single-feature", tensor.Shape{1}},      // one value per sample
	{"rank4", tensor.Shape{2, 2, 6, 6}},      // leading dims fold into channels
	{"flat-tiny", tensor.Shape{7}},           // one knot per feature
	{"image-one-row", tensor.Shape{3, 1, 9}}, // a single row
}

func TestSyntheticDeterministic(t *testing.T) {
	for _, tc := range syntheticShapes {
		t.Run(tc.name, func(t *testing.T) {
			a := Synthetic(tc.shape, 10, 100, 7)
			b := Synthetic(tc.shape, 10, 100, 7)
			indices := []int{99, 3, 42, 3, 0}
			xa, la := readAll(t, a, indices)
			xb, lb := readAll(t, b, indices)
			if !slices.Equal(xa, xb) || !slices.Equal(la, lb) {
				t.Fatal("two sets with the same seed read different data")
			}
			// A sample does not depend on what else is read with it.
			n := tc.shape.Numel()
			for i, idx := range indices {
				x1, l1 := readAll(t, a, []int{idx})
				if !slices.Equal(x1, xa[i*n:(i+1)*n]) || l1[0] != la[i] {
					t.Fatalf("sample %d read alone differs from sample %d read in a batch", idx, i)
				}
			}
			if !slices.Equal(xa[n:2*n], xa[3*n:4*n]) {
				t.Fatal("sample 3 read twice differs")
			}
			c := Synthetic(tc.shape, 10, 100, 8)
			xc, _ := readAll(t, c, indices)
			if slices.Equal(xa, xc) {
				t.Fatal("seeds 7 and 8 give the same data")
			}
			for _, v := range xa {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("value %v", v)
				}
			}
		})
	}
}

func TestSyntheticLabelBalance(t *testing.T) {
	tests := []struct {
		name             string
		classes, samples int
	}{
		{"whole blocks", 10, 1000},
		{"partial block", 7, 100},
		{"one class", 1, 5},
		{"more classes than samples", 50, 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds := Synthetic(tensor.Shape{4}, tc.classes, tc.samples, 3)
			_, labels := readAll(t, ds, span(0, tc.samples))
			counts := make([]int, tc.classes)
			for _, l := range labels {
				if l < 0 || int(l) >= tc.classes {
					t.Fatalf("label %d of %d classes", l, tc.classes)
				}
				counts[l]++
			}
			lo, hi := tc.samples/tc.classes, (tc.samples+tc.classes-1)/tc.classes
			for c, k := range counts {
				if k < lo || k > hi {
					t.Fatalf("class %d has %d samples, want %d…%d (counts %v)", c, k, lo, hi, counts)
				}
			}
		})
	}
	// Labels are shuffled between blocks, not the same cycle every time.
	ds := Synthetic(tensor.Shape{4}, 10, 1000, 3)
	_, labels := readAll(t, ds, span(0, 1000))
	same := 0
	for b := 1; b < 100; b++ {
		if labels[10*b] == labels[0] {
			same++
		}
	}
	if same > 40 {
		t.Fatalf("the first label of a block equals block 0's in %d of 99 blocks", same)
	}
}

// classMeans returns the mean sample of each class over the given indices.
func classMeans(x []float32, labels []int32, n, classes int) [][]float64 {
	means := make([][]float64, classes)
	counts := make([]int, classes)
	for c := range means {
		means[c] = make([]float64, n)
	}
	for i, l := range labels {
		counts[l]++
		for k, v := range x[i*n : (i+1)*n] {
			means[l][k] += float64(v)
		}
	}
	for c := range means {
		for k := range means[c] {
			means[c][k] /= float64(max(counts[c], 1))
		}
	}
	return means
}

func sqDist(a []float32, b []float64) float64 {
	var s float64
	for i, v := range a {
		d := float64(v) - b[i]
		s += d * d
	}
	return s
}

// TestSyntheticLearnable fits a nearest-class-mean classifier on 300
// samples and scores it on 300 others: far above the 10 % of chance, the
// classes are learnable from data. The values' moments are checked too.
func TestSyntheticLearnable(t *testing.T) {
	const classes, train, test = 10, 300, 300
	for _, tc := range syntheticShapes {
		if tc.shape.Numel() < 4 {
			continue // one or two values cannot separate ten classes
		}
		t.Run(tc.name, func(t *testing.T) {
			n := tc.shape.Numel()
			ds := Synthetic(tc.shape, classes, train+test, 11)
			x, labels := readAll(t, ds, span(0, train+test))

			// Mean 0 and standard deviation about 1 over all values.
			// With few template values (small shapes) the class
			// templates' own spread dominates, hence the wide bounds.
			var sum, sq float64
			for _, v := range x {
				sum += float64(v)
				sq += float64(v) * float64(v)
			}
			mean := sum / float64(len(x))
			std := math.Sqrt(sq/float64(len(x)) - mean*mean)
			if n >= 100 && (math.Abs(mean) > 0.1 || math.Abs(std-1) > 0.1) {
				t.Errorf("mean %.3f, std %.3f, want about 0 and 1", mean, std)
			}

			means := classMeans(x[:train*n], labels[:train], n, classes)
			correct := 0
			for i := train; i < train+test; i++ {
				best, bestD := -1, math.Inf(1)
				for c := range means {
					if d := sqDist(x[i*n:(i+1)*n], means[c]); d < bestD {
						best, bestD = c, d
					}
				}
				if best == int(labels[i]) {
					correct++
				}
			}
			acc := float64(correct) / test
			// Samples of a few values carry too little signal to
			// separate ten classes well; they must still beat chance
			// (0.10, with a standard error of 0.017 over 300 samples)
			// clearly.
			var want float64
			switch {
			case n >= 100:
				want = 0.95
			case n >= 20:
				want = 0.6
			case n >= 4:
				want = 0.2
			}
			if acc < want {
				t.Fatalf("nearest-mean accuracy %.2f, want ≥ %.2f (chance 0.10)", acc, want)
			}
		})
	}
}

// TestSyntheticNotTrivial checks that one element alone says little: the
// class template explains about a quarter of a value's variance
// (syntheticSignal²), so a network must combine many elements.
func TestSyntheticNotTrivial(t *testing.T) {
	shape := tensor.Shape{3, 16, 16}
	n := shape.Numel()
	ds := Synthetic(shape, 4, 2000, 5)
	x, labels := readAll(t, ds, span(0, 2000))
	means := classMeans(x, labels, n, 4)
	var resid, total float64
	for i, l := range labels {
		for k, v := range x[i*n : (i+1)*n] {
			d := float64(v) - means[l][k]
			resid += d * d
			total += float64(v) * float64(v)
		}
	}
	explained := 1 - resid/total
	if explained < 0.1 || explained > 0.45 {
		t.Fatalf("the class explains %.2f of the variance, want about %.2f", explained, syntheticSignal*syntheticSignal)
	}
}

func TestSyntheticTemplatesDiffer(t *testing.T) {
	shape := tensor.Shape{3, 32, 32}
	n := shape.Numel()
	ds := Synthetic(shape, 10, 10, 1)
	// Template c is the set's knots for class c; read it through samples
	// with the noise averaged away instead of poking at the knots.
	x, labels := readAll(t, Synthetic(shape, 10, 2000, 1), span(0, 2000))
	means := classMeans(x, labels, n, 10)
	for a := 0; a < 10; a++ {
		for b := a + 1; b < 10; b++ {
			var dot, na, nb float64
			for k := range means[a] {
				dot += means[a][k] * means[b][k]
				na += means[a][k] * means[a][k]
				nb += means[b][k] * means[b][k]
			}
			if cos := dot / math.Sqrt(na*nb); cos > 0.6 {
				t.Errorf("templates of classes %d and %d have cosine %.2f", a, b, cos)
			}
		}
	}
	if ds.Len() != 10 || ds.Classes() != 10 || !ds.Shape().Equal(shape) || ds.Name() != "synthetic" {
		t.Fatalf("got %s of %d samples, %d classes, shape %v", ds.Name(), ds.Len(), ds.Classes(), ds.Shape())
	}
}

func TestSyntheticReadErrors(t *testing.T) {
	ds := Synthetic(tensor.Shape{2, 3}, 3, 10, 0)
	tests := []struct {
		name    string
		indices []int
		x       int
		labels  int
	}{
		{"index past the end", []int{10}, 6, 1},
		{"negative index", []int{-1}, 6, 1},
		{"short x", []int{0, 1}, 11, 2},
		{"short labels", []int{0, 1}, 12, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := ds.Read(tc.indices, make([]float32, tc.x), make([]int32, tc.labels)); err == nil {
				t.Fatal("got no error")
			}
		})
	}
}

func TestSyntheticPanics(t *testing.T) {
	tests := []struct {
		name             string
		shape            tensor.Shape
		classes, samples int
	}{
		{"empty shape", tensor.Shape{}, 2, 2},
		{"zero dim", tensor.Shape{3, 0, 2}, 2, 2},
		{"no classes", tensor.Shape{3}, 0, 2},
		{"no samples", tensor.Shape{3}, 2, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			Synthetic(tc.shape, tc.classes, tc.samples, 0)
		})
	}
}

func TestGaussMoments(t *testing.T) {
	rng := newSplitMix(42)
	const n = 200000
	var sum, sq, fourth float64
	for i := 0; i < n; i++ {
		v := float64(rng.gauss())
		sum += v
		sq += v * v
		fourth += v * v * v * v
	}
	mean, variance := sum/n, sq/n
	// Standard errors: 1/√n ≈ 0.0022 for the mean, √(2/n) ≈ 0.0032 for
	// the variance; allow about five of them.
	if math.Abs(mean) > 0.012 || math.Abs(variance-1) > 0.016 {
		t.Fatalf("mean %.4f, variance %.4f, want 0 and 1", mean, variance)
	}
	// Irwin–Hall of four has kurtosis 3 − 1.2/4 = 2.7, close to the
	// normal's 3.
	if k := fourth / n; math.Abs(k-2.7) > 0.05 {
		t.Fatalf("fourth moment %.3f, want 2.7", k)
	}
}

func TestIntn(t *testing.T) {
	rng := newSplitMix(1, 2)
	counts := make([]int, 7)
	for i := 0; i < 70000; i++ {
		v := rng.intn(7)
		if v < 0 || v >= 7 {
			t.Fatalf("intn(7) = %d", v)
		}
		counts[v]++
	}
	for v, c := range counts {
		// 10000 expected, standard deviation about 93.
		if c < 9500 || c > 10500 {
			t.Fatalf("value %d drawn %d times of 70000, counts %v", v, c, counts)
		}
	}
	if rng.intn(1) != 0 {
		t.Fatal("intn(1) is not 0")
	}
}

func TestAxisInterp(t *testing.T) {
	tests := []struct {
		name     string
		n, knots int
	}{
		{"identity", 5, 5},
		{"upsample", 32, 8},
		{"odd", 11, 8},
		{"one knot", 6, 1},
		{"one position", 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAxisInterp(tc.n, tc.knots)
			for p := 0; p < tc.n; p++ {
				if a.lo[p] < 0 || int(a.hi[p]) >= tc.knots || a.lo[p] > a.hi[p] || a.t[p] < 0 || a.t[p] >= 1 {
					t.Fatalf("position %d: lo %d hi %d t %v", p, a.lo[p], a.hi[p], a.t[p])
				}
				// The position in knot units is lo + t.
				if tc.n > 1 && tc.knots > 1 {
					want := float64(p) * float64(tc.knots-1) / float64(tc.n-1)
					if got := float64(a.lo[p]) + float64(a.t[p]); math.Abs(got-want) > 1e-6 {
						t.Fatalf("position %d at knot %v, want %v", p, got, want)
					}
				}
			}
			if tc.n > 1 && tc.knots > 1 && (a.lo[tc.n-1] != int32(tc.knots-1) || a.t[tc.n-1] != 0) {
				t.Fatalf("last position at knot %d + %v, want the last knot", a.lo[tc.n-1], a.t[tc.n-1])
			}
			if tc.knots == tc.n && a.meanSquareWeight() != 1 {
				t.Fatalf("identity interpolation has mean square weight %v", a.meanSquareWeight())
			}
		})
	}
}

func BenchmarkSyntheticRead(b *testing.B) {
	for _, bc := range []struct {
		name  string
		shape tensor.Shape
	}{
		{"Cifar32", tensor.Shape{3, 32, 32}},
		{"Image224", tensor.Shape{3, 224, 224}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			const batch = 32
			ds := Synthetic(bc.shape, 1000, 10000, 1)
			x := make([]float32, batch*bc.shape.Numel())
			labels := make([]int32, batch)
			indices := span(0, batch)
			b.SetBytes(int64(len(x)) * 4)
			for b.Loop() {
				if err := ds.Read(indices, x, labels); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
