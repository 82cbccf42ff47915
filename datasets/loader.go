package datasets

import (
	"fmt"
	"math"
	"sync"

	"github.com/pipecast/pipecast/tensor"
)

// Loader cuts a dataset into mini-batches. The batch of step s is a pure
// function of (dataset, batch size, seed, s), so every schedule, whatever
// its device count or micro-batch size, trains on the same samples at the
// same step, and any step can be read in any order.
//
// The samples form one endless stream: epoch e is a permutation of all
// indices, drawn from (seed, e), and the epochs follow one another. Step s
// takes positions s·B … s·B+B−1 of the stream, so epoch e of a set of N
// samples begins at step ⌊e·N/B⌋. When B does not divide N a batch spans
// two epochs — the end of one permutation and the start of the next —
// rather than dropping the remainder or padding: nothing is skipped and
// every epoch presents every sample exactly once. A batch larger than the
// set holds some samples more than once.
//
// A Loader is safe for concurrent use; it serialises its reads of the
// dataset.
type Loader struct {
	ds    Dataset
	batch int
	seed  uint64
	shape tensor.Shape
	n     int // elements per sample
	l     int // labels per sample

	mu    sync.Mutex
	perms [2]epochPerm // the two most recently used epochs
	free  []*Batch     // released batches whose buffers can be reused
}

// epochPerm is one epoch's order of the sample indices.
type epochPerm struct {
	epoch int
	order []int32
}

// NewLoader returns a loader of mini-batches of batch samples from ds,
// shuffled by seed.
func NewLoader(ds Dataset, batch int, seed uint64) (*Loader, error) {
	if batch <= 0 {
		return nil, fmt.Errorf("new loader: batch size %d is not positive", batch)
	}
	if ds.Len() <= 0 {
		return nil, fmt.Errorf("new loader: dataset %s is empty", ds.Name())
	}
	if ds.Len() > math.MaxInt32 {
		return nil, fmt.Errorf("new loader: dataset %s has %d samples, more than %d", ds.Name(), ds.Len(), math.MaxInt32)
	}
	if ds.LabelsPerSample() < 1 {
		return nil, fmt.Errorf("new loader: dataset %s has %d labels a sample, want at least 1", ds.Name(), ds.LabelsPerSample())
	}
	shape := ds.Shape().Clone()
	l := &Loader{ds: ds, batch: batch, seed: seed, shape: shape, n: shape.Numel(), l: ds.LabelsPerSample()}
	for i := range l.perms {
		l.perms[i].epoch = -1
	}
	return l, nil
}

// Dataset returns the set the loader reads.
func (l *Loader) Dataset() Dataset { return l.ds }

// BatchSize returns the number of samples in a batch.
func (l *Loader) BatchSize() int { return l.batch }

// Epoch returns the epoch that the first sample of step's batch belongs to.
func (l *Loader) Epoch(step int) int { return step * l.batch / l.ds.Len() }

// Batch is one mini-batch in host memory.
type Batch struct {
	// Step is the training step the batch belongs to.
	Step int
	// X holds the samples one after another: B × Shape.Numel() values.
	X []float32
	// Labels holds the B·L labels, sample i's at [i·L, (i+1)·L).
	Labels []int32
	// PerSample is L, the labels of each sample (Dataset.LabelsPerSample).
	PerSample int
	// Indices holds the B dataset indices of the samples.
	Indices []int
	// Shape is one sample's shape.
	Shape tensor.Shape

	loader *Loader
}

