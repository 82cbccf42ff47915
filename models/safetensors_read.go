package models

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/bits"
	"os"
	"sort"
	"unicode/utf8"

	"github.com/pipecast/pipecast/tensor"
)

// SafetensorsReader reads the tensors of a .safetensors file (see
// safetensors.go for the format and what is checked). Open parses and
// checks the whole header; Read reads one tensor's bytes. It reads
// float32, float64 (rounded to float32, as NPZReader does), float16 and
// bfloat16 (exactly) and int64 tensors; Info describes tensors of the
// format's other types, which Read refuses.
type SafetensorsReader struct {
	r         io.ReaderAt
	dataStart int64
	tensors   map[string]safetensorsEntry
	keys      []string // in data order
	metadata  map[string]string
	closer    io.Closer
}

// safetensorsEntry is one tensor of a header.
type safetensorsEntry struct {
	dtype      int // index in safetensorsDTypes
	shape      tensor.Shape
	begin, end int64 // in the data buffer
}

// safetensorsInfo is a tensor's entry as the header's JSON spells it.
type safetensorsInfo struct {
	DType       *string   `json:"dtype"`
	Shape       *[]uint64 `json:"shape"`
	DataOffsets *[]uint64 `json:"data_offsets"`
}

// OpenSafetensors opens the file held by r, of size bytes, reading and
// checking its header.
func OpenSafetensors(r io.ReaderAt, size int64) (*SafetensorsReader, error) {
	f, err := openSafetensors(r, size)
	if err != nil {
		return nil, fmt.Errorf("read safetensors: %w", err)
	}
	return f, nil
}

func openSafetensors(r io.ReaderAt, size int64) (*SafetensorsReader, error) {
	var pre [8]byte
	if size < 8 {
		return nil, fmt.Errorf("file of %d bytes is shorter than the 8-byte header length", size)
	}
	if _, err := r.ReadAt(pre[:], 0); err != nil {
		return nil, fmt.Errorf("header length: %w", noEOF(err))
	}
	n := binary.LittleEndian.Uint64(pre[:])
	switch {
	case n > maxSafetensorsHeader:
		return nil, fmt.Errorf("header length %d is over the %d bytes a reader accepts", n, maxSafetensorsHeader)
	case n > uint64(size-8):
		return nil, fmt.Errorf("header length %d runs past the file's end (%d bytes follow the length)", n, size-8)
	case n < 2:
		return nil, fmt.Errorf("header length %d: too short for a JSON object", n)
	}
	header := make([]byte, n)
	if _, err := r.ReadAt(header, 8); err != nil {
		return nil, fmt.Errorf("header: %w", noEOF(err))
	}
	f := &SafetensorsReader{r: r, dataStart: 8 + int64(n), tensors: map[string]safetensorsEntry{}}
	if err := f.parseHeader(header); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if err := f.checkOffsets(size - f.dataStart); err != nil {
		return nil, err
	}
	return f, nil
}

// parseHeader reads the header's JSON object into f's tensors and
// metadata.
func (f *SafetensorsReader) parseHeader(header []byte) error {
	if !utf8.Valid(header) {
		return errors.New("not valid UTF-8")
	}
	if header[0] != '{' {
		return fmt.Errorf("starts with %q, not a JSON object's '{'", header[0])
	}
	dec := json.NewDecoder(bytes.NewReader(header))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("not JSON: %w", err)
		}
		name, ok := tok.(string)
		if !ok {
			return fmt.Errorf("not JSON: key %v", tok)
		}
		if seen[name] {
			return fmt.Errorf("%q appears twice", name)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("not JSON: %q: %w", name, err)
		}
		if name == safetensorsMetadataKey {
			if err := json.Unmarshal(raw, &f.metadata); err != nil {
				return fmt.Errorf("%s is not an object of strings: %w", safetensorsMetadataKey, err)
			}
			continue
		}
		e, err := parseSafetensorsInfo(raw)
		if err != nil {
			return fmt.Errorf("tensor %q: %w", name, err)
		}
		if name == "" {
			return errors.New("a tensor with an empty name")
		}
		f.tensors[name] = e
		f.keys = append(f.keys, name)
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if rest := header[dec.InputOffset():]; len(bytes.Trim(rest, " \t\r\n")) > 0 {
		return fmt.Errorf("%d bytes after the JSON object that are not padding", len(rest))
	}
	return nil
}

