package tensortest

import (
	"math"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// testFiniteScreen checks tensor.FirstNonFiniteOn along each route
// (capability.go): the device's screen where it is a FiniteScreener,
// and always the screen of host copies.
func testFiniteScreen(t *testing.T, dev tensor.Device) {
	// Sizes around the screen's chunk, so that a value lies in a later
	// chunk, in a tensor's short last chunk, and alone.
	chunk := tensor.FiniteChunk
	sizes := []int{1, 5, chunk + 3, 3 * chunk, 1001}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	type plant struct {
		tensor, index int
		v             float32
	}
	tests := []struct {
		name          string
		plants        []plant
		wantT, wantAt int
	}{
		{"all finite", nil, -1, -1},
		{"NaN in the first value", []plant{{0, 0, nan}}, 0, 0},
		{"+Inf in a later chunk", []plant{{2, chunk + 2, inf}}, 2, chunk + 2},
		{"−Inf in the last value", []plant{{4, 1000, -inf}}, 4, 1000},
		{"the earlier tensor's, not the earlier index", []plant{{3, 2 * chunk, nan}, {2, 1, nan}, {4, 0, inf}}, 2, 1},
		{"the earlier of one tensor's", []plant{{3, 2*chunk + 5, inf}, {3, chunk - 1, nan}}, 3, chunk - 1},
	}
	_, has := dev.(tensor.FiniteScreener)
	for _, r := range routes(dev, has) {
		for _, tc := range tests {
			t.Run(r.name+"/"+tc.name, func(t *testing.T) {
				rng := newRand(13)
				vals := make([][]float32, len(sizes))
				for k, n := range sizes {
					vals[k] = randSlice(rng, n)
				}
				for _, p := range tc.plants {
					vals[p.tensor][p.index] = p.v
				}
				ts := make([]*tensor.Tensor, len(sizes))
				for k, n := range sizes {
					ts[k] = upload(r.dev, tensor.Gradients, tensor.Shape{n}, vals[k])
					defer ts[k].Release()
				}
				gotT, gotAt := tensor.FirstNonFiniteOn(r.dev, ts)
				if gotT != tc.wantT || gotAt != tc.wantAt {
					t.Errorf("got %d, %d, want %d, %d", gotT, gotAt, tc.wantT, tc.wantAt)
				}
				if gotT, gotAt := tensor.FirstNonFiniteOn(r.dev, nil); gotT != -1 || gotAt != -1 {
					t.Errorf("no tensors: got %d, %d, want -1, -1", gotT, gotAt)
				}
			})
		}
	}
}
