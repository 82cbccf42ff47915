package models

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/pipecast/pipecast/tensor"
)

// fieldLayout maps a model's state_dict between pipecast's layers and the
// field's format (hf.go): the entries its family stores transposed, and
// the later names of a tied parameter, which files store once, under its
// first name (GPT-2's lm_head.weight, stored as transformer.wte.weight,
// as the transformers library's safetensors files store it).
type fieldLayout struct {
	format fieldFormat // nil: stored as pipecast holds it
	// aliases maps each later name of a tied parameter to its first.
	aliases map[string]string
	// state holds the names of the model's StateDict.
	state map[string]bool
}

// layoutOf returns m's layout in files.
func layoutOf(m *Model) fieldLayout {
	l := fieldLayout{format: m.Arch.field, aliases: map[string]string{}, state: map[string]bool{}}
	first := map[*Param]string{}
	Walk(m.Net, func(path string, layer Layer) {
		for _, p := range layer.Params() {
			name := joinName(path, p.Name)
			if n, ok := first[p]; ok {
				l.aliases[name] = n
			} else {
				first[p] = name
			}
		}
	})
	for _, e := range StateDict(m.Net) {
		l.state[e.Name] = true
	}
	return l
}

// transposed reports whether the entry name, or the gradient
// ExportGradPrefix+name, is stored transposed.
func (l fieldLayout) transposed(name string) bool {
	if l.format == nil {
		return false
	}
	return l.format.transposed(strings.TrimPrefix(name, ExportGradPrefix))
}

// identity reports whether files hold m's state_dict exactly as its
// layers do.
func (l fieldLayout) identity() bool { return l.format == nil && len(l.aliases) == 0 }

// ArrayWriter writes named arrays into a file of weights: *NPZWriter or
// *SafetensorsWriter.
type ArrayWriter interface {
	Float32(name string, shape tensor.Shape, data []float32) error
	Int64(name string, shape tensor.Shape, data []int64) error
	// FieldConfig stores a model's config.json beside the arrays.
	FieldConfig(config []byte) error
	Close() error
	// Bytes is the size written so far: the file's, after Close.
	Bytes() int64
}

// WriteStateDict writes m's state_dict to w in the field's format (see
// hf.go): its config.json where the family has one, then every entry in
// state_dict order, a tied parameter once under its first name, each
// stored transposed where the family's module is, a counter as an int64
// 0-d array. It does not close w.
func WriteStateDict(w ArrayWriter, m *Model) error {
	_, err := writeStateDict(w, m)
	return err
}

// writeStateDict is WriteStateDict, also returning the names written.
func writeStateDict(w ArrayWriter, m *Model) ([]string, error) {
	if c := FieldConfig(m); c != nil {
		if err := w.FieldConfig(c); err != nil {
			return nil, err
		}
	}
	l := layoutOf(m)
	var names []string
	for _, e := range StateDict(m.Net) {
		if _, tied := l.aliases[e.Name]; tied {
			continue
		}
		var err error
		if e.Kind == Int64Scalar {
			err = w.Int64(e.Name, e.Shape, []int64{*e.Buffer.Count})
		} else {
			shape, data := l.toField(e.Name, e.Shape, tensor.ToHost(e.Tensor()))
			err = w.Float32(e.Name, shape, data)
		}
		if err != nil {
			return nil, err
		}
		names = append(names, e.Name)
	}
	return names, nil
}

// toField returns the entry name of shape and data, pipecast's, in the
// field's layout.
func (l fieldLayout) toField(name string, shape tensor.Shape, data []float32) (tensor.Shape, []float32) {
	if !l.transposed(name) {
		return shape, data
	}
	return transpose2D(name, shape, data)
}

// transpose2D returns the transpose of the matrix data of shape [r, c].
func transpose2D(name string, shape tensor.Shape, data []float32) (tensor.Shape, []float32) {
	if len(shape) != 2 {
		panic(fmt.Sprintf("models: transposed entry %s of shape %v is not a matrix", name, shape))
	}
	r, c := shape[0], shape[1]
	out := make([]float32, len(data))
	for i := range r {
		for j := range c {
			out[j*r+i] = data[i*c+j]
		}
	}
	return tensor.Shape{c, r}, out
}

// fieldSource presents a file in the field's format as pipecast's layers
// hold the state_dict: transposed entries (and their gradients) turned
// back, a tied parameter's later names read from its first name (or the
// first from a later one, where a file holds only that).
type fieldSource struct {
	src    StateSource
	layout fieldLayout
	have   map[string]bool
	keys   []string
}

