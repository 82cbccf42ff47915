package models

import (
	"fmt"
	"sort"
	"strings"

	"github.com/pipecast/pipecast/tensor"
)

// StateKind is the type of one state_dict entry.
type StateKind int

// The kinds of state_dict entries our layers hold.
const (
	// Float32Tensor is a parameter or a tensor buffer (running_mean,
	// running_var).
	Float32Tensor StateKind = iota
	// Int64Scalar is a counter buffer, num_batches_tracked: a 0-d int64
	// tensor in torch.
	Int64Scalar
)

// String names the kind as numpy names the dtype.
func (k StateKind) String() string {
	switch k {
	case Float32Tensor:
		return "float32"
	case Int64Scalar:
		return "int64"
	}
	return fmt.Sprintf("StateKind(%d)", int(k))
}

// StateEntry is one tensor of a layer's state_dict.
type StateEntry struct {
	// Name is the full dotted name, as torch's state_dict spells it.
	Name string
	// Shape is the tensor's shape; empty for a 0-d counter.
	Shape tensor.Shape
	Kind  StateKind
	// Param is set for a parameter, Buffer for a buffer; the other is
	// nil.
	Param  *Param
	Buffer *Buffer
}

// Tensor returns the entry's float32 tensor, or nil for a counter.
func (e StateEntry) Tensor() *tensor.Tensor {
	if e.Param != nil {
		return e.Param.Value
	}
	return e.Buffer.Value
}

// StateDict returns l's parameters and buffers in exactly the order of
// torch's Module.state_dict: for every module, depth first, its own
// parameters, then its own buffers, then its children's entries. Names
// are dotted paths; a child with an empty name adds no component. A
// parameter several layers share (a Tie) is one entry, under the name of
// its first use, as Params lists it and as Hugging Face's safetensors
// files keep a tied tensor (GPT-2's transformer.wte.weight, without
// lm_head.weight). It panics if two entries share a name, which only a
// wrongly assembled layer tree can cause.
func StateDict(l Layer) []StateEntry {
	var out []StateEntry
	seen := map[string]bool{}
	add := func(e StateEntry) {
		if seen[e.Name] {
			panic(fmt.Sprintf("models: state_dict: two entries named %q", e.Name))
		}
		seen[e.Name] = true
		out = append(out, e)
	}
	tied := map[*Param]bool{}
	Walk(l, func(path string, l Layer) {
		for _, p := range l.Params() {
			if tied[p] {
				continue
			}
			tied[p] = true
			add(StateEntry{Name: joinName(path, p.Name), Shape: p.Value.Shape().Clone(), Kind: Float32Tensor, Param: p})
		}
		for _, b := range l.Buffers() {
			e := StateEntry{Name: joinName(path, b.Name), Buffer: b}
			switch {
			case b.Count != nil:
				e.Kind, e.Shape = Int64Scalar, tensor.Shape{}
			case b.Value != nil:
				e.Kind, e.Shape = Float32Tensor, b.Value.Shape().Clone()
			default:
				panic(fmt.Sprintf("models: state_dict: buffer %q has neither a value nor a count", e.Name))
			}
			add(e)
		}
	})
	return out
}

// StateSource is what LoadStateDict reads: an open archive
// (*NPZReader), or arrays in memory (Arrays).
type StateSource interface {
	Keys() []string
	Info(name string) (ArrayInfo, error)
	Read(name string) (*Array, error)
}

// Arrays are arrays in memory by name; a StateSource.
type Arrays map[string]*Array

