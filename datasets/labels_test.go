package datasets

import (
	"slices"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// sequences is a set of n samples of two values with three labels each,
// one a position, all derived from the sample's index so that a test can
// tell whose labels it was handed.
type sequences struct{ n int }

const seqLabels = 3

func (s sequences) Name() string         { return "sequences" }
func (s sequences) Len() int             { return s.n }
func (s sequences) Shape() tensor.Shape  { return tensor.Shape{2} }
func (s sequences) Classes() int         { return 100 }
func (s sequences) LabelsPerSample() int { return seqLabels }

// label returns position p's label of sample idx.
func (s sequences) label(idx, p int) int32 { return int32(idx*seqLabels + p) }

func (s sequences) Read(indices []int, x []float32, labels []int32) error {
	if err := checkReadArgs(s, indices, x, labels); err != nil {
		return err
	}
	for i, idx := range indices {
		x[2*i], x[2*i+1] = float32(idx), -float32(idx)
		for p := range seqLabels {
			labels[i*seqLabels+p] = s.label(idx, p)
		}
	}
	return nil
}

// TestLabelsPerSample checks that a set of L labels a sample hands every
// micro-batch the L labels of each of its samples, in order, batch after
// batch (the second batches reuse released buffers).
func TestLabelsPerSample(t *testing.T) {
	ds := sequences{n: 10}
	const batch, micro = 6, 3
	l, err := NewLoader(ds, batch, 7)
	if err != nil {
		t.Fatal(err)
	}
	for step := range 4 {
		b, err := l.Batch(step)
		if err != nil {
			t.Fatal(err)
		}
		if b.Len() != batch || len(b.Labels) != batch*seqLabels || b.PerSample != seqLabels {
			t.Fatalf("step %d: %d samples, %d labels, %d a sample; want %d, %d, %d",
				step, b.Len(), len(b.Labels), b.PerSample, batch, batch*seqLabels, seqLabels)
		}
		size := batch / micro
		for j := range micro {
			lo, hi := j*size, (j+1)*size
			var want []int32
			for _, idx := range b.Indices[lo:hi] {
				for p := range seqLabels {
					want = append(want, ds.label(idx, p))
				}
			}
			if got := b.LabelsRange(lo, hi); !slices.Equal(got, want) {
				t.Errorf("step %d micro-batch %d: labels %v, want %v (samples %v)", step, j, got, want, b.Indices[lo:hi])
			}
		}
		b.Release()
	}
}

// TestLabelsPerSampleShortBuffer checks that a read into too few labels
// for L a sample is refused.
func TestLabelsPerSampleShortBuffer(t *testing.T) {
	ds := sequences{n: 4}
	err := ds.Read([]int{0, 1}, make([]float32, 4), make([]int32, 2))
	if want := "read 2 samples of 2 elements and 3 labels into 4 values and 2 labels"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}