// parseSafetensorsInfo reads one tensor's entry and checks its fields'
// types and its size.
func parseSafetensorsInfo(raw json.RawMessage) (safetensorsEntry, error) {
	var info safetensorsInfo
	if err := json.Unmarshal(raw, &info); err != nil {
		return safetensorsEntry{}, fmt.Errorf("not an entry {dtype, shape, data_offsets}: %w", err)
	}
	if info.DType == nil || info.Shape == nil || info.DataOffsets == nil {
		return safetensorsEntry{}, errors.New("entry lacks dtype, shape or data_offsets")
	}
	e := safetensorsEntry{dtype: safetensorsDTypeIndex(*info.DType)}
	if e.dtype < 0 {
		return e, fmt.Errorf("unknown dtype %q", *info.DType)
	}
	if len(*info.DataOffsets) != 2 {
		return e, fmt.Errorf("data_offsets %v: want [begin, end]", *info.DataOffsets)
	}
	begin, end := (*info.DataOffsets)[0], (*info.DataOffsets)[1]
	if begin > end || end > math.MaxInt64 {
		return e, fmt.Errorf("data_offsets [%d, %d]: not a range of bytes", begin, end)
	}
	// The element count, and the bytes, without overflow: a shape whose
	// product does not fit cannot match any file.
	n, size := uint64(1), uint64(safetensorsDTypes[e.dtype].size)
	for _, d := range append(*info.Shape, size) {
		hi, lo := bits.Mul64(n, d)
		if hi != 0 {
			return e, fmt.Errorf("shape %v: too many elements", *info.Shape)
		}
		n = lo
	}
	if n != end-begin {
		return e, fmt.Errorf("shape %v of %s takes %d bytes, but data_offsets [%d, %d] hold %d",
			*info.Shape, *info.DType, n, begin, end, end-begin)
	}
	e.shape = make(tensor.Shape, len(*info.Shape))
	for i, d := range *info.Shape {
		if d > math.MaxInt32 {
			return e, fmt.Errorf("shape %v: dimension %d too large", *info.Shape, d)
		}
		e.shape[i] = int(d)
	}
	e.begin, e.end = int64(begin), int64(end)
	return e, nil
}

// checkOffsets checks that the tensors tile the data buffer of size
// bytes exactly, and orders f's keys by their data.
func (f *SafetensorsReader) checkOffsets(size int64) error {
	sort.SliceStable(f.keys, func(i, j int) bool {
		a, b := f.tensors[f.keys[i]], f.tensors[f.keys[j]]
		if a.begin != b.begin {
			return a.begin < b.begin
		}
		return a.end < b.end
	})
	at := int64(0)
	for _, k := range f.keys {
		e := f.tensors[k]
		if e.begin != at {
			if e.begin < at {
				return fmt.Errorf("tensor %q at bytes [%d, %d) overlaps the one before, which ends at %d", k, e.begin, e.end, at)
			}
			return fmt.Errorf("tensor %q starts at byte %d, leaving a hole after byte %d", k, e.begin, at)
		}
		at = e.end
	}
	if at != size {
		return fmt.Errorf("the tensors hold %d bytes of data, the file %d after its header", at, size)
	}
	return nil
}

// OpenSafetensorsFile opens the file at path; Close closes it.
func OpenSafetensorsFile(path string) (*SafetensorsReader, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read safetensors: %w", err)
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("read safetensors: %w", err)
	}
	f, err := OpenSafetensors(file, st.Size())
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.closer = file
	return f, nil
}

// Close closes the file OpenSafetensorsFile opened; for OpenSafetensors
// it does nothing.
func (f *SafetensorsReader) Close() error {
	if f.closer == nil {
		return nil
	}
	c := f.closer
	f.closer = nil
	return c.Close()
}