// source returns src as m's layers read it; src itself when the layout
// is the identity.
func (l fieldLayout) source(src StateSource) StateSource {
	if l.identity() {
		return src
	}
	f := &fieldSource{src: src, layout: l, have: map[string]bool{}}
	for _, k := range src.Keys() {
		f.have[k] = true
	}
	// The file's names, less the later names of tied parameters that the
	// state_dict does not list (checkTied compares them with the first),
	// and the names of the state_dict that the file holds under another
	// name of the same parameter.
	var extra []string
	for _, k := range src.Keys() {
		if _, ok := l.aliases[k]; !ok || l.state[k] {
			f.keys = append(f.keys, k)
		}
	}
	for alias, first := range l.aliases {
		pair := [2][2]string{{alias, first}, {first, alias}}
		for _, p := range pair {
			if name, stored := p[0], p[1]; l.state[name] && !f.have[name] && f.have[stored] {
				extra = append(extra, name)
			}
		}
	}
	sort.Strings(extra)
	f.keys = append(f.keys, extra...)
	return f
}

// Keys returns the file's names and the tied names it stands for.
func (f *fieldSource) Keys() []string { return append([]string(nil), f.keys...) }

// resolve returns the file's name of the entry name.
func (f *fieldSource) resolve(name string) string {
	if f.have[name] {
		return name
	}
	if first, ok := f.layout.aliases[name]; ok {
		return first
	}
	for alias, first := range f.layout.aliases {
		if first == name && f.have[alias] {
			return alias
		}
	}
	return name
}

// Info returns the entry's description in pipecast's layout.
func (f *fieldSource) Info(name string) (ArrayInfo, error) {
	info, err := f.src.Info(f.resolve(name))
	if err != nil {
		return info, err
	}
	if f.layout.transposed(name) && len(info.Shape) == 2 {
		info.Shape = tensor.Shape{info.Shape[1], info.Shape[0]}
	}
	return info, nil
}

// Read returns the entry in pipecast's layout.
func (f *fieldSource) Read(name string) (*Array, error) {
	a, err := f.src.Read(f.resolve(name))
	if err != nil || !f.layout.transposed(name) || len(a.Shape) != 2 || a.Float32 == nil {
		return a, err
	}
	t := *a
	t.Shape, t.Float32 = transpose2D(name, a.Shape, a.Float32)
	return &t, nil
}

// checkTied checks that every tied parameter whose file holds several
// names has the same values under each: the transformers library's
// state_dict lists lm_head.weight beside transformer.wte.weight, and a
// file written from it may hold both.
func (l fieldLayout) checkTied(src StateSource) error {
	have := map[string]bool{}
	for _, k := range src.Keys() {
		have[k] = true
	}
	for alias, first := range l.aliases {
		if !have[alias] || !have[first] {
			continue
		}
		a, err := src.Read(alias)
		if err != nil {
			return err
		}
		b, err := src.Read(first)
		if err != nil {
			return err
		}
		if !a.Shape.Equal(b.Shape) || len(a.Float32) != len(b.Float32) || a.Float32 == nil {
			return fmt.Errorf("%s %s %v differs from %s %s %v, which the model ties it to", alias, a.DType, []int(a.Shape), first, b.DType, []int(b.Shape))
		}
		for i := range a.Float32 {
			if math.Float32bits(a.Float32[i]) != math.Float32bits(b.Float32[i]) {
				return fmt.Errorf("%s differs from %s, which the model ties it to (element %d: %g, %g)", alias, first, i, a.Float32[i], b.Float32[i])
			}
		}
	}
	return nil
}

// fieldConfigSource is a file that may hold a model's config.json.
type fieldConfigSource interface {
	FieldConfig() ([]byte, error)
}

// checkFieldConfig compares the config.json src holds, if any, with m's:
// every key both have must have the same value, so that a file of
// another size or family (another ε, θ, layers) is refused even where
// the shapes would match. Keys only one side has are no difference: the
// transformers library's files hold many more, and older ones fewer.
func checkFieldConfig(m *Model, src StateSource) error {
	cs, ok := src.(fieldConfigSource)
	if !ok || m.Arch.field == nil {
		return nil
	}
	raw, err := cs.FieldConfig()
	if err != nil || raw == nil {
		return err
	}
	var file, want map[string]any
	if err := json.Unmarshal(raw, &file); err != nil {
		return fmt.Errorf("config.json: %w", err)
	}
	if err := json.Unmarshal(FieldConfig(m), &want); err != nil {
		return fmt.Errorf("config.json: %w", err)
	}
	var diffs []string
	for _, k := range sortedKeys(want) {
		f, ok := file[k]
		if !ok || f == nil || reflect.DeepEqual(f, want[k]) {
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s %v, model %v", k, f, want[k]))
	}
	if len(diffs) > 0 {
		return fmt.Errorf("the file's config.json describes another model: %s", strings.Join(diffs, "; "))
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
