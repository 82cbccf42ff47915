package datasets

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/pipecast/pipecast/tensor"
)

// syntheticSignal is the standard deviation of the class template in a
// synthetic sample; the noise gets the rest of a unit variance. At 0.5 a
// single element says little about the class (a signal-to-noise ratio of
// 1/3), but the template spans the whole sample, so a network that pools
// or sums over it separates the classes after a few steps, while its first
// steps still start from chance.
const syntheticSignal = 0.5

// syntheticImageKnots is how many template values a synthetic image has
// along each spatial axis; the template is bilinearly interpolated between
// them. Smooth templates survive the pooling and striding of a
// convolutional network at any image size.
const syntheticImageKnots = 8

// syntheticFlatKnots caps the independent template values of a flat [F]
// sample; below it every feature has its own value.
const syntheticFlatKnots = 4096

// Stream domains keep the random streams of templates, labels and noise
// apart although they share the seed.
const (
	domainTemplate uint64 = 0x7e3a1c0de5a11ed1
	domainLabel    uint64 = 0x1abe1b1c5f00d123
	domainNoise    uint64 = 0x0d15e5a3b1e5c0de
	domainPerm     uint64 = 0x9e5f7ac3b0ca1d00
)

// synthetic is the set Synthetic returns; it is immutable after
// construction, so Read is safe for concurrent use.
type synthetic struct {
	shape            tensor.Shape
	classes, samples int
	seed             uint64
	channels         int
	rows, cols       axisInterp
	// knots holds classes × channels × rows.knots × cols.knots template
	// values, already scaled so that a template has unit variance.
	knots []float32
	noise float32
}

// Synthetic returns a deterministic, learnable labelled set of samples
// of the given shape — [C, H, W] for images, [F] for flat inputs.
//
// Each class has a fixed random template drawn from seed: for images a
// smooth field per channel, interpolated bilinearly between an 8×8 grid
// of values (fewer when the image is smaller); for flat samples an
// independent value per feature (features beyond 4096 are interpolated).
// Sample i is 0.5·template(label(i)) + √0.75·noise(i), so its elements have
// mean 0 and standard deviation about 1, like normalised images. The noise
// is approximately Gaussian: the Irwin–Hall sum of four uniforms, scaled to
// unit variance, which needs no transcendental functions and so gives the
// same bits on every platform.
//
// Label and noise of sample i are a pure function of (seed, i), computed
// when the sample is read: no storage grows with the number of samples,
// and reading any set of indices in any order gives the same data.
// Labels are exactly balanced over every run of Classes consecutive
// indices: index i in block b = i / classes has label
// (i mod classes + h(seed, b)) mod classes, with h a hash.
//
// Synthetic panics if shape is not valid or classes or samples is not
// positive.
func Synthetic(shape tensor.Shape, classes, samples int, seed uint64) Dataset {
	if len(shape) == 0 || !shape.Valid() {
		panic(fmt.Sprintf("datasets: synthetic sample shape %v", shape))
	}
	if classes <= 0 || samples <= 0 {
		panic(fmt.Sprintf("datasets: synthetic set of %d samples in %d classes", samples, classes))
	}
	s := &synthetic{
		shape:   shape.Clone(),
		classes: classes,
		samples: samples,
		seed:    seed,
		noise:   float32(math.Sqrt(1 - syntheticSignal*syntheticSignal)),
	}
	// A sample is channels × rows × cols; rank 1 is one row of features,
	// higher ranks fold their leading dimensions into channels.
	r := len(shape)
	switch r {
	case 1:
		s.channels = 1
		s.rows = newAxisInterp(1, 1)
		s.cols = newAxisInterp(shape[0], min(shape[0], syntheticFlatKnots))
	default:
		s.channels = tensor.Shape(shape[:r-2]).Numel()
		h, w := shape[r-2], shape[r-1]
		s.rows = newAxisInterp(h, min(h, syntheticImageKnots))
		s.cols = newAxisInterp(w, min(w, syntheticImageKnots))
	}
	// Interpolating between unit-variance knots lowers the variance by
	// the mean of Σw² over positions, separably per axis; dividing the
	// knots by its root restores unit variance on average.
	scale := float32(syntheticSignal / math.Sqrt(s.rows.meanSquareWeight()*s.cols.meanSquareWeight()))
	per := s.channels * s.rows.knots * s.cols.knots
	s.knots = make([]float32, classes*per)
	for c := 0; c < classes; c++ {
		rng := newSplitMix(seed, domainTemplate, uint64(c))
		for k := c * per; k < (c+1)*per; k++ {
			s.knots[k] = rng.gauss() * scale
		}
	}
	return s
}

// Name returns "synthetic".
func (s *synthetic) Name() string { return "synthetic" }

// Len returns the number of samples.
func (s *synthetic) Len() int { return s.samples }

// Shape returns one sample's shape.
func (s *synthetic) Shape() tensor.Shape { return s.shape }

// Classes returns the number of classes.
func (s *synthetic) Classes() int { return s.classes }

// LabelsPerSample returns 1: one class a sample.
func (s *synthetic) LabelsPerSample() int { return 1 }

// label returns sample i's label.
func (s *synthetic) label(i int) int {
	c := uint64(s.classes)
	block := uint64(i) / c
	shift := newSplitMix(s.seed, domainLabel, block).next() % c
	return int((uint64(i)%c + shift) % c)
}

