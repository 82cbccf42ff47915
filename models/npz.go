package models

import (
	"archive/zip"
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"codeberg.org/sbinet/npyio/npy"
	"codeberg.org/sbinet/npyio/npz"

	"github.com/pipecast/pipecast/tensor"
)

// Weights travel in numpy's .npz format: a zip archive holding one .npy
// file per array, as numpy.savez writes it, so that numpy.load and torch
// users read our files and we read theirs.
//
// The .npy encoding follows numpy's lib/format.py, format version 1.0:
// the magic "\x93NUMPY", the version bytes 1 and 0, a little-endian
// uint16 header length, and the header, an ASCII Python dict literal
// "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" padded
// with spaces and ended by a newline so that the data starts at a
// multiple of 64 bytes; the data follow in C order, little-endian.
//
// Entries are stored, not deflated, by default, as numpy.savez does:
// weights are float32 values with nearly random mantissas, which deflate
// shrinks by 7 % while writing 8 times slower. For 100M weights drawn
// as an initialiser draws them (400 MB), storing wrote in 1.6 s and
// read back in 3.9 s; deflating wrote in 12.4 s and read back in 5.0 s
// (BenchmarkWriteNPZ* compares the two at 4M).

// npyMagic starts every .npy file.
const npyMagic = "\x93NUMPY"

// npyAlign is the alignment numpy gives the data of a .npy file.
const npyAlign = 64

// Element types of .npy arrays, as numpy names them and as Array.DType
// reports them.
const (
	DTypeFloat32 = "float32"
	DTypeFloat64 = "float64"
	DTypeInt64   = "int64"
)

// NPZWriter writes arrays into a .npz archive. Write every array, then
// Close; the archive is complete only after Close.
type NPZWriter struct {
	out    *countingWriter
	zw     *zip.Writer
	method uint16
	names  map[string]bool
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

// ArrayInfo describes an array of an archive without its data.
type ArrayInfo struct {
	// Shape is the array's shape; empty for a 0-d array.
	Shape tensor.Shape
	// DType is the element type stored in the file: DTypeFloat32,
	// DTypeFloat64 or DTypeInt64.
	DType string
}

// Array is an array read from an archive.
type Array struct {
	ArrayInfo
	// Float32 holds the elements of a float array in C order. A float64
	// array is rounded to float32 on reading, since every tensor of ours
	// is float32; DType still says float64, so that callers can report
	// the conversion.
	Float32 []float32
	// Int64 holds the elements of an int64 array in C order.
	Int64 []int64
}

// NPZReader reads the arrays of a .npz archive, parsing the .npy files
// with codeberg.org/sbinet/npyio. It reads C-order little- or big-endian
// arrays of float32, float64 and int64; anything else (Fortran order,
// other element types, entries that are not .npy files) is an error,
// never a guess. Corrupt or truncated archives give errors, not panics.
//
// Entries are opened with npyio's npz reader and parsed with its npy
// reader through a buffer, rather than with npz.Reader.Read: npyio
// reads element by element, a read call per element without the
// buffer; and the header's claims are checked against the entry's size
// first, so that a corrupt file cannot make it allocate more than the
// entry holds.
type NPZReader struct {
	zr     *npz.Reader
	size   int64
	files  map[string]*zip.File
	keys   []string
	closer io.Closer
}

// maxDeflateRatio bounds how much deflate can expand: a deflate stream
// of n bytes decodes to at most about 1032·n bytes. Sizes beyond it
// come from a corrupt directory, and are refused before allocating.
const maxDeflateRatio = 1032

// maxNPYHeader bounds the header length a reader accepts; numpy's
// headers take about a hundred bytes.
const maxNPYHeader = 1 << 20

// OpenNPZ opens the archive held by r, of size bytes.
func OpenNPZ(r io.ReaderAt, size int64) (*NPZReader, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("read npz: %w", err)
	}
	nr, err := npz.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("read npz: %w", err)
	}
	f := &NPZReader{zr: nr, size: size, files: map[string]*zip.File{}}
	for _, zf := range zr.File {
		name, ok := strings.CutSuffix(zf.Name, ".npy")
		if !ok || name == "" {
			return nil, fmt.Errorf("read npz: entry %q is not a .npy array", zf.Name)
		}
		if f.files[name] != nil {
			return nil, fmt.Errorf("read npz: two entries named %q", zf.Name)
		}
		f.files[name] = zf
		f.keys = append(f.keys, name)
	}
	return f, nil
}

