package datasets

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
)

func newTestLoader(t *testing.T, ds Dataset, batch int, seed uint64) *Loader {
	t.Helper()
	l, err := NewLoader(ds, batch, seed)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustBatch(t *testing.T, l *Loader, step int) *Batch {
	t.Helper()
	b, err := l.Batch(step)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLoaderDeterministic(t *testing.T) {
	ds := Synthetic(tensor.Shape{2, 3, 3}, 5, 37, 1)
	a := newTestLoader(t, ds, 8, 99)
	b := newTestLoader(t, ds, 8, 99)
	// b reads the steps in another order, skipping about: a step's batch
	// must not depend on which steps came before it.
	want := map[int]*Batch{}
	for s := 0; s < 12; s++ {
		want[s] = mustBatch(t, a, s)
	}
	for _, s := range []int{11, 3, 0, 7, 3, 10, 1} {
		got := mustBatch(t, b, s)
		w := want[s]
		if got.Step != s || !slices.Equal(got.Indices, w.Indices) || !slices.Equal(got.Labels, w.Labels) || !slices.Equal(got.X, w.X) {
			t.Fatalf("step %d differs between two loaders with the same seed", s)
		}
		got.Release()
	}
	// The batch holds exactly what the dataset reads for its indices.
	for s, w := range want {
		x, labels := readAll(t, ds, w.Indices)
		if !slices.Equal(x, w.X) || !slices.Equal(labels, w.Labels) {
			t.Fatalf("step %d: batch data differs from the dataset's samples %v", s, w.Indices)
		}
		if !w.Shape.Equal(ds.Shape()) || w.Len() != 8 {
			t.Fatalf("step %d: batch of %d samples of shape %v", s, w.Len(), w.Shape)
		}
	}
	if slices.Equal(want[0].Indices, want[1].Indices) {
		t.Fatal("steps 0 and 1 have the same samples")
	}
	c := newTestLoader(t, ds, 8, 100)
	if got := mustBatch(t, c, 0); slices.Equal(got.Indices, want[0].Indices) {
		t.Fatal("seeds 99 and 100 give the same first batch")
	}
}

func TestLoaderEpochs(t *testing.T) {
	tests := []struct {
		name      string
		n, batch  int
		wantSteps int // steps that cover three epochs
	}{
		{"batch divides the set", 40, 8, 15},
		{"batches span epochs", 37, 8, 14},
		{"batch of one", 5, 1, 15},
		{"batch larger than the set", 3, 5, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds := Synthetic(tensor.Shape{1}, 2, tc.n, 4)
			l := newTestLoader(t, ds, tc.batch, 5)
			var stream []int
			steps := 0
			for len(stream) < 3*tc.n {
				b := mustBatch(t, l, steps)
				stream = append(stream, b.Indices...)
				b.Release()
				steps++
			}
			if steps != tc.wantSteps {
				t.Fatalf("three epochs took %d steps, want %d", steps, tc.wantSteps)
			}
			var orders [][]int
			for e := 0; e < 3; e++ {
				order := stream[e*tc.n : (e+1)*tc.n]
				if got := slices.Sorted(slices.Values(order)); !slices.Equal(got, span(0, tc.n)) {
					t.Fatalf("epoch %d is not a permutation of the set: %v", e, order)
				}
				orders = append(orders, order)
			}
			// A step's epoch is that of its first sample's position.
			for st := 0; st < steps; st++ {
				if got, want := l.Epoch(st), st*tc.batch/tc.n; got != want {
					t.Fatalf("Epoch(%d) = %d, want %d", st, got, want)
				}
			}
			if tc.n > 3 && slices.Equal(orders[0], orders[1]) && slices.Equal(orders[1], orders[2]) {
				t.Fatal("every epoch has the same order")
			}
		})
	}
}

func TestLoaderShuffles(t *testing.T) {
	ds := Synthetic(tensor.Shape{1}, 2, 1000, 4)
	l := newTestLoader(t, ds, 1000, 6)
	b := mustBatch(t, l, 0)
	inPlace := 0
	for j, idx := range b.Indices {
		if idx == j {
			inPlace++
		}
	}
	// A random permutation fixes one point on average.
	if inPlace > 10 {
		t.Fatalf("%d of 1000 samples in their own place: not shuffled", inPlace)
	}
}

func TestBatchUploadShards(t *testing.T) {
	shape := tensor.Shape{3, 4, 5}
	ds := Synthetic(shape, 4, 50, 2)
	l := newTestLoader(t, ds, 10, 3)
	b := mustBatch(t, l, 2)
	dev := cpu.New(tensor.Options{Threads: 1})
	defer dev.Close()
	n := shape.Numel()

	whole := b.Upload(dev, tensor.Boundary, 0, 10)
	if want := (tensor.Shape{10, 3, 4, 5}); !whole.Shape().Equal(want) || whole.Category() != tensor.Boundary {
		t.Fatalf("upload of the batch: shape %v in %v, want %v in boundary", whole.Shape(), whole.Category(), want)
	}
	if got := tensor.ToHost(whole); !slices.Equal(got, b.X) {
		t.Fatal("uploaded batch differs from X")
	}
	whole.Release()

	for _, k := range []int{1, 2, 3, 4, 10} {
		t.Run(fmt.Sprintf("K=%d", k), func(t *testing.T) {
			var x []float32
			var labels []int32
			for p := 0; p < k; p++ {
				lo, hi := p*10/k, (p+1)*10/k
				shard := b.Upload(dev, tensor.Comm, lo, hi)
				if want := append(tensor.Shape{hi - lo}, shape...); !shard.Shape().Equal(want) {
					t.Fatalf("shard %d: shape %v, want %v", p, shard.Shape(), want)
				}
				got := tensor.ToHost(shard)
				if !slices.Equal(got, b.X[lo*n:hi*n]) {
					t.Fatalf("shard %d differs from samples [%d, %d)", p, lo, hi)
				}
				x = append(x, got...)
				labels = append(labels, b.LabelsRange(lo, hi)...)
				shard.Release()
			}
			if !slices.Equal(x, b.X) || !slices.Equal(labels, b.Labels) {
				t.Fatal("shards do not concatenate to the batch")
			}
		})
	}
	if live := dev.Memory().LiveTotalBytes; live != 0 {
		t.Fatalf("%d bytes still live on the device", live)
	}
}

func TestBatchRangePanics(t *testing.T) {
	ds := Synthetic(tensor.Shape{2}, 2, 10, 0)
	b := mustBatch(t, newTestLoader(t, ds, 4, 0), 0)
	dev := cpu.New(tensor.Options{Threads: 1})
	defer dev.Close()
	for _, r := range [][2]int{{-1, 2}, {0, 5}, {2, 2}, {3, 1}} {
		t.Run(fmt.Sprintf("[%d,%d)", r[0], r[1]), func(t *testing.T) {
			for name, f := range map[string]func(){
				"upload": func() { b.Upload(dev, tensor.Boundary, r[0], r[1]).Release() },
				"labels": func() { b.LabelsRange(r[0], r[1]) },
			} {
				func() {
					defer func() {
						if recover() == nil {
							t.Fatalf("%s: no panic", name)
						}
					}()
					f()
				}()
			}
		})
	}
}

func TestBatchRelease(t *testing.T) {
	ds := Synthetic(tensor.Shape{6}, 3, 30, 8)
	l := newTestLoader(t, ds, 5, 1)
	ref := newTestLoader(t, ds, 5, 1)
	b0 := mustBatch(t, l, 0)
	x0 := &b0.X[0]
	b0.Release()
	b0.Release() // a second release must not hand the buffers out twice
	b1 := mustBatch(t, l, 1)
	if &b1.X[0] != x0 {
		t.Fatal("a released batch's buffers were not reused")
	}
	b2 := mustBatch(t, l, 2)
	if &b2.X[0] == x0 {
		t.Fatal("buffers of a released batch handed out twice")
	}
	for s, b := range map[int]*Batch{1: b1, 2: b2} {
		w := mustBatch(t, ref, s)
		if b.Step != s || !slices.Equal(b.X, w.X) || !slices.Equal(b.Labels, w.Labels) || !slices.Equal(b.Indices, w.Indices) {
			t.Fatalf("step %d read into reused buffers differs", s)
		}
	}
}

func TestLoaderConcurrent(t *testing.T) {
	ds := Synthetic(tensor.Shape{2, 4, 4}, 3, 23, 8)
	ref := newTestLoader(t, ds, 4, 2)
	l := newTestLoader(t, ds, 4, 2)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := g; s < 40; s += 4 {
				b, err := l.Batch(s)
				if err != nil {
					errs <- err
					return
				}
				w, err := ref.Batch(s)
				if err != nil {
					errs <- err
					return
				}
				if !slices.Equal(b.X, w.X) || !slices.Equal(b.Indices, w.Indices) {
					errs <- fmt.Errorf("step %d differs when read concurrently", s)
				}
				b.Release()
				w.Release()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestLoaderErrors(t *testing.T) {
	ds := Synthetic(tensor.Shape{2}, 2, 10, 0)
	if _, err := NewLoader(ds, 0, 0); err == nil {
		t.Fatal("batch 0: no error")
	}
	l := newTestLoader(t, ds, 3, 0)
	if _, err := l.Batch(-1); err == nil {
		t.Fatal("step -1: no error")
	}
	if _, err := l.Batch(int(^uint(0) >> 2)); err == nil {
		t.Fatal("huge step: no error")
	}
}

func TestOpen(t *testing.T) {
	cifarDir := t.TempDir()
	for i, f := range CIFAR10TrainFiles {
		writeFile(t, filepath.Join(cifarDir, f), cifarRecords(i, 1))
	}
	mnistDir := t.TempDir()
	img, lbl := mnistFiles(3, 28, 28)
	writeFile(t, filepath.Join(mnistDir, MNISTTrainImages+".gz"), gzipBytes(t, img))
	writeFile(t, filepath.Join(mnistDir, MNISTTrainLabels), lbl)

	tests := []struct {
		name      string
		spec      string
		shape     tensor.Shape
		classes   int
		wantLen   int
		wantShape tensor.Shape
		wantErr   string // a substring of the error; "" for success
	}{
		{"default", "", tensor.Shape{3, 8, 8}, 10, DefaultSyntheticSamples, tensor.Shape{3, 8, 8}, ""},
		{"synthetic", "synthetic", tensor.Shape{784}, 10, DefaultSyntheticSamples, tensor.Shape{784}, ""},
		{"synthetic N", "synthetic:37", tensor.Shape{3, 8, 8}, 10, 37, tensor.Shape{3, 8, 8}, ""},
		{"synthetic bad N", "synthetic:x", tensor.Shape{4}, 10, 0, nil, "not a positive integer"},
		{"synthetic zero N", "synthetic:0", tensor.Shape{4}, 10, 0, nil, "not a positive integer"},
		{"unknown kind", "imagenet:/data", tensor.Shape{4}, 10, 0, nil, "unknown kind"},
		{"text for images", "text:" + cifarDir, tensor.Shape{3, 32, 32}, 10, 0, nil, "token sequences, for a language model"},
		{"cifar10 without dir", "cifar10", tensor.Shape{3, 32, 32}, 10, 0, nil, "cifar10:DIR"},
		{"cifar10", "cifar10:" + cifarDir, tensor.Shape{3, 32, 32}, 10, 5, tensor.Shape{3, 32, 32}, ""},
		{"cifar10 more model classes", "cifar10:" + cifarDir, tensor.Shape{3, 32, 32}, 1000, 5, tensor.Shape{3, 32, 32}, ""},
		{"cifar10 flat", "cifar10:" + cifarDir, tensor.Shape{3072}, 10, 5, tensor.Shape{3072}, ""},
		{"cifar10 wrong image", "cifar10:" + cifarDir, tensor.Shape{3, 224, 224}, 10, 0, nil, "do not match the model input [3 224 224]"},
		{"cifar10 wrong flat", "cifar10:" + cifarDir, tensor.Shape{784}, 10, 0, nil, "3072 elements"},
		{"cifar10 too many classes", "cifar10:" + cifarDir, tensor.Shape{3, 32, 32}, 5, 0, nil, "10 classes do not fit a model with 5"},
		{"cifar10 missing", "cifar10:" + t.TempDir(), tensor.Shape{3, 32, 32}, 10, 0, nil, "data_batch_1.bin"},
		{"mnist", "mnist:" + mnistDir, tensor.Shape{1, 28, 28}, 10, 3, tensor.Shape{1, 28, 28}, ""},
		{"mnist flat", "mnist:" + mnistDir, tensor.Shape{784}, 10, 3, tensor.Shape{784}, ""},
		{"mnist wrong shape", "mnist:" + mnistDir, tensor.Shape{3, 28, 28}, 10, 0, nil, "do not match"},
		{"bad model shape", "synthetic", tensor.Shape{0, 3}, 10, 0, nil, "model input shape"},
		{"bad model classes", "synthetic", tensor.Shape{3}, 0, 0, nil, "0 classes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds, err := Open(tc.spec, Input{Shape: tc.shape, Classes: tc.classes}, 1)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ds.Len() != tc.wantLen || !ds.Shape().Equal(tc.wantShape) {
				t.Fatalf("got %d samples of %v, want %d of %v", ds.Len(), ds.Shape(), tc.wantLen, tc.wantShape)
			}
			if ds.Classes() > tc.classes {
				t.Fatalf("%d data classes for a model of %d", ds.Classes(), tc.classes)
			}
			// The loader uploads what the set's shape says.
			b := mustBatch(t, newTestLoader(t, ds, 2, 0), 0)
			if len(b.X) != 2*tc.wantShape.Numel() {
				t.Fatalf("batch of %d values, want %d", len(b.X), 2*tc.wantShape.Numel())
			}
		})
	}
	// A flattened set reads the same values as the set itself.
	flat, err := Open("mnist:"+mnistDir, Input{Shape: tensor.Shape{784}, Classes: 10}, 0)
	if err != nil {
		t.Fatal(err)
	}
	image, err := Open("mnist:"+mnistDir, Input{Shape: tensor.Shape{1, 28, 28}, Classes: 10}, 0)
	if err != nil {
		t.Fatal(err)
	}
	xf, lf := readAll(t, flat, []int{2, 0})
	xi, li := readAll(t, image, []int{2, 0})
	if !slices.Equal(xf, xi) || !slices.Equal(lf, li) {
		t.Fatal("the flattened set reads different data")
	}
}

func BenchmarkLoaderBatch(b *testing.B) {
	ds := Synthetic(tensor.Shape{3, 32, 32}, 10, 50000, 1)
	l, err := NewLoader(ds, 128, 1)
	if err != nil {
		b.Fatal(err)
	}
	step := 0
	for b.Loop() {
		batch, err := l.Batch(step)
		if err != nil {
			b.Fatal(err)
		}
		batch.Release()
		step++
	}
}
