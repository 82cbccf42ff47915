package models

import (
	"archive/zip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/pipecast/pipecast/tensor"
)

// NPZWriter writes arrays into a .npz archive. Write every array, then
// Close; the archive is complete only after Close.
type NPZWriter struct {
	out    *countingWriter
	zw     *zip.Writer
	method uint16
	names  map[string]bool
	config bool // FieldConfig wrote its entry
	buf    []byte
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// NewNPZWriter returns a writer of a .npz archive to w. With deflate the
// entries are compressed, as numpy.savez_compressed writes them;
// otherwise they are stored.
func NewNPZWriter(w io.Writer, deflate bool) *NPZWriter {
	cw := &countingWriter{w: w}
	method := zip.Store
	if deflate {
		method = zip.Deflate
	}
	return &NPZWriter{out: cw, zw: zip.NewWriter(cw), method: method, names: map[string]bool{},
		buf: make([]byte, 256<<10)}
}

// Bytes returns the bytes written to the underlying writer so far: the
// archive's size once Close has returned.
func (w *NPZWriter) Bytes() int64 { return w.out.n }

// Float32 writes data as the float32 array name of the given shape (an
// empty shape for a 0-d array). It panics unless data holds exactly the
// shape's number of elements.
func (w *NPZWriter) Float32(name string, shape tensor.Shape, data []float32) error {
	f, err := w.create(name, "<f4", shape, len(data))
	if err != nil {
		return err
	}
	for len(data) > 0 {
		n := min(len(data), len(w.buf)/4)
		for i, v := range data[:n] {
			binary.LittleEndian.PutUint32(w.buf[4*i:], math.Float32bits(v))
		}
		if _, err := f.Write(w.buf[:4*n]); err != nil {
			return fmt.Errorf("write %s.npy: %w", name, err)
		}
		data = data[n:]
	}
	return nil
}

// Int64 writes data as the int64 array name of the given shape (an empty
// shape for a 0-d array). It panics unless data holds exactly the shape's
// number of elements.
func (w *NPZWriter) Int64(name string, shape tensor.Shape, data []int64) error {
	f, err := w.create(name, "<i8", shape, len(data))
	if err != nil {
		return err
	}
	for len(data) > 0 {
		n := min(len(data), len(w.buf)/8)
		for i, v := range data[:n] {
			binary.LittleEndian.PutUint64(w.buf[8*i:], uint64(v))
		}
		if _, err := f.Write(w.buf[:8*n]); err != nil {
			return fmt.Errorf("write %s.npy: %w", name, err)
		}
		data = data[n:]
	}
	return nil
}

// FieldConfig writes config, a model's config.json, as the archive's
// entry FieldConfigEntry, which numpy.load returns as bytes.
func (w *NPZWriter) FieldConfig(config []byte) error {
	if w.config {
		return fmt.Errorf("write npz: two %s entries", FieldConfigEntry)
	}
	w.config = true
	f, err := w.zw.CreateHeader(&zip.FileHeader{Name: FieldConfigEntry, Method: w.method})
	if err != nil {
		return fmt.Errorf("write npz: %s: %w", FieldConfigEntry, err)
	}
	if _, err := f.Write(config); err != nil {
		return fmt.Errorf("write npz: %s: %w", FieldConfigEntry, err)
	}
	return nil
}

// create starts the entry name.npy and writes its .npy header.
func (w *NPZWriter) create(name, descr string, shape tensor.Shape, n int) (io.Writer, error) {
	for _, d := range shape {
		if d < 0 {
			panic(fmt.Sprintf("models: npz: array %q has negative dimension in shape %v", name, shape))
		}
	}
	if shape.Numel() != n {
		panic(fmt.Sprintf("models: npz: array %q of shape %v with %d elements", name, shape, n))
	}
	if name == "" {
		return nil, errors.New("write npz: empty array name")
	}
	if w.names[name] {
		return nil, fmt.Errorf("write npz: two arrays named %q", name)
	}
	w.names[name] = true
	hdr, err := npyHeader(descr, shape)
	if err != nil {
		return nil, fmt.Errorf("write %s.npy: %w", name, err)
	}
	// The modification time stays zero, so that the same arrays always
	// make the same bytes.
	f, err := w.zw.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: w.method})
	if err != nil {
		return nil, fmt.Errorf("write %s.npy: %w", name, err)
	}
	if _, err := f.Write(hdr); err != nil {
		return nil, fmt.Errorf("write %s.npy: %w", name, err)
	}
	return f, nil
}

// Close finishes the archive; it does not close the underlying writer.
func (w *NPZWriter) Close() error {
	if err := w.zw.Close(); err != nil {
		return fmt.Errorf("write npz: %w", err)
	}
	return nil
}

// npyHeader returns the magic, version, header length and header of a
// version 1.0 .npy file holding a C-order array of the given numpy
// descr and shape.
func npyHeader(descr string, shape tensor.Shape) ([]byte, error) {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	// Python's repr of a tuple: "()", "(5,)", "(2, 3)".
	tuple := "(" + strings.Join(dims, ", ") + ")"
	if len(shape) == 1 {
		tuple = "(" + dims[0] + ",)"
	}
	dict := "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + tuple + ", }"
	const prefix = len(npyMagic) + 2 + 2 // magic, version, uint16 length
	pad := (npyAlign - (prefix+len(dict)+1)%npyAlign) % npyAlign
	hlen := len(dict) + pad + 1
	if hlen > math.MaxUint16 {
		return nil, fmt.Errorf("shape %v: header of %d bytes does not fit format 1.0", shape, hlen)
	}
	b := make([]byte, 0, prefix+hlen)
	b = append(b, npyMagic...)
	b = append(b, 1, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(hlen))
	b = append(b, dict...)
	b = append(b, strings.Repeat(" ", pad)...)
	return append(b, '\n'), nil
}