// Read generates samples indices[i] into x and their labels.
func (s *synthetic) Read(indices []int, x []float32, labels []int32) error {
	n := s.shape.Numel()
	if err := checkReadArgs(s, indices, x, labels); err != nil {
		return err
	}
	for i, idx := range indices {
		lab := s.label(idx)
		labels[i] = int32(lab)
		s.fill(x[i*n:(i+1)*n], lab, idx)
	}
	return nil
}

// fill writes the sample of index idx and class lab into out.
func (s *synthetic) fill(out []float32, lab, idx int) {
	rng := newSplitMix(s.seed, domainNoise, uint64(idx))
	gy, gx := s.rows.knots, s.cols.knots
	row := make([]float32, gx)
	k := 0
	for c := 0; c < s.channels; c++ {
		kc := s.knots[(lab*s.channels+c)*gy*gx:][:gy*gx]
		for y := 0; y < s.rows.n; y++ {
			// Interpolate between the two knot rows first, then along
			// the columns. Explicit float32 conversions round every
			// product, so no platform fuses them into different bits.
			r0 := kc[int(s.rows.lo[y])*gx:][:gx]
			r1 := kc[int(s.rows.hi[y])*gx:][:gx]
			ty := s.rows.t[y]
			for j := range row {
				row[j] = r0[j] + float32(ty*(r1[j]-r0[j]))
			}
			for xx := 0; xx < s.cols.n; xx++ {
				a, b := row[s.cols.lo[xx]], row[s.cols.hi[xx]]
				v := a + float32(s.cols.t[xx]*(b-a))
				out[k] = v + float32(s.noise*rng.gauss())
				k++
			}
		}
	}
}

// axisInterp maps each of n positions along an axis to its two nearest
// knots and the weight of the upper one, with the first and last knot on
// the first and last position.
type axisInterp struct {
	n, knots int
	lo, hi   []int32
	t        []float32
}

func newAxisInterp(n, knots int) axisInterp {
	a := axisInterp{n: n, knots: knots, lo: make([]int32, n), hi: make([]int32, n), t: make([]float32, n)}
	for p := 0; p < n; p++ {
		if knots == 1 || n == 1 {
			continue // every position takes knot 0 with weight 0
		}
		// Integer arithmetic makes positions that fall on a knot exact.
		num := p * (knots - 1)
		lo := num / (n - 1)
		frac := num % (n - 1)
		hi := min(lo+1, knots-1)
		a.lo[p], a.hi[p] = int32(lo), int32(hi)
		a.t[p] = float32(frac) / float32(n-1)
	}
	return a
}

// meanSquareWeight returns the mean over positions of (1−t)² + t², the
// variance of an interpolated value between independent unit-variance
// knots.
func (a axisInterp) meanSquareWeight() float64 {
	var sum float64
	for _, t := range a.t {
		tt := float64(t)
		sum += (1-tt)*(1-tt) + tt*tt
	}
	return sum / float64(a.n)
}

// checkReadArgs returns an error if a Read of indices into x and labels
// would go out of range of the set or the buffers.
func checkReadArgs(ds Dataset, indices []int, x []float32, labels []int32) error {
	n, l := ds.Shape().Numel(), ds.LabelsPerSample()
	if len(x) < len(indices)*n || len(labels) < len(indices)*l {
		return fmt.Errorf("read %d samples of %d elements and %d labels into %d values and %d labels",
			len(indices), n, l, len(x), len(labels))
	}
	for _, idx := range indices {
		if idx < 0 || idx >= ds.Len() {
			return fmt.Errorf("read sample %d of a set of %d", idx, ds.Len())
		}
	}
	return nil
}

// mix64 is SplitMix64's output function (Steele, Lea and Flood, "Fast
// splittable pseudorandom number generators", OOPSLA 2014), a bijective
// hash of 64 bits.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

const golden64 = 0x9e3779b97f4a7c15

// splitMix is a SplitMix64 generator. Ours rather than math/rand's so that
// the data of a seed stays the same across Go releases.
type splitMix struct{ state uint64 }

// newSplitMix starts a generator from a hash chain of keys, giving every
// (seed, domain, counter) an independent stream.
func newSplitMix(keys ...uint64) *splitMix {
	h := uint64(golden64)
	for _, k := range keys {
		h = mix64(h ^ k)
	}
	return &splitMix{state: h}
}

func (r *splitMix) next() uint64 {
	r.state += golden64
	return mix64(r.state)
}

// gauss returns an approximately standard normal value: the sum of four
// 16-bit uniforms (Irwin–Hall, variance 4/12), centred and scaled to unit
// variance. Its tails end at ±2√3.
func (r *splitMix) gauss() float32 {
	u := r.next()
	s := u&0xffff + u>>16&0xffff + u>>32&0xffff + u>>48
	// Each 16-bit value k stands for (k+½)/65536, so the sum is
	// (s+2)/65536 with mean 2.
	return (float32(s) + 2 - 4*32768) * float32(math.Sqrt(3)/65536)
}

// intn returns a uniform integer in [0, n), n > 0, by Lemire's
// multiply-and-reject method ("Fast random integer generation in an
// interval", ACM TOMACS 2019).
func (r *splitMix) intn(n int) int {
	bound := uint64(n)
	hi, lo := bits.Mul64(r.next(), bound)
	if lo < bound {
		threshold := -bound % bound
		for lo < threshold {
			hi, lo = bits.Mul64(r.next(), bound)
		}
	}
	return int(hi)
}
