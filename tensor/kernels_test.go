package tensor

import "testing"

func TestOutSize(t *testing.T) {
	tests := []struct {
		name           string
		h, w, kh, kw   int
		conv           Conv2DParams
		wantOH, wantOW int
	}{
		{"3x3 pad 1", 7, 9, 3, 3, Conv2DParams{1, 1, 1, 1}, 7, 9},
		{"3x3 stride 2 odd", 7, 9, 3, 3, Conv2DParams{2, 2, 0, 0}, 3, 4},
		{"1x7 pad (0,3)", 17, 17, 1, 7, Conv2DParams{1, 1, 0, 3}, 17, 17},
		{"7x7 stride 2 pad 3", 224, 224, 7, 7, Conv2DParams{2, 2, 3, 3}, 112, 112},
		// Integer division truncates towards zero: (2−3)/2 + 1 would be 1.
		{"kernel larger than input, stride 2", 2, 2, 3, 3, Conv2DParams{2, 2, 0, 0}, 0, 0},
		{"kernel fits only padded", 2, 5, 3, 3, Conv2DParams{2, 2, 1, 0}, 1, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oh, ow := tc.conv.OutSize(tc.h, tc.w, tc.kh, tc.kw)
			if oh != tc.wantOH || ow != tc.wantOW {
				t.Errorf("conv: got %dx%d, want %dx%d", oh, ow, tc.wantOH, tc.wantOW)
			}
			p := Pool2DParams{KH: tc.kh, KW: tc.kw, StrideH: tc.conv.StrideH, StrideW: tc.conv.StrideW, PadH: tc.conv.PadH, PadW: tc.conv.PadW}
			oh, ow = p.OutSize(tc.h, tc.w)
			if oh != tc.wantOH || ow != tc.wantOW {
				t.Errorf("pool: got %dx%d, want %dx%d", oh, ow, tc.wantOH, tc.wantOW)
			}
		})
	}
}