// Keys returns the tensors' names in the order of their data.
func (f *SafetensorsReader) Keys() []string { return append([]string(nil), f.keys...) }

// Metadata returns a copy of the header's "__metadata__"; nil when it
// has none.
func (f *SafetensorsReader) Metadata() map[string]string { return maps.Clone(f.metadata) }

// FieldConfig returns the config.json the file's metadata holds under
// FieldConfigKey (see WriteStateDict), or nil.
func (f *SafetensorsReader) FieldConfig() ([]byte, error) {
	c, ok := f.metadata[FieldConfigKey]
	if !ok {
		return nil, nil
	}
	return []byte(c), nil
}

// Info returns the shape and element type of the tensor name.
func (f *SafetensorsReader) Info(name string) (ArrayInfo, error) {
	e, ok := f.tensors[name]
	if !ok {
		return ArrayInfo{}, fmt.Errorf("read safetensors: no tensor named %q", name)
	}
	return ArrayInfo{Shape: e.shape.Clone(), DType: safetensorsDTypes[e.dtype].dtype}, nil
}

// Read returns the tensor name with its data.
func (f *SafetensorsReader) Read(name string) (*Array, error) {
	info, err := f.Info(name)
	if err != nil {
		return nil, err
	}
	e := f.tensors[name]
	a := &Array{ArrayInfo: info}
	n := info.Shape.Numel()
	d := safetensorsDTypes[e.dtype]
	var decode func(b []byte, i int)
	var rangeErr error
	switch d.dtype {
	case DTypeFloat32:
		a.Float32 = make([]float32, n)
		decode = func(b []byte, i int) { a.Float32[i] = math.Float32frombits(binary.LittleEndian.Uint32(b)) }
	case DTypeFloat64:
		a.Float32 = make([]float32, n)
		decode = func(b []byte, i int) {
			x := math.Float64frombits(binary.LittleEndian.Uint64(b))
			a.Float32[i] = float32(x)
			if math.IsInf(float64(a.Float32[i]), 0) && !math.IsInf(x, 0) && rangeErr == nil {
				// As NPZReader: a finite value beyond float32's
				// range is an error, not an infinity.
				rangeErr = fmt.Errorf("element %d, %g, is beyond float32's range", i, x)
			}
		}
	case DTypeFloat16:
		a.Float32 = make([]float32, n)
		decode = func(b []byte, i int) { a.Float32[i] = float16To32(binary.LittleEndian.Uint16(b)) }
	case DTypeBFloat16:
		a.Float32 = make([]float32, n)
		decode = func(b []byte, i int) {
			a.Float32[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16)
		}
	case DTypeInt64:
		a.Int64 = make([]int64, n)
		decode = func(b []byte, i int) { a.Int64[i] = int64(binary.LittleEndian.Uint64(b)) }
	default:
		return nil, fmt.Errorf("read safetensors: tensor %q: unsupported element type %s (want float32, float64, float16, bfloat16 or int64)", name, d.name)
	}
	// Through a buffer of whole elements, so that the bytes are never
	// held twice.
	buf := make([]byte, min(e.end-e.begin, 1<<20)/int64(d.size)*int64(d.size))
	i := 0
	for at := e.begin; at < e.end; {
		chunk := buf[:min(int64(len(buf)), e.end-at)]
		if _, err := f.r.ReadAt(chunk, f.dataStart+at); err != nil {
			return nil, fmt.Errorf("read safetensors: tensor %q: %w", name, noEOF(err))
		}
		for j := 0; j < len(chunk); j += d.size {
			decode(chunk[j:], i)
			i++
		}
		at += int64(len(chunk))
	}
	if rangeErr != nil {
		return nil, fmt.Errorf("read safetensors: tensor %q: %w", name, rangeErr)
	}
	return a, nil
}

// float16To32 returns the IEEE 754 half-precision value h as a float32,
// which holds every such value exactly.
func float16To32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
	case frac == 0: // zero
		return math.Float32frombits(sign)
	}
	// Subnormal: frac·2^−24, exact in float32.
	v := float32(frac) * (1.0 / (1 << 24))
	if sign != 0 {
		v = -v
	}
	return v
}
