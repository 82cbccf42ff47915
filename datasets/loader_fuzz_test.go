package datasets

import (
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// fuzzModelInputs are the model inputs FuzzOpen picks from: images and
// flat inputs that fit CIFAR-10, MNIST or neither, and token sequences.
var fuzzModelInputs = []Input{
	{Shape: tensor.Shape{3, 32, 32}}, {Shape: tensor.Shape{3072}}, {Shape: tensor.Shape{1, 28, 28}},
	{Shape: tensor.Shape{784}}, {Shape: tensor.Shape{3, 8, 8}}, {Shape: tensor.Shape{10}},
	{Shape: tensor.Shape{16}, Tokens: true}, {Shape: tensor.Shape{1}, Tokens: true}, {Shape: tensor.Shape{4, 4}, Tokens: true},
}

// fuzzText is the file "text" FuzzOpen's directory holds.
const fuzzText = "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife."

// FuzzOpen checks Open's parsing of dataset specs. A spec it refuses gets
// an error that quotes it; a spec it accepts is one of the documented
// kinds and yields a set that keeps Open's promises: samples of the
// model's input shape, at most the model's classes, synthetic:N with N
// samples, a file-backed set named by its spec, and reads whose labels
// are in range and whose values are finite; for a model of tokens, a
// label at every position and values that are token ids, each the label
// of the position before it in a text. The fuzz runs in a directory
// holding a small CIFAR-10 directory "cifar", MNIST directory "mnist" and
// text file "text", so that relative paths can name real data.
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	for i, name := range CIFAR10TrainFiles {
		writeFile(f, filepath.Join(dir, "cifar", name), cifarRecords(i, 1))
	}
	writeFile(f, filepath.Join(dir, "nested", cifar10Subdir, CIFAR10TrainFiles[0]), cifarRecords(0, 1))
	img, lbl := mnistFiles(3, 28, 28)
	writeFile(f, filepath.Join(dir, "mnist", MNISTTrainImages+".gz"), gzipBytes(f, img))
	writeFile(f, filepath.Join(dir, "mnist", MNISTTrainLabels), lbl)
	writeFile(f, filepath.Join(dir, "text"), []byte(fuzzText))
	f.Chdir(dir)

	for _, seed := range []struct {
		spec    string
		shape   uint8
		classes int
	}{
		{"", 0, 10},
		{"synthetic", 3, 10},
		{"synthetic:37", 4, 3},
		{"synthetic:1", 5, 1},
		{"synthetic:+5", 5, 2},
		{"synthetic:0", 5, 2},
		{"synthetic:-1", 5, 2},
		{"synthetic:9223372036854775807", 5, 2},
		{"synthetic:9223372036854775808", 5, 2},
		{"synthetic:1e3", 5, 2},
		{"synthetic: 5", 5, 2},
		{"synthetic:5:", 5, 2},
		{"synthetic:", 5, 2},
		{"Synthetic", 5, 2},
		{"cifar10:cifar", 0, 10},
		{"cifar10:./cifar/", 1, 100},
		{"cifar10:cifar", 2, 10},
		{"cifar10:cifar", 0, 9},
		{"cifar10:nested", 0, 10},
		{"cifar10:", 0, 10},
		{"cifar10", 0, 10},
		{"cifar10:missing", 0, 10},
		{"mnist:mnist", 2, 10},
		{"mnist:mnist", 3, 10},
		{"mnist:mnist", 0, 10},
		{"mnist:cifar", 3, 10},
		{"mnist:", 3, 10},
		{"imagenet:/data", 0, 1000},
		{"synthetic", 0, 0},
		{"synthetic", 0, -3},
		{"synthetic", 6, 50},
		{"synthetic:3", 7, 1},
		{"synthetic", 8, 10},
		{"text:text", 6, 256},
		{"text:text", 7, 300},
		{"text:./text", 6, 255},
		{"text:text", 0, 256},
		{"text:", 6, 256},
		{"text", 6, 256},
		{"text:missing", 6, 256},
		{"text:cifar", 6, 256},
		{"cifar10:cifar", 6, 256},
		{"mnist:mnist", 7, 10},
	} {
		f.Add(seed.spec, seed.shape, seed.classes)
	}
	f.Fuzz(func(t *testing.T, spec string, inputIndex uint8, classes int) {
		in := fuzzModelInputs[int(inputIndex)%len(fuzzModelInputs)]
		// Up to ImageNet's; a synthetic set's templates grow with it.
		in.Classes = max(min(classes, 1000), -1)
		ds, err := Open(spec, in, 1)
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(spec)) {
				t.Fatalf("Open(%q): error %q does not quote the spec", spec, err)
			}
			return
		}
		kind, arg, hasArg := strings.Cut(spec, ":")
		switch kind {
		case "", "synthetic":
			want := DefaultSyntheticSamples
			if hasArg {
				n, err := strconv.Atoi(arg)
				if err != nil {
					t.Fatalf("Open(%q) accepted a sample count that is no integer", spec)
				}
				want = n
			}
			if ds.Len() != want || ds.Classes() != in.Classes {
				t.Fatalf("Open(%q): %d samples in %d classes, want %d in %d", spec, ds.Len(), ds.Classes(), want, in.Classes)
			}
		case "cifar10", "mnist", "text":
			if ds.Name() != spec {
				t.Fatalf("Open(%q) named its set %q", spec, ds.Name())
			}
			if (kind == "text") != in.Tokens {
				t.Fatalf("Open(%q) accepted a model of input %+v", spec, in)
			}
		default:
			t.Fatalf("Open(%q) accepted an unknown kind %q", spec, kind)
		}
		if ds.Len() <= 0 || ds.Classes() <= 0 || ds.Classes() > in.Classes {
			t.Fatalf("Open(%q): %d samples in %d classes for a model of %d", spec, ds.Len(), ds.Classes(), in.Classes)
		}
		if !ds.Shape().Equal(in.Shape) {
			t.Fatalf("Open(%q): samples %v for the model input %v", spec, ds.Shape(), in.Shape)
		}
		per := 1
		if in.Tokens {
			per = in.Shape[0]
		}
		if ds.LabelsPerSample() != per {
			t.Fatalf("Open(%q): %d labels a sample for the model input %+v, want %d", spec, ds.LabelsPerSample(), in, per)
		}
		indices := []int{0, ds.Len() - 1}
		x, labels := readAll(t, ds, indices)
		for k, l := range labels {
			if l < 0 || int(l) >= ds.Classes() {
				t.Fatalf("Open(%q): sample %d has label %d of %d classes", spec, indices[k/per], l, ds.Classes())
			}
		}
		for i, v := range x {
			switch {
			case math.IsNaN(float64(v)) || math.IsInf(float64(v), 0):
				t.Fatalf("Open(%q): value %d is %v", spec, i, v)
			case in.Tokens && (v != float32(int(v)) || v < 0 || int(v) >= ds.Classes()):
				t.Fatalf("Open(%q): value %d is %v, not a token id of %d", spec, i, v, ds.Classes())
			case in.Tokens && kind == "text" && i%per > 0 && int32(v) != labels[i-1]:
				t.Fatalf("Open(%q): value %d is %v, the label before it %d", spec, i, v, labels[i-1])
			}
		}
	})
}