// Keys returns the names, sorted.
func (a Arrays) Keys() []string {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Info returns the array's description.
func (a Arrays) Info(name string) (ArrayInfo, error) {
	v, ok := a[name]
	if !ok {
		return ArrayInfo{}, fmt.Errorf("no array named %q", name)
	}
	return v.ArrayInfo, nil
}

// Read returns the array.
func (a Arrays) Read(name string) (*Array, error) {
	v, ok := a[name]
	if !ok {
		return nil, fmt.Errorf("no array named %q", name)
	}
	return v, nil
}

// StateDictError lists everything that keeps a state_dict from loading.
type StateDictError struct {
	Missing    []string // in the model, not in the source
	Unexpected []string // in the source, not in the model
	// Mismatched describes entries whose shape or element type differs:
	// "name: file float32 [3], model float32 [64]".
	Mismatched []string
}

// Error lists the problems, each kind sorted by name.
func (e *StateDictError) Error() string {
	var parts []string
	if len(e.Missing) > 0 {
		parts = append(parts, "missing: "+strings.Join(e.Missing, ", "))
	}
	if len(e.Unexpected) > 0 {
		parts = append(parts, "unexpected: "+strings.Join(e.Unexpected, ", "))
	}
	if len(e.Mismatched) > 0 {
		parts = append(parts, "mismatched: "+strings.Join(e.Mismatched, "; "))
	}
	return "state_dict does not match the model: " + strings.Join(parts, "; ")
}

// LoadStateDict copies the arrays of src into l's parameters and
// buffers, matching them by state_dict name. Every missing, unexpected
// and mismatched tensor is named in one *StateDictError, and nothing is
// loaded unless everything matches and reads: a failed load leaves l as
// it was. The arrays an export records beside its state_dict (see
// IsExportKey) are always skipped, so an export loads as it is; since
// they can never be state_dict names there is no option to refuse them.
// float64 arrays load rounded to float32; float16 and bfloat16 arrays (a
// .safetensors file's) exactly.
func LoadStateDict(l Layer, src StateSource) error {
	_, err := loadStateDict(l, src)
	return err
}

// loadStateDict is LoadStateDict, also returning the names of the
// float64 arrays it rounded to float32.
func loadStateDict(l Layer, src StateSource) (converted []string, err error) {
	entries := StateDict(l)
	inModel := map[string]bool{}
	serr := &StateDictError{}
	for _, e := range entries {
		inModel[e.Name] = true
	}
	inSource := map[string]bool{}
	for _, k := range src.Keys() {
		inSource[k] = true
		if !inModel[k] && !IsExportKey(k) {
			serr.Unexpected = append(serr.Unexpected, k)
		}
	}
	for _, e := range entries {
		if !inSource[e.Name] {
			serr.Missing = append(serr.Missing, e.Name)
			continue
		}
		info, err := src.Info(e.Name)
		if err != nil {
			return nil, err
		}
		wantType := DTypeFloat32
		typeOK := info.DType == DTypeFloat32 || info.DType == DTypeFloat64 ||
			info.DType == DTypeFloat16 || info.DType == DTypeBFloat16
		if e.Kind == Int64Scalar {
			wantType, typeOK = DTypeInt64, info.DType == DTypeInt64
		}
		if !typeOK || !info.Shape.Equal(e.Shape) {
			serr.Mismatched = append(serr.Mismatched, fmt.Sprintf("%s: file %s %v, model %s %v",
				e.Name, info.DType, []int(info.Shape), wantType, []int(e.Shape)))
		}
	}
	if len(serr.Missing)+len(serr.Unexpected)+len(serr.Mismatched) > 0 {
		sort.Strings(serr.Missing)
		sort.Strings(serr.Unexpected)
		sort.Strings(serr.Mismatched)
		return nil, serr
	}
	// Read everything before changing anything, so that a corrupt
	// array leaves the model as it was.
	arrays := make([]*Array, len(entries))
	for i, e := range entries {
		a, err := src.Read(e.Name)
		if err != nil {
			return nil, err
		}
		if !a.Shape.Equal(e.Shape) || len(a.Float32)+len(a.Int64) != e.Shape.Numel() {
			return nil, fmt.Errorf("%s: read %d values of shape %v, want %v", e.Name, len(a.Float32)+len(a.Int64), a.Shape, e.Shape)
		}
		arrays[i] = a
		if a.DType == DTypeFloat64 {
			converted = append(converted, e.Name)
		}
	}
	for i, e := range entries {
		if e.Kind == Int64Scalar {
			*e.Buffer.Count = arrays[i].Int64[0]
			continue
		}
		t := e.Tensor()
		t.Device().Upload(t, arrays[i].Float32)
	}
	return converted, nil
}
