package datasets

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// idxFile encodes an IDX file of unsigned bytes.
func idxFile(magic uint32, dims []uint32, elems []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, magic)
	binary.Write(&b, binary.BigEndian, dims)
	b.Write(elems)
	return b.Bytes()
}

func gzipBytes(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// mnistPixel is pixel p of image i in the test files.
func mnistPixel(i, p int) byte { return byte(i*13 + p*3) }

// mnistFiles returns the image and label files of n images of rows×cols,
// image i labelled i mod 10.
func mnistFiles(n, rows, cols int) (img, lbl []byte) {
	pixels := make([]byte, n*rows*cols)
	labels := make([]byte, n)
	for i := 0; i < n; i++ {
		labels[i] = byte(i % 10)
		for p := 0; p < rows*cols; p++ {
			pixels[i*rows*cols+p] = mnistPixel(i, p)
		}
	}
	return idxFile(idxImagesMagic, []uint32{uint32(n), uint32(rows), uint32(cols)}, pixels),
		idxFile(idxLabelsMagic, []uint32{uint32(n)}, labels)
}

func checkMNIST(t *testing.T, ds Dataset, n, rows, cols int) {
	t.Helper()
	if ds.Len() != n || ds.Classes() != 10 || !ds.Shape().Equal(tensor.Shape{1, rows, cols}) {
		t.Fatalf("got %d samples, %d classes, shape %v; want %d, 10, [1 %d %d]", ds.Len(), ds.Classes(), ds.Shape(), n, rows, cols)
	}
	indices := []int{n - 1, 0, n / 2}
	x, labels := readAll(t, ds, indices)
	for k, i := range indices {
		if labels[k] != int32(i%10) {
			t.Fatalf("image %d: label %d, want %d", i, labels[k], i%10)
		}
		for p := 0; p < rows*cols; p++ {
			want := (float64(mnistPixel(i, p))/255 - MNISTMean) / MNISTStd
			if got := float64(x[k*rows*cols+p]); math.Abs(got-want) > 1e-6 {
				t.Fatalf("image %d pixel %d: got %v, want %v", i, p, got, want)
			}
		}
	}
}

func TestOpenMNIST(t *testing.T) {
	img, lbl := mnistFiles(7, 28, 28)
	tests := []struct {
		name             string
		imgGz, lblGz     bool
		imgName, lblName string
	}{
		{"plain", false, false, "img", "lbl"},
		{"gzipped", true, true, "img.gz", "lbl.gz"},
		{"gzipped images only", true, false, "img.gz", "lbl"},
		{"gzip recognised by content", true, true, "img", "lbl"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			i, l := img, lbl
			if tc.imgGz {
				i = gzipBytes(t, i)
			}
			if tc.lblGz {
				l = gzipBytes(t, l)
			}
			ds, err := OpenMNIST(writeFile(t, filepath.Join(dir, tc.imgName), i), writeFile(t, filepath.Join(dir, tc.lblName), l))
			if err != nil {
				t.Fatal(err)
			}
			checkMNIST(t, ds, 7, 28, 28)
		})
	}
	// Rows and columns come from the header.
	img, lbl = mnistFiles(3, 5, 4)
	ds, err := parseMNIST("img", img, "lbl", lbl)
	if err != nil {
		t.Fatal(err)
	}
	checkMNIST(t, ds, 3, 5, 4)
}

func TestOpenMNISTDir(t *testing.T) {
	img, lbl := mnistFiles(4, 28, 28)
	tests := []struct {
		name string
		gz   bool
	}{
		{"plain", false},
		{"gzipped", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			i, l, suffix := img, lbl, ""
			if tc.gz {
				i, l, suffix = gzipBytes(t, img), gzipBytes(t, lbl), ".gz"
			}
			writeFile(t, filepath.Join(dir, MNISTTrainImages+suffix), i)
			writeFile(t, filepath.Join(dir, MNISTTrainLabels+suffix), l)
			ds, err := OpenMNISTDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if ds.Name() != "mnist:"+dir {
				t.Fatalf("name %q, want mnist:%s", ds.Name(), dir)
			}
			checkMNIST(t, ds, 4, 28, 28)
		})
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, MNISTTrainImages), img)
	if _, err := OpenMNISTDir(dir); err == nil || !strings.Contains(err.Error(), MNISTTrainLabels) {
		t.Fatalf("missing labels: got %v, want an error naming %s", err, MNISTTrainLabels)
	}
}