// OpenNPZFile opens the archive at path; Close closes the file.
func OpenNPZFile(path string) (*NPZReader, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read npz: %w", err)
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("read npz: %w", err)
	}
	f, err := OpenNPZ(file, st.Size())
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.closer = file
	return f, nil
}

// Close closes the file OpenNPZFile opened; for OpenNPZ it does nothing.
func (f *NPZReader) Close() error {
	if f.closer == nil {
		return nil
	}
	c := f.closer
	f.closer = nil
	return c.Close()
}

// Keys returns the names of the archive's arrays, without ".npy", in the
// archive's order.
func (f *NPZReader) Keys() []string { return append([]string(nil), f.keys...) }

// Info returns the shape and element type of the array name.
func (f *NPZReader) Info(name string) (ArrayInfo, error) {
	e, err := f.open(name, 4096)
	if err != nil {
		return ArrayInfo{}, err
	}
	e.rc.Close()
	return e.info, nil
}

// Read returns the array name with its data.
func (f *NPZReader) Read(name string) (*Array, error) {
	e, err := f.open(name, 1<<20)
	if err != nil {
		return nil, err
	}
	defer e.rc.Close()
	a := &Array{ArrayInfo: e.info}
	n := e.info.Shape.Numel()
	switch e.info.DType {
	case DTypeFloat32:
		a.Float32 = make([]float32, n)
		err = readNPY(e.npy, &a.Float32)
	case DTypeFloat64:
		v := make([]float64, n)
		if err = readNPY(e.npy, &v); err == nil {
			a.Float32, err = narrow(v)
		}
	case DTypeInt64:
		a.Int64 = make([]int64, n)
		err = readNPY(e.npy, &a.Int64)
	}
	if err == nil {
		err = rest(e.buf)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s.npy: %w", name, err)
	}
	return a, nil
}

// npyEntry is an open entry of an archive, its header parsed.
type npyEntry struct {
	rc   io.ReadCloser // the entry's stream, to close
	buf  *bufio.Reader // rc through a buffer: npyio reads element by element
	npy  *npy.Reader   // positioned at the data
	info ArrayInfo
}

// open opens the entry name, reading it through a buffer of bufSize
// bytes, and parses its header.
func (f *NPZReader) open(name string, bufSize int) (*npyEntry, error) {
	zf := f.files[name]
	if zf == nil {
		return nil, fmt.Errorf("read npz: no array named %q", name)
	}
	fail := func(err error) (*npyEntry, error) {
		return nil, fmt.Errorf("read %s: %w", zf.Name, err)
	}
	limit := zf.CompressedSize64
	switch zf.Method {
	case zip.Store:
		if zf.UncompressedSize64 != zf.CompressedSize64 {
			return fail(errors.New("corrupt archive: stored entry with different sizes"))
		}
	case zip.Deflate:
		limit = maxDeflateRatio * limit
	default:
		return fail(fmt.Errorf("unsupported compression method %d", zf.Method))
	}
	if zf.CompressedSize64 > uint64(f.size) || zf.UncompressedSize64 > limit {
		return fail(errors.New("corrupt archive: entry larger than the archive allows"))
	}
	rc, err := f.zr.Open(zf.Name)
	if err != nil {
		return fail(err)
	}
	e := &npyEntry{rc: rc, buf: bufio.NewReaderSize(rc, bufSize)}
	e.info, e.npy, err = readNPYHeader(e.buf, zf.UncompressedSize64)
	if err != nil {
		rc.Close()
		return fail(err)
	}
	return e, nil
}

