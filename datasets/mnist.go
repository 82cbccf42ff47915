package datasets

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"

	"github.com/pipecast/pipecast/tensor"
)

// The IDX format (http://yann.lecun.com/exdb/mnist/): a big-endian magic
// number whose third byte is the element type (0x08, unsigned byte) and
// fourth the number of dimensions, then each dimension as a big-endian
// uint32, then the elements.
const (
	idxImagesMagic = 0x00000803 // unsigned bytes, 3 dimensions
	idxLabelsMagic = 0x00000801 // unsigned bytes, 1 dimension
	mnistClasses   = 10
	// idxMaxBytes bounds what a header may claim, so that a corrupt one
	// fails cleanly instead of asking for an absurd allocation
	// (2³¹−1 keeps every size an int on 32-bit platforms too).
	idxMaxBytes = 1<<31 - 1
)

// MNISTMean and MNISTStd normalise pixels scaled to [0, 1]:
// x ← (x − mean) / std, the mean and standard deviation over MNIST's
// 60 000 training images that torchvision's examples use.
const (
	MNISTMean = 0.1307
	MNISTStd  = 0.3081
)

// The standard names of MNIST's training files; OpenMNISTDir also accepts
// them with a .gz suffix.
const (
	MNISTTrainImages = "train-images-idx3-ubyte"
	MNISTTrainLabels = "train-labels-idx1-ubyte"
)

// mnist holds the raw images in memory and normalises them when read.
type mnist struct {
	name       string
	rows, cols int
	labels     []byte
	pixels     []byte // Len() × rows × cols
	lut        [256]float32
}

// OpenMNIST reads an IDX image file and its IDX label file, each plain or
// gzip-compressed (recognised by its magic bytes 0x1f 0x8b, whatever its
// name). Samples have shape [1, rows, cols] as the image header says
// ([1, 28, 28] for MNIST): pixels scaled to [0, 1] and normalised with
// MNISTMean and MNISTStd. Labels must be 0…9. Errors name the file.
func OpenMNIST(imagesPath, labelsPath string) (Dataset, error) {
	img, err := os.ReadFile(imagesPath)
	if err != nil {
		return nil, fmt.Errorf("open mnist: %w", err)
	}
	lbl, err := os.ReadFile(labelsPath)
	if err != nil {
		return nil, fmt.Errorf("open mnist: %w", err)
	}
	ds, err := parseMNIST(imagesPath, img, labelsPath, lbl)
	if err != nil {
		return nil, fmt.Errorf("open mnist: %w", err)
	}
	return ds, nil
}

// OpenMNISTDir reads MNISTTrainImages and MNISTTrainLabels from dir, each
// with or without a .gz suffix.
func OpenMNISTDir(dir string) (Dataset, error) {
	find := func(name string) (string, error) {
		for _, p := range []string{name, name + ".gz"} {
			path := filepath.Join(dir, p)
			if _, err := os.Stat(path); err == nil {
				return path, nil
			} else if !errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("open mnist: %w", err)
			}
		}
		return "", fmt.Errorf("open mnist: neither %s nor %s.gz in %s", name, name, dir)
	}
	img, err := find(MNISTTrainImages)
	if err != nil {
		return nil, err
	}
	lbl, err := find(MNISTTrainLabels)
	if err != nil {
		return nil, err
	}
	ds, err := OpenMNIST(img, lbl)
	if err != nil {
		return nil, err
	}
	ds.(*mnist).name = "mnist:" + dir
	return ds, nil
}

// parseMNIST parses the contents of an image file and a label file.
func parseMNIST(imgName string, img []byte, lblName string, lbl []byte) (*mnist, error) {
	dims, pixels, err := readIDX(imgName, img, idxImagesMagic)
	if err != nil {
		return nil, err
	}
	n, rows, cols := dims[0], dims[1], dims[2]
	if n == 0 || rows == 0 || cols == 0 {
		return nil, fmt.Errorf("%s: no pixels in %d images of %d×%d", imgName, n, rows, cols)
	}
	ldims, labels, err := readIDX(lblName, lbl, idxLabelsMagic)
	if err != nil {
		return nil, err
	}
	if ldims[0] != n {
		return nil, fmt.Errorf("%s has %d labels for the %d images of %s", lblName, ldims[0], n, imgName)
	}
	for i, l := range labels {
		if l >= mnistClasses {
			return nil, fmt.Errorf("%s: label %d: %d is not in 0…%d", lblName, i, l, mnistClasses-1)
		}
	}
	ds := &mnist{name: "mnist:" + imgName, rows: rows, cols: cols, labels: labels, pixels: pixels}
	for v := range ds.lut {
		ds.lut[v] = float32((float64(v)/255 - MNISTMean) / MNISTStd)
	}
	return ds, nil
}

