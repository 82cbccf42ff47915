package meta

import "github.com/pipecast/pipecast/tensor"

// The attention kernels of tensor.TransformerKernels count the
// multiply-accumulates of their products as Gemm does, and account the
// scratch the imitated (CPU) backend's kernels hold. Their counts take
// the whole S×S matrix of every (sequence, head) pair, the causal mask's
// zeros included, as the field counts it (the model FLOPs utilisation
// of PaLM, Chowdhery et al. 2022; fvcore's and DeepSpeed's FLOP
// counters): the cost annotations then do not depend on the mask, though
// a kernel that skips the masked blocks, as the CPU backend's does, does
// little more than half that work.

// attentionWorkspace is implemented by workspace models that forecast
// the scratch of attention kernels (the CPU backend's): an extension of
// tensor.WorkspaceModel that a model without it lacks, its kernels then
// accounted as holding none.
type attentionWorkspace interface {
	// AttentionWorkspaceElems returns the float32 elements of scratch
	// each attention kernel holds for batch sequences of sizes p on a
	// device of threads threads.
	AttentionWorkspaceElems(p tensor.AttentionParams, batch, threads int) int
}

// AttentionScores counts B·H·S²·hd MACs: Q·Kᵀ per sequence and head.
func (d *Device) AttentionScores(q, k, probs *tensor.Tensor, p tensor.AttentionParams) {
	d.attention(p.Check("attention scores", q, k, nil, probs), p, 1)
}

// AttentionContext counts B·H·S²·hd MACs: probs·V per sequence and head.
func (d *Device) AttentionContext(probs, v, out *tensor.Tensor, p tensor.AttentionParams) {
	d.attention(p.Check("attention context", out, nil, v, probs), p, 1)
}

// AttentionContextBackward counts twice the forward's MACs, dout·Vᵀ and
// probsᵀ·dout, or once where dv is nil.
func (d *Device) AttentionContextBackward(probs, v, dout, dprobs, dv *tensor.Tensor, p tensor.AttentionParams) {
	b := p.Check("attention context backward", dout, nil, v, probs)
	p.Check("attention context backward", dout, nil, dv, dprobs)
	d.attention(b, p, 1+present(dv))
}

// AttentionScoresBackward counts the forward's MACs once for each of dq
// = dscores·K and dk = dscoresᵀ·Q that it computes: twice with both.
func (d *Device) AttentionScoresBackward(q, k, probs, dprobs, dq, dk *tensor.Tensor, p tensor.AttentionParams) {
	b := p.Check("attention scores backward", q, k, nil, probs)
	p.Check("attention scores backward", dq, dk, nil, dprobs)
	d.attention(b, p, present(dq)+present(dk))
}

// attention counts products products of B·H·S²·hd MACs each, over b
// sequences of sizes p, and accounts the imitated kernel's scratch if
// it runs any product.
func (d *Device) attention(b int, p tensor.AttentionParams, products int) {
	if products == 0 {
		return
	}
	d.macs.Add(int64(products) * int64(b) * int64(p.Heads) * int64(p.Seq) * int64(p.Seq) * int64(p.HeadDim))
	if m, ok := d.ws.(attentionWorkspace); ok {
		d.holdScratch(m.AttentionWorkspaceElems(p, b, d.threads))
	}
}

// present returns 1 for a tensor and 0 for nil.
func present(t *tensor.Tensor) int {
	if t == nil {
		return 0
	}
	return 1
}