// readNPYHeader checks the fixed part of a .npy header before npyio
// parses it, so that a corrupt length cannot make it allocate gigabytes,
// then parses it with npyio and checks that the data fit the entry.
func readNPYHeader(br *bufio.Reader, size uint64) (info ArrayInfo, r *npy.Reader, err error) {
	pre, err := br.Peek(12)
	if err != nil {
		return info, nil, fmt.Errorf("not a .npy file: %w", noEOF(err))
	}
	if string(pre[:6]) != npyMagic {
		return info, nil, errors.New("not a .npy file: bad magic")
	}
	var hlen uint64
	switch pre[6] {
	case 1:
		hlen = uint64(binary.LittleEndian.Uint16(pre[8:]))
	case 2:
		hlen = uint64(binary.LittleEndian.Uint32(pre[8:]))
	default:
		return info, nil, fmt.Errorf("unsupported .npy format version %d.%d", pre[6], pre[7])
	}
	if hlen > maxNPYHeader || hlen > size {
		return info, nil, fmt.Errorf("corrupt .npy header length %d", hlen)
	}
	// npyio indexes the header without checking its layout; a malformed
	// one makes it panic, which here means a corrupt file.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("corrupt .npy header: %v", p)
		}
	}()
	r, err = npy.NewReader(br)
	if err != nil {
		return info, nil, fmt.Errorf("corrupt .npy header: %w", noEOF(err))
	}
	h := r.Header
	if h.Descr.Fortran {
		return info, nil, errors.New("Fortran-order arrays are not supported: save a C-contiguous array (numpy.ascontiguousarray)")
	}
	descr := strings.Trim(h.Descr.Type, `'"`)
	size1 := 0
	switch strings.TrimLeft(descr, "<>") {
	case "f4":
		info.DType, size1 = DTypeFloat32, 4
	case "f8":
		info.DType, size1 = DTypeFloat64, 8
	case "i8":
		info.DType, size1 = DTypeInt64, 8
	}
	if info.DType == "" || len(descr) != 3 {
		return info, nil, fmt.Errorf("unsupported element type %s (want float32, float64 or int64)", h.Descr.Type)
	}
	n := uint64(1)
	for _, d := range h.Descr.Shape {
		if d < 0 {
			return info, nil, fmt.Errorf("corrupt .npy header: shape %v", h.Descr.Shape)
		}
		if d > 0 && n > size/uint64(d) {
			return info, nil, fmt.Errorf("shape %v does not fit the entry's %d bytes", h.Descr.Shape, size)
		}
		n *= uint64(d)
	}
	if n*uint64(size1) > size {
		return info, nil, fmt.Errorf("shape %v does not fit the entry's %d bytes", h.Descr.Shape, size)
	}
	info.Shape = tensor.Shape(append([]int{}, h.Descr.Shape...))
	return info, r, nil
}

// readNPY reads the data into ptr, a pointer to a slice of the array's
// length, converting npyio's panics on corrupt input into errors.
func readNPY(r *npy.Reader, ptr any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("corrupt .npy data: %v", p)
		}
	}()
	if err := r.Read(ptr); err != nil {
		return fmt.Errorf("truncated or corrupt data: %w", noEOF(err))
	}
	return nil
}

// rest reads what follows the data up to the entry's end, where the zip
// reader verifies the checksum: bytes there mean a corrupt header.
func rest(r io.Reader) error {
	n, err := io.Copy(io.Discard, r)
	if err != nil {
		return fmt.Errorf("corrupt data: %w", err)
	}
	if n > 0 {
		return fmt.Errorf("corrupt data: %d bytes beyond the array", n)
	}
	return nil
}

// narrow rounds float64 values to the nearest float32, refusing finite
// values beyond float32's range rather than making them infinite.
func narrow(v []float64) ([]float32, error) {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
		if math.IsInf(float64(out[i]), 0) && !math.IsInf(x, 0) {
			return nil, fmt.Errorf("element %d, %g, is beyond float32's range", i, x)
		}
	}
	return out, nil
}

// noEOF turns an end of file inside a structure into
// io.ErrUnexpectedEOF, so that a truncation is reported as one.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