// Batch returns the mini-batch of step (≥ 0). Its buffers are the
// caller's until it calls Release; Batch reuses the buffers of released
// batches, so a steady training loop allocates nothing per step.
func (l *Loader) Batch(step int) (*Batch, error) {
	if step < 0 {
		return nil, fmt.Errorf("batch of step %d: negative step", step)
	}
	if step > math.MaxInt/l.batch-1 {
		return nil, fmt.Errorf("batch of step %d: step too large", step)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.newBatch(step)
	size := l.ds.Len()
	for j := range b.Indices {
		pos := step*l.batch + j
		b.Indices[j] = int(l.order(pos / size)[pos%size])
	}
	if err := l.ds.Read(b.Indices, b.X, b.Labels); err != nil {
		l.free = append(l.free, b)
		return nil, fmt.Errorf("batch of step %d from %s: %w", step, l.ds.Name(), err)
	}
	return b, nil
}

// newBatch takes a released batch or allocates one. l.mu is held.
func (l *Loader) newBatch(step int) *Batch {
	var b *Batch
	if k := len(l.free); k > 0 {
		b, l.free = l.free[k-1], l.free[:k-1]
	} else {
		b = &Batch{
			X:         make([]float32, l.batch*l.n),
			Labels:    make([]int32, l.batch*l.l),
			PerSample: l.l,
			Indices:   make([]int, l.batch),
			Shape:     l.shape,
			loader:    l,
		}
	}
	b.Step = step
	return b
}

// order returns epoch's permutation of the indices, computing it if it is
// not one of the two cached. l.mu is held.
func (l *Loader) order(epoch int) []int32 {
	for i := range l.perms {
		if l.perms[i].epoch == epoch {
			return l.perms[i].order
		}
	}
	// Replace the older of the two, reusing its storage.
	victim := 0
	if l.perms[1].epoch < l.perms[0].epoch {
		victim = 1
	}
	p := &l.perms[victim]
	if p.order == nil {
		p.order = make([]int32, l.ds.Len())
	}
	for i := range p.order {
		p.order[i] = int32(i)
	}
	// Fisher–Yates with a generator seeded by (seed, epoch).
	rng := newSplitMix(l.seed, domainPerm, uint64(epoch))
	for i := len(p.order) - 1; i > 0; i-- {
		j := rng.intn(i + 1)
		p.order[i], p.order[j] = p.order[j], p.order[i]
	}
	p.epoch = epoch
	return p.order
}

// Release hands the batch's buffers back to its loader for a later step.
// The batch, and any slice taken from it, must not be used afterwards.
// Releasing is optional: an unreleased batch is garbage collected.
func (b *Batch) Release() {
	l := b.loader
	if l == nil {
		return
	}
	b.loader = nil // a second Release is a no-op
	l.mu.Lock()
	l.free = append(l.free, &Batch{X: b.X, Labels: b.Labels, PerSample: b.PerSample, Indices: b.Indices, Shape: b.Shape, loader: l})
	l.mu.Unlock()
}

// Len returns the number of samples in the batch.
func (b *Batch) Len() int { return len(b.Indices) }

// Upload copies samples [lo, hi) of the batch to dev as a new tensor of
// shape [hi−lo, Shape...] in category cat, owned by the caller. A single
// device takes [0, B); device p of K holding a shard takes
// [p·B/K, (p+1)·B/K). It panics if the range is not within the batch.
func (b *Batch) Upload(dev tensor.Device, cat tensor.Category, lo, hi int) *tensor.Tensor {
	b.checkRange("upload", lo, hi)
	n := b.Shape.Numel()
	shape := append(tensor.Shape{hi - lo}, b.Shape...)
	if b.X == nil {
		return dev.Alloc(cat, shape...) // a ShapeBatch: zeros
	}
	return tensor.FromHost(dev, cat, shape, b.X[lo*n:hi*n])
}

// ShapeBatch returns a batch of size samples of shape that holds no
// values: Upload allocates zeros, and every label is 0, perSample a
// sample (Dataset.LabelsPerSample of the data it stands for; at least 1).
// It is what a device that holds no values (the meta backend) trains on,
// so that checking a configuration of huge inputs reads no data and
// allocates none.
func ShapeBatch(step, size int, shape tensor.Shape, perSample int) *Batch {
	perSample = max(perSample, 1)
	return &Batch{Step: step, Labels: make([]int32, size*perSample), PerSample: perSample, Indices: make([]int, size), Shape: shape.Clone()}
}

// LabelsRange returns the labels of samples [lo, hi): (hi−lo)·L labels,
// sample lo+i's at [i·L, (i+1)·L). The slice shares the batch's memory,
// so it is valid until Release. It panics if the range is not within the
// batch.
func (b *Batch) LabelsRange(lo, hi int) []int32 {
	b.checkRange("labels", lo, hi)
	l := b.labelsPerSample()
	return b.Labels[lo*l : hi*l : hi*l]
}

// labelsPerSample returns L, 1 for a batch made without it.
func (b *Batch) labelsPerSample() int { return max(b.PerSample, 1) }

func (b *Batch) checkRange(op string, lo, hi int) {
	if lo < 0 || hi > b.Len() || lo >= hi {
		panic(fmt.Sprintf("datasets: batch %s of samples [%d, %d) of a batch of %d", op, lo, hi, b.Len()))
	}
}
