package tensortest

import (
	"fmt"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

func testConcat(t *testing.T, dev tensor.Device) {
	rng := newRand(4)
	tests := []struct {
		name     string
		n        int
		channels []int
		inner    []int // the dimensions after the channels
	}{
		{"one part", 3, []int{5}, []int{2, 3}},
		{"single channels", 1, []int{1, 1, 1}, []int{1, 1}},
		{"images", 3, []int{1, 2, 3}, []int{3, 5}},
		{"matrices", 5, []int{2, 11, 1}, nil},
		{"odd planes", 2, []int{3, 10}, []int{7, 1}},
		// Above three times the CPU backend's grain, so that the copy is
		// split across threads, mid-sample and mid-part.
		{"parallel", 2, []int{64, 32, 96}, []int{17, 17}},
		{"parallel single sample", 1, []int{50, 150, 7}, []int{16, 16}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inner := tensor.Shape(tc.inner).Numel()
			total := 0
			srcs := make([]*tensor.Tensor, len(tc.channels))
			data := make([][]float64, len(tc.channels))
			for k, c := range tc.channels {
				s := randSlice(rng, tc.n*c*inner)
				srcs[k] = upload(dev, tensor.Activations, concatShape(tc.n, c, tc.inner), s)
				data[k] = widen(s)
				total += c
			}
			whole := concatShape(tc.n, total, tc.inner)
			want := reference.ConcatChannels(data, tc.n, tc.channels, inner)
			g := newGuarded(dev, tensor.Activations, whole, nil)
			dev.ConcatChannels(g.T, srcs)
			got := g.check(t, "ConcatChannels")
			compare(t, "ConcatChannels", got, want, 0, 0)

			// Split a fresh tensor (not the concatenation, so that a
			// split that did nothing cannot pass).
			src := randSlice(rng, len(want))
			x := upload(dev, tensor.Gradients, whole, src)
			parts := reference.SplitChannels(widen(src), tc.n, tc.channels, inner)
			dsts := make([]*guarded, len(tc.channels))
			views := make([]*tensor.Tensor, len(tc.channels))
			for k, c := range tc.channels {
				dsts[k] = newGuarded(dev, tensor.Gradients, concatShape(tc.n, c, tc.inner), nil)
				views[k] = dsts[k].T
			}
			dev.SplitChannels(x, views)
			for k := range dsts {
				what := fmt.Sprintf("SplitChannels part %d", k)
				compare(t, what, dsts[k].check(t, what), parts[k], 0, 0)
				dsts[k].release()
			}
			x.Release()
			g.release()
			for _, s := range srcs {
				s.Release()
			}
		})
	}
	testConcatShapes(t, dev)
}

func concatShape(n, c int, inner []int) tensor.Shape {
	return append(tensor.Shape{n, c}, inner...)
}

// testConcatShapes checks that parts which do not make up the whole are
// refused, in both directions.
func testConcatShapes(t *testing.T, dev tensor.Device) {
	whole := dev.Alloc(tensor.Activations, 2, 5, 3, 3)
	defer whole.Release()
	tests := []struct {
		name  string
		parts []tensor.Shape
	}{
		{"too few channels", []tensor.Shape{{2, 2, 3, 3}, {2, 2, 3, 3}}},
		{"too many channels", []tensor.Shape{{2, 2, 3, 3}, {2, 4, 3, 3}}},
		{"batch differs", []tensor.Shape{{2, 2, 3, 3}, {1, 3, 3, 3}}},
		{"height differs", []tensor.Shape{{2, 2, 3, 3}, {2, 3, 2, 3}}},
		{"width differs", []tensor.Shape{{2, 2, 3, 3}, {2, 3, 3, 2}}},
		{"rank differs", []tensor.Shape{{2, 2, 9}, {2, 3, 3, 3}}},
		{"no parts", nil},
	}
	for _, tc := range tests {
		parts := make([]*tensor.Tensor, len(tc.parts))
		for i, s := range tc.parts {
			parts[i] = dev.Alloc(tensor.Activations, s...)
		}
		checkKernelPanics(t, "ConcatChannels "+tc.name, func() { dev.ConcatChannels(whole, parts) })
		checkKernelPanics(t, "SplitChannels "+tc.name, func() { dev.SplitChannels(whole, parts) })
		for _, p := range parts {
			p.Release()
		}
	}
}
