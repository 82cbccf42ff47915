package meta_test

import (
	"fmt"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
	"github.com/pipecast/pipecast/tensor/meta"
)

// attentionKernel is one attention kernel run on meta tensors, with the
// products of B·H·S²·hd MACs it counts.
type attentionKernel struct {
	name     string
	products int64
	run      func(d *meta.Device, t attentionTensors)
}

// attentionTensors are one attention's operands on a meta device.
type attentionTensors struct {
	q, k, v, probs *tensor.Tensor
	p              tensor.AttentionParams
}

var attentionKernels = []attentionKernel{
	{"scores", 1, func(d *meta.Device, a attentionTensors) { d.AttentionScores(a.q, a.k, a.probs, a.p) }},
	{"context", 1, func(d *meta.Device, a attentionTensors) { d.AttentionContext(a.probs, a.v, a.q, a.p) }},
	{"context backward", 2, func(d *meta.Device, a attentionTensors) {
		d.AttentionContextBackward(a.probs, a.v, a.q, a.probs, a.v, a.p)
	}},
	{"context backward without dv", 1, func(d *meta.Device, a attentionTensors) {
		d.AttentionContextBackward(a.probs, a.v, a.q, a.probs, nil, a.p)
	}},
	{"scores backward", 2, func(d *meta.Device, a attentionTensors) {
		d.AttentionScoresBackward(a.q, a.k, a.probs, a.probs, a.q, a.k, a.p)
	}},
	{"scores backward without dk", 1, func(d *meta.Device, a attentionTensors) {
		d.AttentionScoresBackward(a.q, a.k, a.probs, a.probs, a.q, nil, a.p)
	}},
	{"scores backward without dq", 1, func(d *meta.Device, a attentionTensors) {
		d.AttentionScoresBackward(a.q, a.k, a.probs, a.probs, nil, a.k, a.p)
	}},
	{"scores backward without either", 0, func(d *meta.Device, a attentionTensors) {
		d.AttentionScoresBackward(a.q, a.k, a.probs, a.probs, nil, nil, a.p)
	}},
}

// TestAttention checks each attention kernel's MAC count, the full S²
// whatever the mask, and that with the CPU backend linked it accounts
// the scratch the CPU backend's written-out policy gives (and frees it).
func TestAttention(t *testing.T) {
	sizes := []struct {
		b int
		p tensor.AttentionParams
	}{
		{1, tensor.AttentionParams{Seq: 1, Heads: 1, KVHeads: 1, HeadDim: 1}},
		{3, tensor.AttentionParams{Seq: 7, Heads: 4, KVHeads: 2, HeadDim: 5, Causal: true}},
		{2, tensor.AttentionParams{Seq: 200, Heads: 6, KVHeads: 1, HeadDim: 64}},
		{1, tensor.AttentionParams{Seq: 1500, Heads: 2, KVHeads: 2, HeadDim: 33, Causal: true}},
	}
	for _, threads := range []int{1, 3} {
		dev, err := tensor.Open(meta.BackendName, tensor.Options{Threads: threads})
		if err != nil {
			t.Fatal(err)
		}
		d := dev.(*meta.Device)
		for _, sz := range sizes {
			p, b := sz.p, sz.b
			a := attentionTensors{
				q:     d.Alloc(tensor.Activations, b, p.Seq, p.Heads, p.HeadDim),
				k:     d.Alloc(tensor.Activations, b, p.Seq, p.KVHeads, p.HeadDim),
				v:     d.Alloc(tensor.Activations, b, p.Seq, p.KVHeads, p.HeadDim),
				probs: d.Alloc(tensor.Activations, b, p.Heads, p.Seq, p.Seq),
				p:     p,
			}
			for _, k := range attentionKernels {
				t.Run(fmt.Sprintf("%s/B=%d/%+v/threads=%d", k.name, b, p, threads), func(t *testing.T) {
					before := d.MACs()
					d.ResetPeak()
					k.run(d, a)
					if got, want := d.MACs()-before, k.products*int64(b*p.Heads*p.Seq*p.Seq*p.HeadDim); got != want {
						t.Errorf("MACs: got %d, want %d", got, want)
					}
					want := int64(cpu.AttentionWorkspaceElems(p, b, threads)) * tensor.BytesPerElement
					if k.products == 0 {
						want = 0
					}
					if got := d.Memory().PeakBytes[tensor.Workspace]; got != want {
						t.Errorf("workspace peak: got %d bytes, want %d", got, want)
					}
					if live := d.Memory().LiveBytes[tensor.Workspace]; live != 0 {
						t.Errorf("workspace live after the kernel: %d bytes", live)
					}
				})
			}
			for _, x := range []*tensor.Tensor{a.q, a.k, a.v, a.probs} {
				x.Release()
			}
		}
		d.Close()
	}
}

// TestAttentionPanics checks that the meta kernels check sizes as the
// others do.
func TestAttentionPanics(t *testing.T) {
	d := meta.New()
	p := tensor.AttentionParams{Seq: 3, Heads: 4, KVHeads: 2, HeadDim: 2}
	q, k := d.Alloc(tensor.Activations, 2, 3, 4, 2), d.Alloc(tensor.Activations, 2, 3, 2, 2)
	probs := d.Alloc(tensor.Activations, 1, 4, 3, 3)
	defer func() {
		if recover() == nil {
			t.Error("scores with probs of 1 sequence for 2: no panic")
		}
	}()
	d.AttentionScores(q, k, probs, p)
}
