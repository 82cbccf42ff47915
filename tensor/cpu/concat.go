package cpu

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// ConcatChannels copies srcs, each [N, Ci, H, W] (or [N, Ci]), into dst
// [N, ΣCi, H, W] in order.
func (d *Device) ConcatChannels(dst *tensor.Tensor, srcs []*tensor.Tensor) {
	parts := d.channelParts("concat channels", dst, srcs)
	d.moveChannels(dst, parts, true)
}

// SplitChannels copies consecutive channel ranges of src into dsts, the
// inverse of ConcatChannels.
func (d *Device) SplitChannels(src *tensor.Tensor, dsts []*tensor.Tensor) {
	parts := d.channelParts("split channels", src, dsts)
	d.moveChannels(src, parts, false)
}

// channelPart is one tensor of a concatenation: its elements and the
// channel range [lo, hi) it occupies in the whole.
type channelPart struct {
	data   []float32
	lo, hi int
}

// channelParts checks that parts, concatenated along dimension 1, make up
// whole, and returns where each one goes.
func (d *Device) channelParts(op string, whole *tensor.Tensor, parts []*tensor.Tensor) []channelPart {
	ws := whole.Shape()
	if len(ws) < 2 {
		panic(fmt.Sprintf("cpu: %s: shape %v has no channel dimension", op, ws))
	}
	if len(parts) == 0 {
		panic(fmt.Sprintf("cpu: %s: no tensors to join with %v", op, ws))
	}
	d.mustOwn(op, whole)
	out := make([]channelPart, len(parts))
	c := 0
	for i, t := range parts {
		s := t.Shape()
		if len(s) != len(ws) || s[0] != ws[0] || !s[2:].Equal(ws[2:]) {
			panic(fmt.Sprintf("cpu: %s: part %d of shape %v does not fit %v (N and the dimensions after the channels must agree)",
				op, i, s, ws))
		}
		out[i] = channelPart{data: d.data(op, t, t.Len()), lo: c, hi: c + s[1]}
		c += s[1]
	}
	if c != ws[1] {
		panic(fmt.Sprintf("cpu: %s: parts hold %d channels, %v has %d", op, c, ws, ws[1]))
	}
	return out
}

// moveChannels copies parts into whole (gather) or whole into parts. The
// work is the N·C channel planes of whole; each thread takes a range of
// them and copies it as runs that stay within one sample and one part,
// which are contiguous in both tensors. Splitting by plane rather than by
// sample keeps every thread busy even for a single sample.
func (d *Device) moveChannels(whole *tensor.Tensor, parts []channelPart, gather bool) {
	w := Data(whole)
	c := whole.Dim(1)
	plane := whole.Len() / (whole.Dim(0) * c)
	owner := make([]int32, c) // owner[ch] is the part that holds channel ch
	for i, p := range parts {
		for ch := p.lo; ch < p.hi; ch++ {
			owner[ch] = int32(i)
		}
	}
	d.pool.parallel(whole.Dim(0)*c, max(1, elementGrain/plane), func(lo, hi int) {
		for i := lo; i < hi; {
			n, ch := i/c, i%c
			p := parts[owner[ch]]
			end := min(p.hi, ch+hi-i) // the run's end channel
			pc := p.hi - p.lo
			wOff := (n*c + ch) * plane
			pOff := (n*pc + ch - p.lo) * plane
			k := (end - ch) * plane
			if gather {
				copy(w[wOff:wOff+k], p.data[pOff:pOff+k])
			} else {
				copy(p.data[pOff:pOff+k], w[wOff:wOff+k])
			}
			i += end - ch
		}
	})
}