func TestOpenMNISTErrors(t *testing.T) {
	img, lbl := mnistFiles(3, 4, 4)
	badLabel := bytes.Clone(lbl)
	badLabel[len(badLabel)-1] = 12
	_, lbl2 := mnistFiles(2, 4, 4)
	gz := gzipBytes(t, img)
	tests := []struct {
		name     string
		img, lbl []byte
		bad      string   // the file the error must name
		want     []string // more substrings of the error
	}{
		{"images bad magic", lbl, lbl, "images", []string{"bad magic", "0x00000801"}},
		{"labels bad magic", img, img, "labels", []string{"bad magic", "0x00000803"}},
		{"count mismatch", img, lbl2, "labels", []string{"2 labels", "3 images"}},
		{"images truncated", img[:len(img)-5], lbl, "images", []string{"truncated", "43 of the 48 bytes"}},
		{"images header truncated", img[:10], lbl, "images", []string{"truncated header"}},
		{"labels truncated", img, lbl[:len(lbl)-1], "labels", []string{"truncated"}},
		{"trailing bytes", append(bytes.Clone(img), 1, 2), lbl, "images", []string{"2 bytes after"}},
		{"bad label", img, badLabel, "labels", []string{"label 2", "12"}},
		{"no images", idxFile(idxImagesMagic, []uint32{0, 28, 28}, nil), idxFile(idxLabelsMagic, []uint32{0}, nil), "images", []string{"no pixels"}},
		{"huge header", idxFile(idxImagesMagic, []uint32{1 << 31, 1 << 31, 4}, nil), lbl, "images", []string{"more than"}},
		{"gzip truncated", gz[:len(gz)-12], lbl, "images", nil},
		{"gzip bad checksum", append(bytes.Clone(gz[:len(gz)-8]), 0, 0, 0, 0, 0, 0, 0, 0), lbl, "images", nil},
		{"gzip header only", []byte{0x1f, 0x8b}, lbl, "images", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ip := writeFile(t, filepath.Join(dir, "images"), tc.img)
			lp := writeFile(t, filepath.Join(dir, "labels"), tc.lbl)
			_, err := OpenMNIST(ip, lp)
			if err == nil {
				t.Fatal("got no error")
			}
			for _, w := range append(tc.want, filepath.Join(dir, tc.bad)) {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if _, err := OpenMNIST(filepath.Join(t.TempDir(), "none"), "none"); err == nil {
		t.Fatal("missing file: got no error")
	}
}

// FuzzParseMNIST checks that no pair of inputs, plain or gzipped, makes
// the parser, or a read of what it accepted, panic.
func FuzzParseMNIST(f *testing.F) {
	img, lbl := mnistFiles(2, 3, 3)
	f.Add(img, lbl)
	f.Add(gzipBytes(f, img), gzipBytes(f, lbl))
	f.Add(img[:20], lbl)
	f.Add(idxFile(idxImagesMagic, []uint32{1, 0xffffffff, 0xffffffff}, nil), lbl)
	f.Add([]byte{0x1f, 0x8b, 8, 0}, []byte{})
	f.Fuzz(func(t *testing.T, img, lbl []byte) {
		ds, err := parseMNIST("img", img, "lbl", lbl)
		if err != nil {
			if !strings.Contains(err.Error(), "img") && !strings.Contains(err.Error(), "lbl") {
				t.Fatalf("error %q names no file", err)
			}
			return
		}
		n := min(ds.Len(), 16)
		x, labels := readAll(t, ds, span(0, n))
		for _, l := range labels {
			if l < 0 || l >= 10 {
				t.Fatalf("label %d", l)
			}
		}
		for _, v := range x {
			if math.IsNaN(float64(v)) || math.Abs(float64(v)) > 3 {
				t.Fatalf("normalised value %v", v)
			}
		}
	})
}
