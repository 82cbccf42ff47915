package models

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// ownAndChildren is a composite with parameters and buffers of its own,
// which none of our containers has but torch modules may: its entries
// must come before its children's.
type ownAndChildren struct {
	Sequential
	w   *Param
	cnt *Buffer
}

func (l *ownAndChildren) Params() []*Param   { return []*Param{l.w} }
func (l *ownAndChildren) Buffers() []*Buffer { return []*Buffer{l.cnt} }

func TestStateDictOrder(t *testing.T) {
	dev := newDevice(t)
	rng := newRand(1)
	conv := NewConv2D(dev, Conv2DConfig{In: 3, Out: 4, KH: 3, KW: 3, StrideH: 1, StrideW: 1, Bias: true}, rng)
	bn := NewBatchNorm2D(dev, 4, tensor.DefaultBatchNorm())
	fc := NewLinear(dev, 4, 2, false, rng)
	composite := &ownAndChildren{
		Sequential: *NewSequential(Child{"inner", NewLinear(dev, 2, 2, true, rng)}),
		w:          &Param{Name: "scale", Value: dev.Alloc(tensor.Weights, 2)},
		cnt:        &Buffer{Name: "steps", Count: new(int64)},
	}
	net := NewSequential(
		Child{"features", NewSequential(Child{"0", conv}, Child{"1", bn}, Child{"2", NewReLU()})},
		// An empty name adds no component: torchvision's Inception
		// branches are siblings by name.
		Child{"", NewSequential(Child{"fc", fc})},
		Child{"head", composite},
	)
	defer ReleaseLayer(net)

	got := StateDict(net)
	want := []struct {
		name  string
		shape tensor.Shape
		kind  StateKind
	}{
		{"features.0.weight", tensor.Shape{4, 3, 3, 3}, Float32Tensor},
		{"features.0.bias", tensor.Shape{4}, Float32Tensor},
		{"features.1.weight", tensor.Shape{4}, Float32Tensor},
		{"features.1.bias", tensor.Shape{4}, Float32Tensor},
		{"features.1.running_mean", tensor.Shape{4}, Float32Tensor},
		{"features.1.running_var", tensor.Shape{4}, Float32Tensor},
		{"features.1.num_batches_tracked", tensor.Shape{}, Int64Scalar},
		{"fc.weight", tensor.Shape{2, 4}, Float32Tensor},
		{"head.scale", tensor.Shape{2}, Float32Tensor},
		{"head.steps", tensor.Shape{}, Int64Scalar},
		{"head.inner.weight", tensor.Shape{2, 2}, Float32Tensor},
		{"head.inner.bias", tensor.Shape{2}, Float32Tensor},
	}
	if len(got) != len(want) {
		var names []string
		for _, e := range got {
			names = append(names, e.Name)
		}
		t.Fatalf("got %d entries %v, want %d", len(got), names, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.name || !g.Shape.Equal(w.shape) || len(g.Shape) != len(w.shape) || g.Kind != w.kind {
			t.Errorf("entry %d: got %s %v %v, want %s %v %v", i, g.Name, g.Shape, g.Kind, w.name, w.shape, w.kind)
		}
		if (g.Param == nil) == (g.Buffer == nil) {
			t.Errorf("%s: got param %v and buffer %v, want exactly one", g.Name, g.Param, g.Buffer)
		}
	}
	// Entries point at the layers' own state.
	checks := []struct {
		name string
		ok   bool
	}{
		{"conv weight", got[0].Param == conv.Weight && got[0].Tensor() == conv.Weight.Value},
		{"running mean", got[4].Buffer == bn.RunningMean && got[4].Tensor() == bn.RunningMean.Value},
		{"counter", got[6].Buffer == bn.NumBatchesTracked && got[6].Tensor() == nil},
		{"fc weight", got[7].Param == fc.Weight},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: entry does not point at the layer's state", c.name)
		}
	}
	if s := Int64Scalar.String() + Float32Tensor.String(); s != "int64float32" {
		t.Errorf("kind names: got %q", s)
	}
}

func TestStateDictMatchesParamsAndBuffers(t *testing.T) {
	for _, name := range []string{"mlp", "vgg16bn", "resnet50", "inceptionv3"} {
		t.Run(name, func(t *testing.T) {
			if _, err := LookupArch(name); err != nil {
				t.Skipf("%s is not in the zoo: %v", name, err)
			}
			m, err := Describe(name, Config{Width: 0.25})
			if err != nil {
				t.Fatal(err)
			}
			entries := StateDict(m.Net)
			params, buffers := Params(m.Net), Buffers(m.Net)
			if len(entries) != len(params)+len(buffers) {
				t.Fatalf("got %d entries, want %d params + %d buffers", len(entries), len(params), len(buffers))
			}
			// Params and Buffers keep state_dict order within their
			// own kind.
			pi, bi := 0, 0
			for _, e := range entries {
				if e.Param != nil {
					if params[pi].Name != e.Name || params[pi].Param != e.Param {
						t.Fatalf("entry %s: params in another order (%s)", e.Name, params[pi].Name)
					}
					pi++
					continue
				}
				if buffers[bi].Name != e.Name || buffers[bi].Buffer != e.Buffer {
					t.Fatalf("entry %s: buffers in another order (%s)", e.Name, buffers[bi].Name)
				}
				bi++
			}
		})
	}
}

func TestStateDictDuplicateNamePanics(t *testing.T) {
	dev := newDevice(t)
	rng := newRand(2)
	// Two unnamed linear layers both claim "weight" and "bias".
	net := NewSequential(Child{"", NewLinear(dev, 2, 2, true, rng)}, Child{"", NewLinear(dev, 2, 2, true, rng)})
	defer ReleaseLayer(net)
	defer func() {
		p := recover()
		if p == nil || !strings.Contains(fmt.Sprint(p), `"weight"`) {
			t.Errorf("got panic %v, want one naming \"weight\"", p)
		}
	}()
	StateDict(net)
}
