package models

import "github.com/pipecast/pipecast/tensor"

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
