package models

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// stTensor is a tensor to write in a test.
type stTensor struct {
	name  string
	shape tensor.Shape
	f32   []float32
	i64   []int64
}

// writeSafetensors writes the tensors and metadata (key, value pairs)
// into memory.
func writeSafetensors(t testing.TB, meta []string, tensors ...stTensor) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewSafetensorsWriter(&buf)
	for i := 0; i+1 < len(meta); i += 2 {
		if err := w.Metadata(meta[i], meta[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	for _, x := range tensors {
		var err error
		if x.i64 != nil {
			err = w.Int64(x.name, x.shape, x.i64)
		} else {
			err = w.Float32(x.name, x.shape, x.f32)
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

func openSafetensorsBytes(t testing.TB, b []byte) *SafetensorsReader {
	t.Helper()
	r, err := OpenSafetensors(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// rawSafetensors assembles a file from a header, taken as it is, and
// data.
func rawSafetensors(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

// TestSafetensorsReferenceBytes checks the writer against the bytes the
// reference implementation's own tests expect (safetensors/src/tensor.rs:
// test_serialization, test_serialization_forced_alignement, test_empty).
func TestSafetensorsReferenceBytes(t *testing.T) {
	f32s := func(v ...float32) []byte {
		var b []byte
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
		return b
	}
	data := []float32{0, 1, 2, 3, 4, 5}
	tests := []struct {
		name    string
		meta    []string
		tensors []stTensor
		want    []byte
	}{
		{"one tensor", nil, []stTensor{{name: "attn.0", shape: tensor.Shape{1, 2, 3}, f32: data}},
			rawSafetensors(`{"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}}`, f32s(data...))},
		{"padded header", nil, []stTensor{{name: "attn0", shape: tensor.Shape{1, 1, 2, 3}, f32: data}},
			rawSafetensors(`{"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}       `, f32s(data...))},
		{"empty", nil, nil, rawSafetensors("{}      ", nil)},
		{"empty with metadata", []string{"framework", "pt"}, nil,
			rawSafetensors(`{"__metadata__":{"framework":"pt"}}     `, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := writeSafetensors(t, tc.meta, tc.tensors...)
			if !bytes.Equal(got, tc.want) {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestSafetensorsRoundTrip(t *testing.T) {
	tensors := []stTensor{
		{name: "b.weight", shape: tensor.Shape{2, 3}, f32: []float32{1, -2, 3.5, float32(math.Inf(1)), 0, -0.25}},
		{name: "a.bias", shape: tensor.Shape{3}, f32: []float32{7, 8, 9}},
		{name: "count", shape: tensor.Shape{}, i64: []int64{-42}},
		{name: "ids", shape: tensor.Shape{1, 2}, i64: []int64{math.MaxInt64, 3}},
		{name: "scalar", shape: tensor.Shape{}, f32: []float32{0.5}},
		{name: "none", shape: tensor.Shape{0, 4}, f32: []float32{}},
		{name: "odd \"name\"\n\x01é", shape: tensor.Shape{1}, f32: []float32{1}},
	}
	meta := []string{"format", "pt", "config", `{"n_layer": 2, "a": "<&>"}`}
	first := writeSafetensors(t, meta, tensors...)
	r := openSafetensorsBytes(t, first)

	// The reference's order: 8-byte types first, then by name.
	want := []string{"count", "ids", "a.bias", "b.weight", "none", "odd \"name\"\n\x01é", "scalar"}
	if got := r.Keys(); !slices.Equal(got, want) {
		t.Errorf("keys: got %q, want %q", got, want)
	}
	if got := r.Metadata(); len(got) != 2 || got["format"] != "pt" || got["config"] != meta[3] {
		t.Errorf("metadata: got %q", got)
	}
	if c, err := r.FieldConfig(); err != nil || string(c) != meta[3] {
		t.Errorf("FieldConfig: got %q, %v", c, err)
	}
	// The header is aligned, and so is every tensor.
	n := binary.LittleEndian.Uint64(first)
	if n%8 != 0 {
		t.Errorf("header of %d bytes, not a multiple of 8", n)
	}
	for _, e := range r.tensors {
		if e.begin%int64(safetensorsDTypes[e.dtype].size) != 0 {
			t.Errorf("tensor at %d not aligned to %d", e.begin, safetensorsDTypes[e.dtype].size)
		}
	}

	// Read everything back and write it again: the same bytes.
	var again []stTensor
	for _, x := range tensors {
		a, err := r.Read(x.name)
		if err != nil {
			t.Fatal(err)
		}
		if !a.Shape.Equal(x.shape) {
			t.Errorf("%s: shape %v, want %v", x.name, a.Shape, x.shape)
		}
		if x.i64 != nil {
			if a.DType != DTypeInt64 || !slices.Equal(a.Int64, x.i64) {
				t.Errorf("%s: got %s %v, want int64 %v", x.name, a.DType, a.Int64, x.i64)
			}
		} else if a.DType != DTypeFloat32 || !slices.Equal(a.Float32, x.f32) {
			t.Errorf("%s: got %s %v, want float32 %v", x.name, a.DType, a.Float32, x.f32)
		}
		again = append(again, stTensor{name: x.name, shape: a.Shape, f32: a.Float32, i64: a.Int64})
	}
	md := r.Metadata()
	var meta2 []string
	for _, k := range []string{"config", "format"} {
		meta2 = append(meta2, k, md[k])
	}
	if second := writeSafetensors(t, meta2, again...); !bytes.Equal(first, second) {
		t.Errorf("write, read, write: the files differ\n%q\n%q", first, second)
	}
}

func TestSafetensorsOtherTypes(t *testing.T) {
	var data []byte
	// F64: 1.5, -1e-3; F16: 1, -2, 65504, the smallest subnormal, -0,
	// +Inf; BF16: 1, -3.
	for _, v := range []float64{1.5, -1e-3} {
		data = binary.LittleEndian.AppendUint64(data, math.Float64bits(v))
	}
	for _, h := range []uint16{0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000, 0x7c00} {
		data = binary.LittleEndian.AppendUint16(data, h)
	}
	for _, h := range []uint16{0x3f80, 0xc040} {
		data = binary.LittleEndian.AppendUint16(data, h)
	}
	data = append(data, 1, 2) // U8
	header := `{"d":{"dtype":"F64","shape":[2],"data_offsets":[0,16]},` +
		`"h":{"dtype":"F16","shape":[2,3],"data_offsets":[16,28]},` +
		`"b":{"dtype":"BF16","shape":[2],"data_offsets":[28,32]},` +
		`"u":{"dtype":"U8","shape":[2],"data_offsets":[32,34]}}`
	r := openSafetensorsBytes(t, rawSafetensors(header, data))
	tests := []struct {
		name, dtype string
		want        []float32
	}{
		{"d", DTypeFloat64, []float32{1.5, float32(-1e-3)}},
		{"h", DTypeFloat16, []float32{1, -2, 65504, float32(math.Ldexp(1, -24)), float32(math.Copysign(0, -1)), float32(math.Inf(1))}},
		{"b", DTypeBFloat16, []float32{1, -3}},
	}
	for _, tc := range tests {
		a, err := r.Read(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if a.DType != tc.dtype || len(a.Float32) != len(tc.want) {
			t.Fatalf("%s: got %s %v, want %s %v", tc.name, a.DType, a.Float32, tc.dtype, tc.want)
		}
		for i := range tc.want {
			if math.Float32bits(a.Float32[i]) != math.Float32bits(tc.want[i]) {
				t.Errorf("%s[%d]: got %v, want %v", tc.name, i, a.Float32[i], tc.want[i])
			}
		}
	}
	if info, err := r.Info("u"); err != nil || info.DType != "uint8" {
		t.Errorf("Info(u): got %+v, %v; want uint8", info, err)
	}
	if _, err := r.Read("u"); err == nil || !strings.Contains(err.Error(), "unsupported element type U8") {
		t.Errorf("Read(u): got %v, want an unsupported element type", err)
	}
	big := rawSafetensors(`{"x":{"dtype":"F64","shape":[],"data_offsets":[0,8]}}`, binary.LittleEndian.AppendUint64(nil, math.Float64bits(1e300)))
	if _, err := openSafetensorsBytes(t, big).Read("x"); err == nil || !strings.Contains(err.Error(), "float32's range") {
		t.Errorf("float64 beyond float32: got %v", err)
	}
}

func TestSafetensorsMalformed(t *testing.T) {
	f8 := make([]byte, 8)
	entry := func(dtype, shape, offsets string) string {
		return `{"dtype":"` + dtype + `","shape":` + shape + `,"data_offsets":` + offsets + `}`
	}
	good := `{"w":` + entry("F32", "[2]", "[0,8]") + `}`
	tests := []struct {
		name string
		file []byte
		want string
	}{
		{"empty file", nil, "shorter than the 8-byte"},
		{"header length only", rawSafetensors("", nil)[:8], "too short"},
		{"huge header length", binary.LittleEndian.AppendUint64(nil, 1<<62), "over the 100000000"},
		{"header past the end", append(binary.LittleEndian.AppendUint64(nil, 100), "{}"...), "runs past the file's end"},
		{"not UTF-8", rawSafetensors("{\"\xff\":1}", nil), "UTF-8"},
		{"not an object", rawSafetensors(`["w"]    `, nil), "not a JSON object"},
		{"not JSON", rawSafetensors(`{"w":}`, nil), "not JSON"},
		{"truncated JSON", rawSafetensors(`{"w":{"dtype":"F32"`, nil), "not JSON"},
		{"trailing bytes", rawSafetensors(good+"x", f8), "not padding"},
		{"two objects", rawSafetensors(good+"{}", f8), "not padding"},
		{"name twice", rawSafetensors(`{"w":`+entry("F32", "[1]", "[0,4]")+`,"w":`+entry("F32", "[1]", "[4,8]")+`}`, f8), "appears twice"},
		{"empty name", rawSafetensors(`{"":`+entry("F32", "[2]", "[0,8]")+`}`, f8), "empty name"},
		{"unknown dtype", rawSafetensors(`{"w":`+entry("F31", "[2]", "[0,8]")+`}`, f8), `unknown dtype "F31"`},
		{"no dtype", rawSafetensors(`{"w":{"shape":[2],"data_offsets":[0,8]}}`, f8), "lacks dtype"},
		{"entry not an object", rawSafetensors(`{"w":[1,2]}`, f8), "not an entry"},
		{"negative dimension", rawSafetensors(`{"w":`+entry("F32", "[-2]", "[0,8]")+`}`, f8), `tensor "w"`},
		{"fractional dimension", rawSafetensors(`{"w":`+entry("F32", "[2.5]", "[0,8]")+`}`, f8), `tensor "w"`},
		{"three offsets", rawSafetensors(`{"w":`+entry("F32", "[2]", "[0,8,8]")+`}`, f8), "want [begin, end]"},
		{"offsets reversed", rawSafetensors(`{"w":`+entry("F32", "[2]", "[8,0]")+`}`, f8), "not a range"},
		{"size differs from the shape", rawSafetensors(`{"w":`+entry("F32", "[3]", "[0,8]")+`}`, f8), "takes 12 bytes"},
		{"shape overflows", rawSafetensors(`{"w":`+entry("F32", "[4294967296,4294967296]", "[0,8]")+`}`, f8), "too many elements"},
		{"hole", rawSafetensors(`{"w":`+entry("F32", "[1]", "[4,8]")+`}`, f8), "leaving a hole"},
		{"overlap", rawSafetensors(`{"a":`+entry("F32", "[2]", "[0,8]")+`,"b":`+entry("F32", "[1]", "[4,8]")+`}`, f8), "overlaps"},
		{"data shorter", rawSafetensors(good, f8[:6]), "hold 8 bytes of data, the file 6"},
		{"data longer", rawSafetensors(good, append(f8, 0)), "hold 8 bytes of data, the file 9"},
		{"metadata not strings", rawSafetensors(`{"__metadata__":{"a":1}}`, nil), "not an object of strings"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := OpenSafetensors(bytes.NewReader(tc.file), int64(len(tc.file)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "read safetensors: ") {
				t.Errorf("error %q does not say what was read", err)
			}
		})
	}
	r := openSafetensorsBytes(t, rawSafetensors(good, f8))
	if _, err := r.Read("nosuch"); err == nil || !strings.Contains(err.Error(), `"nosuch"`) {
		t.Errorf("missing tensor: got %v, want an error naming it", err)
	}
	// A reader whose data vanish after the header was read.
	file := rawSafetensors(good, f8)
	r = openSafetensorsBytes(t, file)
	r.r = bytes.NewReader(file[:len(file)-2])
	if _, err := r.Read("w"); err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Errorf("truncated data: got %v, want unexpected EOF", err)
	}
}

func TestSafetensorsWriterErrors(t *testing.T) {
	w := NewSafetensorsWriter(&bytes.Buffer{})
	if err := w.Float32("a", tensor.Shape{1}, []float32{1}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"twice", w.Float32("a", tensor.Shape{1}, []float32{1}), "two tensors named"},
		{"empty name", w.Int64("", tensor.Shape{}, []int64{1}), "empty tensor name"},
		{"metadata's name", w.Int64("__metadata__", tensor.Shape{}, []int64{1}), "may not be named"},
		{"not UTF-8", w.Int64("\xff", tensor.Shape{}, []int64{1}), "not UTF-8"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, tc.err, tc.want)
		}
	}
	mustPanic(t, "wrong length", "elements", func() { w.Float32("b", tensor.Shape{2}, []float32{1}) })
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil {
		t.Error("second Close: got no error")
	}
	if err := w.Float32("c", tensor.Shape{1}, []float32{1}); err == nil {
		t.Error("a tensor after Close: got no error")
	}
	if err := NewSafetensorsWriter(failingWriter{}).Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("failing writer: got %v", err)
	}
}

// FuzzOpenSafetensors feeds arbitrary bytes to the reader: every outcome
// but a panic, a hang or an inconsistent read is fine, and a file it
// reads whole, of float32 and int64 tensors, writes back to a file that
// reads back the same.
func FuzzOpenSafetensors(f *testing.F) {
	f.Add(writeSafetensors(f, []string{"format", "pt"},
		stTensor{name: "w", shape: tensor.Shape{2, 2}, f32: []float32{1, 2, 3, 4}},
		stTensor{name: "n", shape: tensor.Shape{}, i64: []int64{3}}))
	f.Add(writeSafetensors(f, nil, stTensor{name: "e", shape: tensor.Shape{0}, f32: []float32{}}))
	f.Add(rawSafetensors(`{"h":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},"b":{"dtype":"BF16","shape":[1],"data_offsets":[2,4]}}`, []byte{0, 0x3c, 0x80, 0x3f}))
	f.Add(rawSafetensors(`{"d":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := OpenSafetensors(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		var all []stTensor
		whole := true
		for _, k := range r.Keys() {
			info, err := r.Info(k)
			if err != nil {
				t.Fatalf("Info(%q) of a listed key: %v", k, err)
			}
			a, err := r.Read(k)
			if err != nil {
				whole = false
				continue
			}
			if len(a.Float32)+len(a.Int64) != a.Shape.Numel() || !a.Shape.Equal(info.Shape) {
				t.Fatalf("%s: %d values for shape %v (info %v)", k, len(a.Float32)+len(a.Int64), a.Shape, info.Shape)
			}
			whole = whole && (a.DType == DTypeFloat32 || a.DType == DTypeInt64)
			all = append(all, stTensor{name: k, shape: a.Shape, f32: a.Float32, i64: a.Int64})
		}
		if !whole {
			return
		}
		var meta []string
		for k, v := range r.Metadata() {
			meta = append(meta, k, v)
		}
		again := openSafetensorsBytes(t, writeSafetensors(t, meta, all...))
		for _, x := range all {
			a, err := again.Read(x.name)
			if err != nil {
				t.Fatal(err)
			}
			if !a.Shape.Equal(x.shape) || fmt.Sprint(a.Int64) != fmt.Sprint(x.i64) || !sameBits(a.Float32, x.f32) {
				t.Fatalf("%s: rewritten as %v %v %v, read %v %v %v", x.name, a.Shape, a.Float32, a.Int64, x.shape, x.f32, x.i64)
			}
		}
	})
}

// sameBits reports whether a and b hold the same float32 bit patterns.
func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
