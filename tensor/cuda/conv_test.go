package cuda

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

func TestDepthSplit(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		tiles, depth, sms    int
		wantParts, wantChunk int
	}{
		// resnet50's 1×1 64→64 conv on 56×56 maps at batch 64: one tile,
		// 64·3136 deep; the parts cap holds it to 64 blocks.
		{"resnet50 1x1 64->64 batch 64", 1, 64 * 56 * 56, 132, 64, 3136},
		{"an A100's 108 multiprocessors, capped alike", 1, 64 * 56 * 56, 108, 64, 3136},
		// Ten tiles need 27 parts for 270 ≥ 264 blocks; 100000/27 rounds
		// up to 3712, a slab multiple, and 27 parts still cover it.
		{"ten tiles", 10, 100000, 132, 27, 3712},
		{"no count from the driver: an H200's", 10, 100000, 0, 27, 3712},
		{"enough tiles for two waves", 264, 1 << 20, 132, 1, 1 << 20},
		{"just short of two waves", 263, 1 << 20, 132, 2, 1 << 19},
		{"too shallow to split", 1, 511, 132, 1, 511},
		{"shallow: parts of 256 at least", 2, 1024, 132, 4, 256},
		{"the last part shorter", 2, 1058, 132, 4, 272},
		{"a small GPU", 2, 1024, 1, 1, 1024},
		{"nothing", 0, 0, 132, 1, 0},
	} {
		parts, chunk := depthSplit(tc.tiles, tc.depth, tc.sms)
		if parts != tc.wantParts || chunk != tc.wantChunk {
			t.Errorf("%s: depthSplit(%d, %d, %d) = %d parts of %d, want %d of %d",
				tc.name, tc.tiles, tc.depth, tc.sms, parts, chunk, tc.wantParts, tc.wantChunk)
		}
	}
}

// TestDepthSplitInvariants checks what the kernels rely on for a spread
// of shapes: no empty part, slab-multiple chunks, the caps, and a grid of
// splitWaves blocks per multiprocessor unless the caps stopped it.
func TestDepthSplitInvariants(t *testing.T) {
	for _, sms := range []int{1, 108, 132} {
		for _, tiles := range []int{1, 2, 3, 7, 63, 131, 263, 264, 1000} {
			for _, depth := range []int{1, 255, 256, 511, 512, 1000, 1058, 4096, 99991, 200704, 1 << 26} {
				parts, chunk := depthSplit(tiles, depth, sms)
				if parts == 1 {
					if chunk != depth {
						t.Errorf("(%d, %d, %d): one part of %d", tiles, depth, sms, chunk)
					}
					if tiles < splitWaves*sms && depth >= 2*minSplitDepth && (splitWaves*sms+tiles-1)/tiles > 1 {
						t.Errorf("(%d, %d, %d): not split", tiles, depth, sms)
					}
					continue
				}
				if chunk%gemmSlab != 0 || chunk < minSplitDepth || parts > maxSplitParts {
					t.Errorf("(%d, %d, %d): %d parts of %d", tiles, depth, sms, parts, chunk)
				}
				if (parts-1)*chunk >= depth || parts*chunk < depth {
					t.Errorf("(%d, %d, %d): %d parts of %d do not cover %d exactly", tiles, depth, sms, parts, chunk, depth)
				}
				// Short of the target only where the chunk is as small as
				// the caps allow, rounded up to a slab.
				most := min(maxSplitParts, depth/minSplitDepth)
				least := (depth + most - 1) / most
				if tiles*parts < splitWaves*sms && chunk-gemmSlab >= least {
					t.Errorf("(%d, %d, %d): %d parts of %d, %d blocks", tiles, depth, sms, parts, chunk, tiles*parts)
				}
			}
		}
	}
}

