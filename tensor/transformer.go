package tensor

// The kernels of decoder transformers (GPT-2 and Llama-style models, as
// Hugging Face's GPT2LMHeadModel and LlamaForCausalLM compute them): an
// optional family, as capability.go describes. A device with fast kernels
// implements TransformerKernels (the CPU and CUDA backends; the meta
// backend, which counts attention's multiply-accumulates and holds
// nothing); the
// functions below run the device's kernel where it has one and otherwise
// the host fallback, which downloads the operands, runs the plain float32
// loops of package tensor/internal/transformerops and uploads the
// results — correct on any device that stores values, and a no-op on a
// symbolic one.
//
// Every tensor is float32 and contiguous (a Slice or Reshape view is
// contiguous). Token ids are whole numbers held as float32, exact below
// 2²⁴ (every vocabulary of the zoo). "Rows" are the tokens of a
// micro-batch: a tensor [B, S, D] is N = B·S rows of D values.
//
// Parameter gradients (dtable, dgamma, dbeta) accumulate (+=), as
// Kernels.LinearBackwardParams does, so that micro-batches sum into one
// gradient; every other output is overwritten. An input-gradient output
// given as nil is not computed.

// TransformerKernels is implemented by devices with kernels for decoder
// transformers' layers. Callers use the package-level functions of the
// same names, which fall back to the host loops.
type TransformerKernels interface {
	// EmbeddingForward sets y[i, :] = table[ids[i], :] for every i:
	// ids N values (any shape), table [V, D], y N·D values. An id outside
	// [0, V) panics.
	EmbeddingForward(ids, table, y *Tensor)
	// EmbeddingBackward accumulates dtable[ids[i], :] += dy[i, :]: the
	// gradient scattered by token, rows of a repeated token summed.
	EmbeddingBackward(ids, dy, dtable *Tensor)

	// LayerNormForward normalises each row of x (N rows of D = gamma's
	// length), as torch's nn.LayerNorm over the last dimension: mean and
	// biased variance per row, rstd = 1/√(var + eps), y = (x −
	// mean)·rstd·gamma + beta; it saves mean [N] and rstd [N] for the
	// backward.
	LayerNormForward(x, gamma, beta, y, mean, rstd *Tensor, eps float32)
	// LayerNormBackward sets dx (unless nil) and accumulates dgamma and
	// dbeta from dy and the statistics the forward saved.
	LayerNormBackward(x, dy, gamma, mean, rstd, dx, dgamma, dbeta *Tensor)

	// RMSNormForward normalises each row of x by its root mean square,
	// as LlamaRMSNorm: rstd = 1/√(mean(x²) + eps), y = x·rstd·gamma;
	// it saves rstd [N].
	RMSNormForward(x, gamma, y, rstd *Tensor, eps float32)
	// RMSNormBackward sets dx (unless nil) and accumulates dgamma.
	RMSNormBackward(x, dy, gamma, rstd, dx, dgamma *Tensor)

	// GELUTanhForward sets y = ½x(1 + tanh(√(2/π)(x + 0.044715x³))),
	// GPT-2's "gelu_new", elementwise.
	GELUTanhForward(x, y *Tensor)
	// GELUTanhBackward sets dx = dy·gelu′(x).
	GELUTanhBackward(x, dy, dx *Tensor)

	// SwiGLUForward sets y = silu(gate)·up elementwise, silu(g) =
	// g·σ(g): Llama's MLP between its gate/up and down projections.
	SwiGLUForward(gate, up, y *Tensor)
	// SwiGLUBackward sets dgate = dy·up·silu′(gate) and dup =
	// dy·silu(gate).
	SwiGLUBackward(gate, up, dy, dgate, dup *Tensor)

	// RoPE rotates x, laid out [B, S, H, hd] (p.Seq, p.Heads, p.HeadDim;
	// B from its length), into y (which may alias x) by the rotary
	// position embedding of Hugging Face's Llama in the rotate-half
	// form: for token position s (0 … S−1 within its sequence) and
	// i < hd/2, with angle a = s·θ^(−2i/hd),
	//   y[i]      = x[i]·cos a − x[i+hd/2]·sin a
	//   y[i+hd/2] = x[i+hd/2]·cos a + x[i]·sin a.
	// With p.Inverse it rotates by −a: the backward of the rotation.
	RoPE(x, y *Tensor, p RoPEParams)

	// AttentionScores sets probs [B, H, S, S] = softmax over the last
	// dimension of p.Scale·q·kᵀ per sequence and head, with the causal
	// mask when p.Causal (position t attends to positions ≤ t; masked
	// probabilities are exactly 0). q is [B, S, H, hd], k [B, S, Hkv,
	// hd]; query head h reads key head h/(H/Hkv) (grouped-query
	// attention; Hkv = H is multi-head attention).
	AttentionScores(q, k, probs *Tensor, p AttentionParams)
	// AttentionContext sets out [B, S, H, hd] = probs·v per sequence
	// and head, v [B, S, Hkv, hd] read as AttentionScores reads k.
	AttentionContext(probs, v, out *Tensor, p AttentionParams)
	// AttentionContextBackward sets dprobs [B, H, S, S] = dout·vᵀ and
	// dv (unless nil) = probsᵀ·dout, summed over the query heads that
	// share each key/value head.
	AttentionContextBackward(probs, v, dout, dprobs, dv *Tensor, p AttentionParams)
	// AttentionScoresBackward takes dprobs, the gradient of the probs
	// AttentionScores returned, through the softmax (dscores =
	// probs⊙(dprobs − Σ_row dprobs⊙probs)) and the product: dq =
	// p.Scale·dscores·k, dk = p.Scale·dscoresᵀ·q summed over the query
	// heads sharing each key head. dq or dk nil is not computed. dprobs
	// may be overwritten.
	AttentionScoresBackward(q, k, probs, dprobs, dq, dk *Tensor, p AttentionParams)
}

// RoPEParams are a rotary position embedding's sizes and base.
type RoPEParams struct {
	Seq, Heads, HeadDim int
	// Theta is the base, Hugging Face's rope_theta (10000 for Llama 2
	// and TinyLlama).
	Theta float64
	// Inverse rotates by the opposite angles.
	Inverse bool
}

// AttentionParams are the sizes of a scaled dot-product attention.
type AttentionParams struct {
	Seq int
	// Heads are the query heads, KVHeads the key/value heads (a divisor
	// of Heads), HeadDim each head's width.
	Heads, KVHeads, HeadDim int
	// Scale multiplies the scores before the softmax: 1/√HeadDim.
	Scale float32
	// Causal masks every position after the query's.
	Causal bool
}
