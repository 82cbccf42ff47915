package datasets

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pipecast/pipecast/tensor"
)

// The CIFAR-10 binary format (https://www.cs.toronto.edu/~kriz/cifar.html):
// a file is a sequence of records, each one label byte followed by the
// 32×32 red plane, then green, then blue, row-major.
const (
	cifar10Side    = 32
	cifar10Pixels  = 3 * cifar10Side * cifar10Side
	cifar10Record  = 1 + cifar10Pixels
	cifar10Classes = 10
)

// CIFAR10Mean and CIFAR10Std normalise each channel of pixels scaled to
// [0, 1]: x ← (x − mean) / std. They are the per-channel mean and
// population standard deviation over the 50 000 training images, the
// values torchvision's examples use (not the 0.2023, 0.1994, 0.2010 often
// copied, which average per-image deviations).
var (
	CIFAR10Mean = [3]float64{0.4914, 0.4822, 0.4465}
	CIFAR10Std  = [3]float64{0.2470, 0.2435, 0.2616}
)

// CIFAR10TrainFiles are the standard names of the five training batches.
var CIFAR10TrainFiles = []string{
	"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin",
}

// cifar10Subdir is the directory the official archive extracts to.
const cifar10Subdir = "cifar-10-batches-bin"

// cifar10 holds the raw records in memory, a quarter of their float
// size, and normalises them when read.
type cifar10 struct {
	name   string
	labels []byte
	pixels []byte // Len() × cifar10Pixels
	lut    [3][256]float32
}

// OpenCIFAR10 reads CIFAR-10 binary files (data_batch_N.bin, test_batch.bin)
// into memory, their records in the order given. Samples have shape
// [3, 32, 32]: pixels scaled to [0, 1] and normalised per channel with
// CIFAR10Mean and CIFAR10Std. An error names the file, and the record for
// a bad label.
func OpenCIFAR10(paths ...string) (Dataset, error) {
	if len(paths) == 0 {
		return nil, errors.New("open cifar10: no files")
	}
	ds := newCIFAR10("cifar10:" + paths[0])
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("open cifar10: %w", err)
		}
		labels, pixels, err := parseCIFAR10(p, data)
		if err != nil {
			return nil, fmt.Errorf("open cifar10: %w", err)
		}
		ds.labels = append(ds.labels, labels...)
		ds.pixels = append(ds.pixels, pixels...)
	}
	return ds, nil
}

// OpenCIFAR10Dir reads the five training batches (CIFAR10TrainFiles) from
// dir, or from the cifar-10-batches-bin directory inside it, where the
// official archive extracts them.
func OpenCIFAR10Dir(dir string) (Dataset, error) {
	base := dir
	if _, err := os.Stat(filepath.Join(dir, CIFAR10TrainFiles[0])); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(dir, cifar10Subdir, CIFAR10TrainFiles[0])); err == nil {
			base = filepath.Join(dir, cifar10Subdir)
		}
	}
	paths := make([]string, len(CIFAR10TrainFiles))
	for i, f := range CIFAR10TrainFiles {
		paths[i] = filepath.Join(base, f)
	}
	ds, err := OpenCIFAR10(paths...)
	if err != nil {
		return nil, err
	}
	ds.(*cifar10).name = "cifar10:" + dir
	return ds, nil
}

func newCIFAR10(name string) *cifar10 {
	ds := &cifar10{name: name}
	for c := range ds.lut {
		for v := range ds.lut[c] {
			ds.lut[c][v] = float32((float64(v)/255 - CIFAR10Mean[c]) / CIFAR10Std[c])
		}
	}
	return ds
}

// parseCIFAR10 splits the contents of the file name into labels and pixel
// planes, checking the size and every label.
func parseCIFAR10(name string, data []byte) (labels, pixels []byte, err error) {
	if len(data) == 0 {
		return nil, nil, fmt.Errorf("%s: no records", name)
	}
	if len(data)%cifar10Record != 0 {
		return nil, nil, fmt.Errorf("%s: size %d bytes is not a whole number of %d-byte records (record %d is truncated)",
			name, len(data), cifar10Record, len(data)/cifar10Record)
	}
	n := len(data) / cifar10Record
	labels = make([]byte, n)
	pixels = make([]byte, n*cifar10Pixels)
	for r := 0; r < n; r++ {
		rec := data[r*cifar10Record : (r+1)*cifar10Record]
		if rec[0] >= cifar10Classes {
			return nil, nil, fmt.Errorf("%s: record %d: label %d is not in 0…%d", name, r, rec[0], cifar10Classes-1)
		}
		labels[r] = rec[0]
		copy(pixels[r*cifar10Pixels:], rec[1:])
	}
	return labels, pixels, nil
}

// Name returns "cifar10:" and the directory or first file.
func (ds *cifar10) Name() string { return ds.name }

// Len returns the number of records.
func (ds *cifar10) Len() int { return len(ds.labels) }

// Shape returns [3, 32, 32].
func (ds *cifar10) Shape() tensor.Shape { return tensor.Shape{3, cifar10Side, cifar10Side} }

// Classes returns 10.
func (ds *cifar10) Classes() int { return cifar10Classes }

// LabelsPerSample returns 1: one class a sample.
func (ds *cifar10) LabelsPerSample() int { return 1 }

// Read normalises the requested records into x. It only reads ds, so it
// is safe for concurrent use.
func (ds *cifar10) Read(indices []int, x []float32, labels []int32) error {
	if err := checkReadArgs(ds, indices, x, labels); err != nil {
		return fmt.Errorf("%s: %w", ds.name, err)
	}
	const plane = cifar10Side * cifar10Side
	for i, idx := range indices {
		labels[i] = int32(ds.labels[idx])
		src := ds.pixels[idx*cifar10Pixels : (idx+1)*cifar10Pixels]
		dst := x[i*cifar10Pixels : (i+1)*cifar10Pixels]
		for c := 0; c < 3; c++ {
			lut := &ds.lut[c]
			for p, v := range src[c*plane : (c+1)*plane] {
				dst[c*plane+p] = lut[v]
			}
		}
	}
	return nil
}