// readIDX decodes an IDX file of unsigned bytes with the given magic,
// gunzipping it first if it is compressed, and returns its dimensions and
// elements. It reads exactly what the header promises: fewer bytes are an
// error (truncation), and so are more.
func readIDX(name string, data []byte, magic uint32) (dims []int, elems []byte, err error) {
	var r io.Reader = bytes.NewReader(data)
	gzipped := len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b
	if gzipped {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		defer zr.Close()
		r = zr
	}
	// The magic first, so that a file of another kind is named as such
	// even when it is shorter than the header we expect.
	ndims := int(magic & 0xff)
	hdr := make([]byte, 4+4*ndims)
	if _, err := io.ReadFull(r, hdr[:4]); err != nil {
		return nil, nil, fmt.Errorf("%s: truncated header: %w", name, err)
	}
	if got := binary.BigEndian.Uint32(hdr); got != magic {
		return nil, nil, fmt.Errorf("%s: bad magic 0x%08x, want 0x%08x", name, got, magic)
	}
	if _, err := io.ReadFull(r, hdr[4:]); err != nil {
		return nil, nil, fmt.Errorf("%s: truncated header: %w", name, err)
	}
	total := uint64(1)
	dims = make([]int, ndims)
	for i := range dims {
		d := uint64(binary.BigEndian.Uint32(hdr[4+4*i:]))
		hi, lo := bits.Mul64(total, d)
		if hi != 0 || lo > idxMaxBytes {
			return nil, nil, fmt.Errorf("%s: dimensions %v… claim more than %d bytes", name, dims[:i+1], uint64(idxMaxBytes))
		}
		total = lo
		dims[i] = int(d)
	}
	if !gzipped {
		// The data is all in memory: take the elements without a copy.
		rest := data[len(hdr):]
		if uint64(len(rest)) != total {
			return nil, nil, idxSizeError(name, dims, uint64(len(rest)), total)
		}
		return dims, rest, nil
	}
	// Read at most one byte more than promised, to see trailing data
	// without trusting the header's size for the allocation.
	elems, err = io.ReadAll(io.LimitReader(r, int64(total)+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	if uint64(len(elems)) != total {
		return nil, nil, idxSizeError(name, dims, uint64(len(elems)), total)
	}
	return dims, elems, nil
}

func idxSizeError(name string, dims []int, got, want uint64) error {
	if got < want {
		return fmt.Errorf("%s: truncated: %d of the %d bytes of dimensions %v", name, got, want, dims)
	}
	return fmt.Errorf("%s: %d bytes after the %d bytes of dimensions %v", name, got-want, want, dims)
}

// Name returns "mnist:" and the directory or image file.
func (ds *mnist) Name() string { return ds.name }

// Len returns the number of images.
func (ds *mnist) Len() int { return len(ds.labels) }

// Shape returns [1, rows, cols].
func (ds *mnist) Shape() tensor.Shape { return tensor.Shape{1, ds.rows, ds.cols} }

// Classes returns 10.
func (ds *mnist) Classes() int { return mnistClasses }

// LabelsPerSample returns 1: one class a sample.
func (ds *mnist) LabelsPerSample() int { return 1 }

// Read normalises the requested images into x. It only reads ds, so it is
// safe for concurrent use.
func (ds *mnist) Read(indices []int, x []float32, labels []int32) error {
	if err := checkReadArgs(ds, indices, x, labels); err != nil {
		return fmt.Errorf("%s: %w", ds.name, err)
	}
	n := ds.rows * ds.cols
	for i, idx := range indices {
		labels[i] = int32(ds.labels[idx])
		dst := x[i*n : (i+1)*n]
		for p, v := range ds.pixels[idx*n : (idx+1)*n] {
			dst[p] = ds.lut[v]
		}
	}
	return nil
}
