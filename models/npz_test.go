package models

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// npzArray is an array to write in a round-trip test: float32 data when
// i64 is nil.
type npzArray struct {
	name  string
	shape tensor.Shape
	f32   []float32
	i64   []int64
}

// writeNPZ writes arrays into an archive in memory.
func writeNPZ(t testing.TB, deflate bool, arrays ...npzArray) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewNPZWriter(&buf, deflate)
	for _, a := range arrays {
		var err error
		if a.i64 != nil {
			err = w.Int64(a.name, a.shape, a.i64)
		} else {
			err = w.Float32(a.name, a.shape, a.f32)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Bytes() != int64(buf.Len()) {
		t.Errorf("Bytes: got %d, want %d", w.Bytes(), buf.Len())
	}
	return buf.Bytes()
}

func openNPZBytes(t testing.TB, b []byte) *NPZReader {
	t.Helper()
	r, err := OpenNPZ(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNPZRoundTrip(t *testing.T) {
	rng := newRand(1)
	// The large array spans several of the writer's 256 KiB chunks and
	// of the reader's 1 MiB buffers, and does not end on a boundary of
	// either.
	large := randSlice(rng, 1<<20+3)
	arrays := []npzArray{
		{name: "features.0.weight", shape: tensor.Shape{4, 3, 3, 3}, f32: randSlice(rng, 108)},
		{name: "features.0.bias", shape: tensor.Shape{4}, f32: randSlice(rng, 4)},
		{name: "loss", shape: tensor.Shape{}, f32: []float32{2.5}},
		{name: "bn.num_batches_tracked", shape: tensor.Shape{}, i64: []int64{-7}},
		{name: "target", shape: tensor.Shape{5}, i64: []int64{0, 1, math.MaxInt64, math.MinInt64, 3}},
		{name: "special", shape: tensor.Shape{1, 5}, f32: []float32{float32(math.Inf(1)), float32(math.Inf(-1)), -0.0, math.SmallestNonzeroFloat32, math.MaxFloat32}},
		{name: "large", shape: tensor.Shape{1<<20 + 3}, f32: large},
	}
	for _, tc := range []struct {
		name    string
		deflate bool
	}{{"stored", false}, {"deflated", true}} {
		t.Run(tc.name, func(t *testing.T) {
			b := writeNPZ(t, tc.deflate, arrays...)
			r := openNPZBytes(t, b)
			var want []string
			for _, a := range arrays {
				want = append(want, a.name)
			}
			if got := r.Keys(); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("keys: got %v, want %v", got, want)
			}
			for _, a := range arrays {
				got, err := r.Read(a.name)
				if err != nil {
					t.Fatal(err)
				}
				if !got.Shape.Equal(a.shape) || len(got.Shape) != len(a.shape) {
					t.Errorf("%s: got shape %v, want %v", a.name, got.Shape, a.shape)
				}
				wantType := DTypeFloat32
				if a.i64 != nil {
					wantType = DTypeInt64
				}
				if got.DType != wantType {
					t.Errorf("%s: got dtype %s, want %s", a.name, got.DType, wantType)
				}
				info, err := r.Info(a.name)
				if err != nil || !info.Shape.Equal(a.shape) || info.DType != wantType {
					t.Errorf("%s: Info got %+v, %v; want %v %s", a.name, info, err, a.shape, wantType)
				}
				if a.i64 != nil {
					if fmt.Sprint(got.Int64) != fmt.Sprint(a.i64) || got.Float32 != nil {
						t.Errorf("%s: got %v (float32 %v), want %v", a.name, got.Int64, got.Float32, a.i64)
					}
					continue
				}
				if len(got.Float32) != len(a.f32) || got.Int64 != nil {
					t.Fatalf("%s: got %d float32 and %d int64 values, want %d float32", a.name, len(got.Float32), len(got.Int64), len(a.f32))
				}
				for i := range a.f32 {
					if math.Float32bits(got.Float32[i]) != math.Float32bits(a.f32[i]) {
						t.Fatalf("%s[%d]: got %v, want %v", a.name, i, got.Float32[i], a.f32[i])
					}
				}
			}
		})
	}
}

func TestNPYHeaderMatchesNumpy(t *testing.T) {
	// The headers numpy 1.24's numpy.save writes for these arrays,
	// copied from its output.
	pad := func(dict string) string {
		return "\x93NUMPY\x01\x00v\x00" + dict + strings.Repeat(" ", 128-10-1-len(dict)) + "\n"
	}
	tests := []struct {
		name  string
		descr string
		shape tensor.Shape
		want  string
	}{
		{"matrix", "<f4", tensor.Shape{2, 3}, pad("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }")},
		{"0-d int64", "<i8", tensor.Shape{}, pad("{'descr': '<i8', 'fortran_order': False, 'shape': (), }")},
		{"vector", "<f4", tensor.Shape{7}, pad("{'descr': '<f4', 'fortran_order': False, 'shape': (7,), }")},
		{"conv weight", "<f4", tensor.Shape{64, 3, 3, 3}, pad("{'descr': '<f4', 'fortran_order': False, 'shape': (64, 3, 3, 3), }")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := npyHeader(tc.descr, tc.shape)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	// A long shape needs a second 64-byte line; the data still start
	// aligned.
	h, err := npyHeader("<f4", tensor.Shape{1000000, 1000000, 1000000, 1000000, 1000000, 1000000, 1000000})
	if err != nil {
		t.Fatal(err)
	}
	if len(h)%npyAlign != 0 || h[len(h)-1] != '\n' || int(binary.LittleEndian.Uint16(h[8:])) != len(h)-10 {
		t.Errorf("long header: %d bytes, %q", len(h), h)
	}
}

// rawNPY returns a .npy file with the given header dict and data bytes,
// to test what our writer never writes.
func rawNPY(dict string, data []byte) []byte {
	n := 10 + len(dict) + 1
	pad := (64 - n%64) % 64
	hdr := dict + strings.Repeat(" ", pad) + "\n"
	b := append([]byte(npyMagic), 1, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(hdr)))
	return append(append(b, hdr...), data...)
}

// rawZip returns an archive of stored entries, names with their suffix.
func rawZip(t testing.TB, entries ...[2][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		f, err := zw.CreateHeader(&zip.FileHeader{Name: string(e[0]), Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(e[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func entry(name string, data []byte) [2][]byte { return [2][]byte{[]byte(name), data} }

func TestNPZReadOtherLayouts(t *testing.T) {
	f64 := binary.LittleEndian.AppendUint64(nil, math.Float64bits(0.1))
	f64 = binary.LittleEndian.AppendUint64(f64, math.Float64bits(-3))
	big := binary.BigEndian.AppendUint32(nil, math.Float32bits(1.5))
	big = binary.BigEndian.AppendUint32(big, math.Float32bits(-2))
	b := rawZip(t,
		entry("w64.npy", rawNPY("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", f64)),
		entry("big.npy", rawNPY("{'descr': '>f4', 'fortran_order': False, 'shape': (1, 2), }", big)),
	)
	r := openNPZBytes(t, b)
	a, err := r.Read("w64")
	if err != nil {
		t.Fatal(err)
	}
	if a.DType != DTypeFloat64 || fmt.Sprint(a.Float32) != fmt.Sprint([]float32{0.1, -3}) {
		t.Errorf("float64: got %s %v, want float64 rounded to [0.1 -3]", a.DType, a.Float32)
	}
	a, err = r.Read("big")
	if err != nil {
		t.Fatal(err)
	}
	if a.DType != DTypeFloat32 || fmt.Sprint(a.Float32) != "[1.5 -2]" || !a.Shape.Equal(tensor.Shape{1, 2}) {
		t.Errorf("big-endian: got %s %v %v, want float32 [1 2] [1.5 -2]", a.DType, a.Shape, a.Float32)
	}
}

func TestNPZReadErrors(t *testing.T) {
	good := writeNPZ(t, false, npzArray{name: "w", shape: tensor.Shape{3, 2}, f32: []float32{1, 2, 3, 4, 5, 6}})
	f32 := make([]byte, 24)
	hdr := func(descr, order, shape string) string {
		return "{'descr': '" + descr + "', 'fortran_order': " + order + ", 'shape': " + shape + ", }"
	}
	corruptData := bytes.Clone(good)
	// The data of the only entry start at byte 30 (local header) + 5
	// (name) + 128 (npy header); flip a bit of the first value, so that
	// only the checksum can tell.
	corruptData[30+5+128] ^= 1
	tests := []struct {
		name    string
		archive []byte
		open    bool   // the error comes from OpenNPZ
		want    string // part of the error
	}{
		{"empty file", nil, true, "zip"},
		{"not a zip", []byte("hello, world, this is not an archive at all"), true, "zip"},
		{"truncated archive", good[:len(good)/2], true, "zip"},
		{"not an npy entry", rawZip(t, entry("notes.txt", []byte("hi"))), true, "not a .npy array"},
		{"bad magic", rawZip(t, entry("w.npy", []byte("\x93NUMPZ\x01\x00\x10\x00{}"))), false, "bad magic"},
		{"short header", rawZip(t, entry("w.npy", []byte("\x93NUM"))), false, "unexpected EOF"},
		{"version 9", rawZip(t, entry("w.npy", []byte("\x93NUMPY\x09\x00\x10\x00{}"))), false, "version 9.0"},
		{"huge header length", rawZip(t, entry("w.npy", []byte("\x93NUMPY\x02\x00\xff\xff\xff\xff{}"))), false, "header length"},
		{"header without newline", rawZip(t, entry("w.npy", []byte("\x93NUMPY\x01\x00\x04\x00{}  "))), false, "corrupt .npy header"},
		{"keys out of order", rawZip(t, entry("w.npy", rawNPY("{'shape': (6,), 'fortran_order': False, 'descr': '<f4', }", f32))), false, "corrupt .npy header"},
		{"unsupported type", rawZip(t, entry("w.npy", rawNPY(hdr("<i4", "False", "(6,)"), f32))), false, "unsupported element type"},
		{"odd element size", rawZip(t, entry("w.npy", rawNPY(hdr("<f3", "False", "(6,)"), f32))), false, "unsupported element type"},
		{"fortran order", rawZip(t, entry("w.npy", rawNPY(hdr("<f4", "True", "(3, 2)"), f32))), false, "Fortran"},
		{"negative dimension", rawZip(t, entry("w.npy", rawNPY(hdr("<f4", "False", "(-6,)"), f32))), false, "shape"},
		{"shape larger than the data", rawZip(t, entry("w.npy", rawNPY(hdr("<f4", "False", "(1000000, 1000000)"), f32))), false, "does not fit"},
		{"data shorter than the shape", rawZip(t, entry("w.npy", rawNPY(hdr("<f4", "False", "(6,)"), f32[:22]))), false, "truncated"},
		{"data longer than the shape", rawZip(t, entry("w.npy", rawNPY(hdr("<f4", "False", "(5,)"), f32))), false, "beyond the array"},
		{"float64 beyond float32", rawZip(t, entry("w.npy", rawNPY(hdr("<f8", "False", "()"),
			binary.LittleEndian.AppendUint64(nil, math.Float64bits(1e300))))), false, "float32's range"},
		{"checksum", corruptData, false, "checksum"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := OpenNPZ(bytes.NewReader(tc.archive), int64(len(tc.archive)))
			if tc.open {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("OpenNPZ: got error %v, want one containing %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenNPZ: %v", err)
			}
			_, err = r.Read("w")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Read: got error %v, want one containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "w.npy") {
				t.Errorf("error %q does not name the entry", err)
			}
		})
	}
	r := openNPZBytes(t, good)
	if _, err := r.Read("nosuch"); err == nil || !strings.Contains(err.Error(), `"nosuch"`) {
		t.Errorf("missing array: got %v, want an error naming it", err)
	}
}

func TestNPZWriterErrors(t *testing.T) {
	w := NewNPZWriter(&bytes.Buffer{}, false)
	if err := w.Float32("a", tensor.Shape{1}, []float32{1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Int64("a", tensor.Shape{}, []int64{1}); err == nil {
		t.Error("duplicate name: got no error")
	}
	if err := w.Float32("", tensor.Shape{}, []float32{1}); err == nil {
		t.Error("empty name: got no error")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("shape [2, 2] with 3 values: got no panic")
			}
		}()
		_ = w.Float32("b", tensor.Shape{2, 2}, []float32{1, 2, 3})
	}()
	if err := w.Float32("c", tensor.Shape{2}, []float32{1, 2}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := NewNPZWriter(failingWriter{}, false).Float32("x", tensor.Shape{1 << 16}, make([]float32, 1<<16)); err == nil {
		t.Error("failing writer: got no error")
	}
}

type failingWriter struct{}

func (failingWriter) Write(p []byte) (int, error) { return 0, fmt.Errorf("disk full") }

func TestNPZFieldConfig(t *testing.T) {
	var buf bytes.Buffer
	w := NewNPZWriter(&buf, false)
	config := []byte(`{"model_type": "gpt2", "n_layer": 2}`)
	if err := w.FieldConfig(config); err != nil {
		t.Fatal(err)
	}
	if err := w.Float32("w", tensor.Shape{1}, []float32{1}); err != nil {
		t.Fatal(err)
	}
	if err := w.FieldConfig(config); err == nil || !strings.Contains(err.Error(), "two config.json") {
		t.Errorf("a second config: got %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := openNPZBytes(t, buf.Bytes())
	if got, err := r.FieldConfig(); err != nil || !bytes.Equal(got, config) {
		t.Errorf("FieldConfig: got %q, %v; want %q", got, err, config)
	}
	if keys := r.Keys(); len(keys) != 1 || keys[0] != "w" {
		t.Errorf("keys: got %q, want the array alone", keys)
	}
	// Without one, none; a second entry of the name is no array.
	if got, err := openNPZBytes(t, writeNPZ(t, false, npzArray{name: "w", shape: tensor.Shape{}, i64: []int64{1}})).FieldConfig(); got != nil || err != nil {
		t.Errorf("no config: got %q, %v", got, err)
	}
	two := rawZip(t, entry(FieldConfigEntry, config), entry(FieldConfigEntry, config))
	if _, err := OpenNPZ(bytes.NewReader(two), int64(len(two))); err == nil || !strings.Contains(err.Error(), "not a .npy array") {
		t.Errorf("two config entries: got %v", err)
	}
	big := rawZip(t, entry(FieldConfigEntry, bytes.Repeat([]byte(" "), maxFieldConfig+1)))
	if _, err := openNPZBytes(t, big).FieldConfig(); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Errorf("a config over the limit: got %v", err)
	}
}

// FuzzOpenNPZ feeds arbitrary bytes to the reader: every outcome but a
// panic or a hang is fine.
func FuzzOpenNPZ(f *testing.F) {
	f.Add(writeNPZ(f, false,
		npzArray{name: "w", shape: tensor.Shape{2, 2}, f32: []float32{1, 2, 3, 4}},
		npzArray{name: "n", shape: tensor.Shape{}, i64: []int64{3}}))
	f.Add(writeNPZ(f, true, npzArray{name: "w", shape: tensor.Shape{3}, f32: []float32{1, 2, 3}}))
	f.Add(rawZip(f, entry("w.npy", rawNPY("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", make([]byte, 8)))))
	f.Add(rawZip(f, entry(FieldConfigEntry, []byte(`{"n_layer": 2}`))))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := OpenNPZ(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		if c, err := r.FieldConfig(); err == nil && len(c) > maxFieldConfig {
			t.Fatalf("config.json of %d bytes", len(c))
		}
		for _, k := range r.Keys() {
			if _, err := r.Info(k); err != nil {
				continue
			}
			a, err := r.Read(k)
			if err == nil && len(a.Float32)+len(a.Int64) != a.Shape.Numel() {
				t.Fatalf("%s: %d values for shape %v", k, len(a.Float32)+len(a.Int64), a.Shape)
			}
		}
	})
}

// BenchmarkWriteNPZ compares stored and deflated archives of weights
// drawn as a Kaiming initialisation draws them (their mantissas are as
// random as trained weights'), reporting MB/s and the archive's size
// relative to the raw data.
func BenchmarkWriteNPZStored4M(b *testing.B)   { benchmarkWriteNPZ(b, 4<<20, false) }
func BenchmarkWriteNPZDeflated4M(b *testing.B) { benchmarkWriteNPZ(b, 4<<20, true) }

func benchmarkWriteNPZ(b *testing.B, n int, deflate bool) {
	rng := newRand(1)
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(rng.NormFloat64() * 0.02)
	}
	b.SetBytes(int64(4 * n))
	var size int64
	for b.Loop() {
		w := NewNPZWriter(&discardCounter{}, deflate)
		if err := w.Float32("weight", tensor.Shape{n}, data); err != nil {
			b.Fatal(err)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		size = w.Bytes()
	}
	b.ReportMetric(float64(size)/float64(4*n), "size/raw")
}

// BenchmarkReadNPZStored4M measures reading through npyio.
func BenchmarkReadNPZStored4M(b *testing.B) {
	n := 4 << 20
	archive := writeNPZ(b, false, npzArray{name: "weight", shape: tensor.Shape{n}, f32: make([]float32, n)})
	b.SetBytes(int64(4 * n))
	for b.Loop() {
		r := openNPZBytes(b, archive)
		if _, err := r.Read("weight"); err != nil {
			b.Fatal(err)
		}
	}
}

type discardCounter struct{}

func (discardCounter) Write(p []byte) (int, error) { return len(p), nil }
