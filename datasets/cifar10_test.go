package datasets

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// cifarRecords returns n records whose label is (first+r) mod 10 and whose
// pixel p of channel c is (r·7 + c·50 + p) mod 256.
func cifarRecords(first, n int) []byte {
	data := make([]byte, 0, n*cifar10Record)
	for r := first; r < first+n; r++ {
		data = append(data, byte(r%10))
		for c := 0; c < 3; c++ {
			for p := 0; p < 1024; p++ {
				data = append(data, byte(r*7+c*50+p))
			}
		}
	}
	return data
}

func writeFile(t testing.TB, path string, data []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkCIFARSample compares sample i of x with record r of cifarRecords.
func checkCIFARSample(t *testing.T, x []float32, label int32, i, r int) {
	t.Helper()
	if label != int32(r%10) {
		t.Fatalf("sample %d: label %d, want %d", i, label, r%10)
	}
	for c := 0; c < 3; c++ {
		for p := 0; p < 1024; p++ {
			v := float64(byte(r*7+c*50+p)) / 255
			want := (v - CIFAR10Mean[c]) / CIFAR10Std[c]
			got := float64(x[i*cifar10Pixels+c*1024+p])
			// float32 rounding of a value below 3 in magnitude.
			if math.Abs(got-want) > 1e-6 {
				t.Fatalf("sample %d channel %d pixel %d: got %v, want %v", i, c, p, got, want)
			}
		}
	}
}

func TestOpenCIFAR10(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, filepath.Join(dir, "a.bin"), cifarRecords(0, 3))
	b := writeFile(t, filepath.Join(dir, "b.bin"), cifarRecords(3, 2))
	ds, err := OpenCIFAR10(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Len() != 5 || ds.Classes() != 10 || !ds.Shape().Equal(tensor.Shape{3, 32, 32}) {
		t.Fatalf("got %d samples, %d classes, shape %v; want 5, 10, [3 32 32]", ds.Len(), ds.Classes(), ds.Shape())
	}
	if !strings.HasPrefix(ds.Name(), "cifar10:") {
		t.Fatalf("name %q", ds.Name())
	}
	indices := []int{4, 0, 2, 4}
	x, labels := readAll(t, ds, indices)
	for i, r := range indices {
		checkCIFARSample(t, x, labels[i], i, r)
	}
	if err := ds.Read([]int{5}, make([]float32, cifar10Pixels), make([]int32, 1)); err == nil {
		t.Fatal("read past the end: no error")
	}
}

func TestOpenCIFAR10Dir(t *testing.T) {
	tests := []struct {
		name   string
		subdir string
	}{
		{"files in dir", ""},
		{"archive layout", cifar10Subdir},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for i, f := range CIFAR10TrainFiles {
				writeFile(t, filepath.Join(dir, tc.subdir, f), cifarRecords(2*i, 2))
			}
			ds, err := OpenCIFAR10Dir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if ds.Len() != 10 || ds.Name() != "cifar10:"+dir {
				t.Fatalf("got %s with %d samples, want cifar10:%s with 10", ds.Name(), ds.Len(), dir)
			}
			x, labels := readAll(t, ds, span(0, 10))
			for r := 0; r < 10; r++ {
				checkCIFARSample(t, x, labels[r], r, r)
			}
		})
	}
	if _, err := OpenCIFAR10Dir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "data_batch_1.bin") {
		t.Fatalf("empty dir: got %v, want an error naming data_batch_1.bin", err)
	}
}

func TestOpenCIFAR10Errors(t *testing.T) {
	badLabel := cifarRecords(0, 3)
	badLabel[cifar10Record] = 10
	tests := []struct {
		name string
		data []byte
		want []string // substrings of the error besides the file name
	}{
		{"empty", nil, []string{"no records"}},
		{"truncated record", cifarRecords(0, 3)[:2*cifar10Record+100], []string{"record 2", "6246"}},
		{"extra byte", append(cifarRecords(0, 1), 0), []string{"record 1"}},
		{"bad label", badLabel, []string{"record 1", "label 10"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			good := writeFile(t, filepath.Join(dir, "good.bin"), cifarRecords(0, 1))
			bad := writeFile(t, filepath.Join(dir, "bad.bin"), tc.data)
			_, err := OpenCIFAR10(good, bad)
			if err == nil {
				t.Fatal("got no error")
			}
			for _, w := range append(tc.want, bad) {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if _, err := OpenCIFAR10(); err == nil {
		t.Fatal("no files: got no error")
	}
	missing := filepath.Join(t.TempDir(), "missing.bin")
	if _, err := OpenCIFAR10(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing file: got %v", err)
	}
}

// FuzzParseCIFAR10 checks that no input makes the parser, or a read of
// what it accepted, panic.
func FuzzParseCIFAR10(f *testing.F) {
	f.Add(cifarRecords(0, 2))
	f.Add(cifarRecords(0, 1)[:100])
	f.Add([]byte{})
	bad := cifarRecords(0, 1)
	bad[0] = 255
	f.Add(bad)
	f.Fuzz(func(t *testing.T, data []byte) {
		labels, pixels, err := parseCIFAR10("fuzz.bin", data)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.bin") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		ds := newCIFAR10("fuzz")
		ds.labels, ds.pixels = labels, pixels
		if ds.Len()*cifar10Record != len(data) {
			t.Fatalf("%d records from %d bytes", ds.Len(), len(data))
		}
		x, got := readAll(t, ds, span(0, ds.Len()))
		for i, l := range got {
			if l != int32(data[i*cifar10Record]) {
				t.Fatalf("record %d: label %d, want %d", i, l, data[i*cifar10Record])
			}
		}
		for _, v := range x {
			if math.IsNaN(float64(v)) || math.Abs(float64(v)) > 3 {
				t.Fatalf("normalised value %v", v)
			}
		}
	})
}
