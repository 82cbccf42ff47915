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
	"strings"

	"codeberg.org/sbinet/npyio/npy"
	"codeberg.org/sbinet/npyio/npz"

	"github.com/pipecast/pipecast/tensor"
)

// NPZReader reads the arrays of a .npz archive, parsing the .npy files
// with codeberg.org/sbinet/npyio. It reads C-order little- or big-endian
// arrays of float32, float64 and int64; anything else (Fortran order,
// other element types, entries that are not .npy files) is an error,
// never a guess. Corrupt or truncated archives give errors, not panics.
// One entry beside the arrays is allowed: FieldConfigEntry, a model's
// config.json (FieldConfig), which numpy.load returns as bytes.
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
	config *zip.File // FieldConfigEntry, or nil
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
		if zf.Name == FieldConfigEntry && f.config == nil {
			f.config = zf
			continue
		}
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

// maxFieldConfig bounds the config.json a reader accepts; Hugging
// Face's take about a kilobyte.
const maxFieldConfig = 1 << 20

// FieldConfig returns the archive's config.json entry (see
// WriteStateDict), or nil when it has none.
func (f *NPZReader) FieldConfig() ([]byte, error) {
	zf := f.config
	if zf == nil {
		return nil, nil
	}
	if zf.UncompressedSize64 > maxFieldConfig {
		return nil, fmt.Errorf("read %s: %d bytes, over the %d a reader accepts", zf.Name, zf.UncompressedSize64, maxFieldConfig)
	}
	rc, err := zf.Open()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", zf.Name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxFieldConfig+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", zf.Name, err)
	}
	if len(b) > maxFieldConfig {
		return nil, fmt.Errorf("read %s: over the %d bytes a reader accepts", zf.Name, maxFieldConfig)
	}
	return b, nil
}

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