func TestGridPhases(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want [3]uint32
	}{
		{"stride 1: the whole product", gridPhases(3, 2, 8, 8, 1, 1), [3]uint32{2, 1, 1}},
		{"stride 2: four phases of 4×4", gridPhases(3, 2, 8, 8, 2, 2), [3]uint32{1, 1, 4}},
		{"odd sizes: the largest phase", gridPhases(70, 4, 7, 9, 2, 1), [3]uint32{3, 2, 2}}, // 4·4·9 = 144 columns
		{"empty", gridPhases(0, 2, 8, 8, 2, 2), [3]uint32{0, 0, 4}},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// smDriver is a fake driver that says how many multiprocessors it has.
type smDriver struct {
	*fakeDriver
	sms int
}

func (d smDriver) Multiprocessors() int { return d.sms }

func TestConvBackwardFilterSplits(t *testing.T) {
	// N=4, C=8, 16×16, O=16, 3×3, padding 1: dw is 16×72, two tiles, 1024
	// deep; 132 multiprocessors want 132 parts, minSplitDepth allows 4.
	p := tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}
	for _, tc := range []struct {
		name string
		sms  int
		want []launchWant
	}{
		{"split", 0, []launchWant{
			{KernelConvBwdFilterPart, [3]uint32{2, 1, 4}, map[string]any{"o": int32(16), "c": int32(8), "kchunk": int32(256)}},
			{KernelSumPartsAcc, [3]uint32{5, 1, 1}, map[string]any{"len": int64(16 * 72), "parts": int32(4)}},
		}},
		{"one multiprocessor: whole", 1, []launchWant{{KernelConvBwdFilterAcc, [3]uint32{2, 1, 1}, nil}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeDriver()
			var drv Driver = f
			if tc.sms > 0 {
				drv = smDriver{f, tc.sms}
			}
			d := New(drv, "cudafake", "cudafake:0")
			defer d.Close()
			x, w, y := d.Alloc(tensor.Activations, 4, 8, 16, 16), d.Alloc(tensor.Gradients, 16, 8, 3, 3), d.Alloc(tensor.Activations, 4, 16, 16, 16)
			for _, tt := range []*tensor.Tensor{x, w, y} {
				defer tt.Release()
			}
			var held []int64
			f.onLaunch = func(*fakeDriver, launchRec) { held = append(held, d.Memory().LiveBytes[tensor.Workspace]) }
			d.Conv2DBackwardFilter(x, y, w, nil, p)
			checkLaunches(t, "backward filter", f, tc.want)
			if m := d.Memory(); m.LiveBytes[tensor.Workspace] != 0 {
				t.Errorf("%d workspace bytes live after the kernels", m.LiveBytes[tensor.Workspace])
			}
			if len(f.launches) != 2 {
				return
			}
			if want := int64(4 * 16 * 72 * 4); held[0] != want || held[1] != want {
				t.Errorf("workspace live during the launches: %v, want %d bytes (4 parts)", held, want)
			}
			part, sum := f.launches[0].args, f.launches[1].args
			if part["part"] != sum["part"] || sum["dw"] != PtrOf(w) {
				t.Errorf("parts written to %v, summed from %v onto %v; dw is %v", part["part"], sum["part"], sum["dw"], PtrOf(w))
			}
		})
	}
}

func TestConvBackwardDataPhases(t *testing.T) {
	d, f := newFake(t)
	// N=4, C=70, 8×8 → 4×4 by a 3×3 of stride 2: four phases of 4·4·4
	// inputs, two row tiles.
	p := tensor.Conv2DParams{StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}
	dx, w, dy := d.Alloc(tensor.Activations, 4, 70, 8, 8), d.Alloc(tensor.Weights, 5, 70, 3, 3), d.Alloc(tensor.Activations, 4, 5, 4, 4)
	for _, tt := range []*tensor.Tensor{dx, w, dy} {
		defer tt.Release()
	}
	d.Conv2DBackwardData(dy, w, dx, p)
	checkLaunches(t, "backward data", f, []launchWant{
		{KernelConvBwdData, [3]uint32{1, 2, 4}, map[string]any{"sh": int32(2), "sw": int32(2), "oh": int32(4)}},
	})
}
