package models

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pipecast/pipecast/tensor"
)

// SafetensorsWriter writes tensors into a .safetensors file. The header,
// which comes first, names every tensor's place in the data, so nothing
// is written before Close: the writer keeps the slices it is given, which
// must not change until then, and a file of every weight and gradient
// holds them in memory once more, as host copies, until it is written.
type SafetensorsWriter struct {
	out      *countingWriter
	tensors  []safetensorsPending
	names    map[string]bool
	metadata map[string]string
	closed   bool
	buf      []byte
}

// safetensorsPending is a tensor waiting for Close.
type safetensorsPending struct {
	name  string
	dtype int // index in safetensorsDTypes
	shape tensor.Shape
	f32   []float32
	i64   []int64
}

// NewSafetensorsWriter returns a writer of a .safetensors file to w.
func NewSafetensorsWriter(w io.Writer) *SafetensorsWriter {
	return &SafetensorsWriter{out: &countingWriter{w: w}, names: map[string]bool{}}
}

// Bytes returns the bytes written to the underlying writer so far: the
// file's size once Close has returned.
func (w *SafetensorsWriter) Bytes() int64 { return w.out.n }

// Float32 adds data as the F32 tensor name of the given shape (empty for
// a 0-d tensor). It panics unless data holds exactly the shape's number
// of elements.
func (w *SafetensorsWriter) Float32(name string, shape tensor.Shape, data []float32) error {
	return w.add(safetensorsPending{name: name, dtype: safetensorsDTypeIndex("F32"), shape: shape.Clone(), f32: data}, len(data))
}

// Int64 adds data as the I64 tensor name of the given shape. It panics
// unless data holds exactly the shape's number of elements.
func (w *SafetensorsWriter) Int64(name string, shape tensor.Shape, data []int64) error {
	return w.add(safetensorsPending{name: name, dtype: safetensorsDTypeIndex("I64"), shape: shape.Clone(), i64: data}, len(data))
}

// Metadata sets the header's "__metadata__" entry key to value.
func (w *SafetensorsWriter) Metadata(key, value string) error {
	if w.closed {
		return errors.New("write safetensors: metadata after Close")
	}
	if !utf8.ValidString(key) || !utf8.ValidString(value) {
		return fmt.Errorf("write safetensors: metadata %q is not UTF-8", key)
	}
	if w.metadata == nil {
		w.metadata = map[string]string{}
	}
	w.metadata[key] = value
	return nil
}

// FieldConfig stores config, a model's config.json, in the metadata
// under FieldConfigKey, with "format": "pt" beside it, as the
// transformers library's save_pretrained writes it: its from_pretrained
// refuses a file whose metadata lacks the format.
func (w *SafetensorsWriter) FieldConfig(config []byte) error {
	if err := w.Metadata(FieldConfigKey, string(config)); err != nil {
		return err
	}
	return w.Metadata("format", "pt")
}

func (w *SafetensorsWriter) add(t safetensorsPending, n int) error {
	for _, d := range t.shape {
		if d < 0 {
			panic(fmt.Sprintf("models: safetensors: tensor %q has negative dimension in shape %v", t.name, t.shape))
		}
	}
	if t.shape.Numel() != n {
		panic(fmt.Sprintf("models: safetensors: tensor %q of shape %v with %d elements", t.name, t.shape, n))
	}
	switch {
	case w.closed:
		return fmt.Errorf("write safetensors: tensor %q after Close", t.name)
	case t.name == "":
		return errors.New("write safetensors: empty tensor name")
	case t.name == safetensorsMetadataKey:
		return fmt.Errorf("write safetensors: a tensor may not be named %s", safetensorsMetadataKey)
	case !utf8.ValidString(t.name):
		return fmt.Errorf("write safetensors: tensor name %q is not UTF-8", t.name)
	case w.names[t.name]:
		return fmt.Errorf("write safetensors: two tensors named %q", t.name)
	}
	w.names[t.name] = true
	w.tensors = append(w.tensors, t)
	return nil
}

// Close writes the file: the header, then every tensor's data, in the
// reference's order (see safetensors.go). It does not close the
// underlying writer.
func (w *SafetensorsWriter) Close() error {
	if w.closed {
		return errors.New("write safetensors: closed twice")
	}
	w.closed = true
	slices.SortStableFunc(w.tensors, func(a, b safetensorsPending) int {
		if a.dtype != b.dtype {
			return b.dtype - a.dtype
		}
		return strings.Compare(a.name, b.name)
	})
	header := w.header()
	pre := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	if _, err := w.out.Write(append(pre, header...)); err != nil {
		return fmt.Errorf("write safetensors: %w", err)
	}
	w.buf = make([]byte, 256<<10)
	for _, t := range w.tensors {
		if err := w.writeData(t); err != nil {
			return fmt.Errorf("write safetensors: tensor %q: %w", t.name, err)
		}
	}
	w.tensors = nil
	return nil
}

// header returns the header's JSON as the reference writes it, compact,
// padded with spaces to a multiple of 8 bytes.
func (w *SafetensorsWriter) header() []byte {
	b := []byte{'{'}
	if len(w.metadata) > 0 {
		b = appendJSONString(b, safetensorsMetadataKey)
		b = append(b, ":{"...)
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range w.metadata {
				if !yield(k) {
					return
				}
			}
		})
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONString(b, w.metadata[k])
		}
		b = append(b, '}')
	}
	offset := uint64(0)
	for i, t := range w.tensors {
		if i > 0 || len(w.metadata) > 0 {
			b = append(b, ',')
		}
		d := safetensorsDTypes[t.dtype]
		size := uint64(t.shape.Numel()) * uint64(d.size)
		b = appendJSONString(b, t.name)
		b = append(b, `:{"dtype":"`...)
		b = append(b, d.name...)
		b = append(b, `","shape":[`...)
		for j, s := range t.shape {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(s), 10)
		}
		b = append(b, `],"data_offsets":[`...)
		b = strconv.AppendUint(b, offset, 10)
		b = append(b, ',')
		b = strconv.AppendUint(b, offset+size, 10)
		b = append(b, "]}"...)
		offset += size
	}
	b = append(b, '}')
	for len(b)%8 != 0 {
		b = append(b, ' ')
	}
	return b
}

// writeData writes t's elements, little-endian, through w's buffer.
func (w *SafetensorsWriter) writeData(t safetensorsPending) error {
	put := func(n, size int, encode func(b []byte, i int)) error {
		for at := 0; at < n; {
			k := min(n-at, len(w.buf)/size)
			for i := range k {
				encode(w.buf[i*size:], at+i)
			}
			if _, err := w.out.Write(w.buf[:k*size]); err != nil {
				return err
			}
			at += k
		}
		return nil
	}
	if safetensorsDTypes[t.dtype].dtype == DTypeInt64 {
		return put(len(t.i64), 8, func(b []byte, i int) { binary.LittleEndian.PutUint64(b, uint64(t.i64[i])) })
	}
	return put(len(t.f32), 4, func(b []byte, i int) { binary.LittleEndian.PutUint32(b, math.Float32bits(t.f32[i])) })
}

// appendJSONString appends s, valid UTF-8, as a JSON string escaped as
// serde_json, the reference's encoder, escapes it: the quote, the
// backslash and the control characters, the five with short forms as
// \b \f \n \r \t, the others as \u00xx; everything else as it is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\b':
			b = append(b, `\b`...)
		case c == '\f':
			b = append(b, `\f`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '\r':
			b = append(b, `\r`...)
		case c == '\t':
			b = append(b, `\t`...)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
