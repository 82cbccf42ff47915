package models

// Weights also travel as .safetensors, Hugging Face's format (the
// huggingface/safetensors repository: its README and
// safetensors/src/tensor.rs, which both the Python and the Rust
// libraries run). A file is
//
//   - 8 bytes: N, the header's length, a little-endian uint64;
//   - N bytes: the header, a UTF-8 JSON object mapping each tensor's name
//     to {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}
//     and, optionally, "__metadata__" to an object of strings;
//   - the data: one byte buffer in which each tensor's elements lie,
//     little-endian and in C order, at [begin, end). The tensors cover
//     the buffer exactly, without holes or overlaps, and it ends the file.
//
// The reference writer sorts the tensors by element type, in its Dtype
// enumeration's order reversed (8-byte types first), then by name, so
// that every tensor is aligned to its element's size; writes the header
// as compact JSON with "__metadata__" first and the tensors in data
// order; and pads the header with spaces to a multiple of 8 bytes, so
// that the data start aligned. SafetensorsWriter does the same, with the
// metadata's keys sorted (the reference keeps them in a hash map, in no
// order): the same tensors always make the same bytes, and a file it
// wrote reads back and writes again byte for byte.
//
// SafetensorsReader checks what the reference reader checks (the header's
// length against the file and a bound, UTF-8, JSON, offsets that tile the
// buffer, each tensor's size against its shape and type) and, beyond it,
// that the header is one object with no name twice and that every dtype
// is one it knows, so that a malformed file is an error naming what is
// wrong, never a panic or a huge allocation.

// maxSafetensorsHeader is the longest header a reader accepts: the
// reference's MAX_HEADER_SIZE, 100 MB.
const maxSafetensorsHeader = 100_000_000

// safetensorsMetadataKey is the header's entry of free-form metadata.
const safetensorsMetadataKey = "__metadata__"

// More element types, as numpy names them and as Array.DType reports
// them: what a .safetensors file holds beside float32, float64 and int64.
// Every float16 and bfloat16 value is a float32 value, so such arrays
// load exactly.
const (
	DTypeFloat16  = "float16"
	DTypeBFloat16 = "bfloat16"
)

// safetensorsDType is one element type of the format.
type safetensorsDType struct {
	name  string // the format's: "F32"
	dtype string // numpy's, as ArrayInfo.DType reports it: "float32"
	size  int    // bytes per element
}

// safetensorsDTypes are the format's element types in the order of the
// reference's Dtype enumeration, which orders a written file (larger
// index first).
var safetensorsDTypes = []safetensorsDType{
	{"BOOL", "bool", 1},
	{"U8", "uint8", 1},
	{"I8", "int8", 1},
	{"F8_E5M2", "float8_e5m2", 1},
	{"F8_E4M3", "float8_e4m3fn", 1},
	{"I16", "int16", 2},
	{"U16", "uint16", 2},
	{"F16", DTypeFloat16, 2},
	{"BF16", DTypeBFloat16, 2},
	{"I32", "int32", 4},
	{"U32", "uint32", 4},
	{"F32", DTypeFloat32, 4},
	{"F64", DTypeFloat64, 8},
	{"I64", DTypeInt64, 8},
	{"U64", "uint64", 8},
}

// safetensorsDTypeIndex returns the index in safetensorsDTypes of the
// type the format names name, or -1.
func safetensorsDTypeIndex(name string) int {
	for i, d := range safetensorsDTypes {
		if d.name == name {
			return i
		}
	}
	return -1
}
