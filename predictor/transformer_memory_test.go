package predictor

import (
	"context"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// The closed forms of docs/transformer-memory.md, checked against the
// replay: pipecast's activation memory of a decoder layer is Korthikanti
// et al.'s formula in float32 with the adjustments that page derives
// term by term, and every device's activations, boundaries and transfer
// buffers in a whole-model plan are those layers times the micro-batches
// in flight plus the terms the formula leaves out. Every equality is
// exact, to the byte.

// decoderSizes are a decoder transformer's published sizes (its
// config.json, written here rather than read from the zoo), at the
// sequence length s the check runs it: hidden size h, heads a, key/value
// heads g, MLP width i, vocabulary v, decoder layers.
type decoderSizes struct {
	model                 string
	s, h, a, g, i, v      int64
	layers                int64
	gpt2                  bool // LayerNorm, GELU MLP and dropout; else RMSNorm, SwiGLU, no dropout
	headDim, normStatsRow int64
}

func gpt2Sizes(model string, s, layers, h, a int64) decoderSizes {
	return decoderSizes{model: model, s: s, h: h, a: a, g: a, i: 4 * h, v: 50257, layers: layers,
		gpt2: true, headDim: h / a, normStatsRow: 2}
}

func llamaSizes(model string, s, layers, h, a, g, i int64) decoderSizes {
	return decoderSizes{model: model, s: s, h: h, a: a, g: g, i: i, v: 32000, layers: layers,
		headDim: h / a, normStatsRow: 1}
}

var (
	closedFormGPT2      = gpt2Sizes("gpt2", 1024, 12, 768, 12)
	closedFormGPT2XL    = gpt2Sizes("gpt2-xl", 1024, 48, 1600, 25)
	closedFormTinyLlama = llamaSizes("tinyllama-1.1b", 2048, 22, 2048, 32, 4, 5632)
	closedFormLlama27B  = llamaSizes("llama2-7b", 4096, 32, 4096, 32, 32, 11008)
)

// f32 is the bytes of a float32 value, pipecast's every activation.
const f32 = tensor.BytesPerElement

// korthikanti returns the activation bytes of one transformer layer by
// Korthikanti et al., "Reducing Activation Recomputation in Large
// Transformer Models", 2022, §4.1 (no tensor parallelism, 16-bit
// activations), s·b·h·(34 + 5·a·s/h), split into its 2-byte values and
// its 1-byte dropout masks:
//
//	values: the inputs of LayerNorm 1 and 2 (2sbh each), of the QKV
//	        projection (2sbh), Q and K (4sbh), V (2sbh), the softmax's
//	        output (2as²b), the attention dropout's output (2as²b), the
//	        output projection's input (2sbh), the MLP's input (2sbh),
//	        GeLU's input and output (8sbh each)
//	masks:  attention dropout (as²b), the dropouts after the attention
//	        and after the MLP (sbh each)
func korthikanti(s, b, h, a int64) (values, masks int64) {
	sbh, as2b := s*b*h, a*s*s*b
	values = 2*sbh + 2*sbh + 2*sbh + 4*sbh + 2*sbh + 2*as2b + 2*as2b + 2*sbh + 2*sbh + 8*sbh + 8*sbh
	masks = as2b + sbh + sbh
	return values, masks
}

// korthikantiFloat32 is the formula in float32: every 2-byte value
// takes 4 bytes, a mask keeps its byte: s·b·h·(66 + 9·a·s/h).
func korthikantiFloat32(s, b, h, a int64) int64 {
	values, masks := korthikanti(s, b, h, a)
	return 2*values + masks
}

// layerBytes returns what pipecast keeps for one decoder layer's
// backward, its input included, for b sequences: the float32 formula
// with the page's adjustments.
//
//	both:   − the masks (pipecast regenerates a mask from its key; Llama
//	        has no dropout); + the norms' statistics, 2 norms × stats
//	        per token (LayerNorm's mean and rstd, RMSNorm's rstd) × 4 B
//	Llama:  − the attention dropout's output (no attention dropout);
//	        − K and V for the a − g heads grouped-query attention does
//	        not have (pipecast does not repeat them); − GeLU's input and
//	        output (4h wide) + SwiGLU's gate, up and product (i wide)
func (d decoderSizes) layerBytes(b int64) int64 {
	s, h, a := d.s, d.h, d.a
	sb, sbh, as2b := s*b, s*b*h, a*s*s*b
	_, masks := korthikanti(s, b, h, a)
	bytes := korthikantiFloat32(s, b, h, a) - masks + 2*d.normStatsRow*sb*f32
	if d.gpt2 {
		return bytes
	}
	noAttentionDropout := f32 * as2b
	kvNotRepeated := 2 * f32 * sb * (h - d.g*d.headDim)
	geluMLP, swiGLU := 2*f32*4*sbh, 3*f32*sb*d.i
	return bytes - noAttentionDropout - kvNotRepeated - geluMLP + swiGLU
}

// TestDecoderLayerClosedForm checks each decoder layer's saved bytes, as
// models.Describe measures them on the meta backend (a training forward
// at batch 2, per sample), against layerBytes, and the split of the
// 16-bit formula against its published total.
func TestDecoderLayerClosedForm(t *testing.T) {
	for _, d := range []decoderSizes{closedFormGPT2, closedFormGPT2XL, closedFormTinyLlama, closedFormLlama27B} {
		t.Run(d.model, func(t *testing.T) {
			values, masks := korthikanti(d.s, 1, d.h, d.a)
			if got, want := values+masks, d.s*d.h*34+5*d.a*d.s*d.s; got != want {
				t.Errorf("formula's terms sum to %d, want s·b·h·(34 + 5·a·s/h) = %d", got, want)
			}
			m, err := models.Describe(d.model, models.Config{Seq: int(d.s), Layers: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Release()
			layer := m.Blocks[1]
			if !strings.HasSuffix(layer.Name, ".0") {
				t.Fatalf("block 1 is %s, want decoder layer 0", layer.Name)
			}
			if got, want := layer.Cost.SavedBytes, d.layerBytes(1); got != want {
				t.Errorf("%s at seq %d: %d saved bytes per sample, want %d (formula in float32 %d)",
					layer.Name, d.s, got, want, korthikantiFloat32(d.s, 1, d.h, d.a))
			}
		})
	}
}

// deviceMemory is one device's peak activation, boundary and comm bytes.
type deviceMemory struct {
	activations, boundary, comm int64
}

// TestTransformerDeviceClosedForm checks every device's peak of a
// whole-model plan, as pipecast plan --by-device prints it, against the
// page's decomposition: per micro-batch of b sequences, n = s·b tokens,
// a layer's layerBytes(b); a stage input X = 4nh (the embedding's output
// on the first device, an activation; a received boundary elsewhere);
// logits and their gradient 4nV each; the head's norm 4·(2nh + stats·n).
func TestTransformerDeviceClosedForm(t *testing.T) {
	tests := []struct {
		name     string
		d        decoderSizes
		schedule string
		k, batch int
		want     func(d decoderSizes, dev int, layers int64) deviceMemory
	}{
		// One device, one micro-batch: the peak is the loss's, every
		// layer's saved bytes, the head's, the logits and their gradient.
		{"gpt2 single", closedFormGPT2, schedule.Single, 1, 1, func(d decoderSizes, _ int, layers int64) deviceMemory {
			n := d.s
			head := f32 * (2*n*d.h + d.normStatsRow*n)
			return deviceMemory{activations: layers*d.layerBytes(1) + head + 2*f32*n*d.v, boundary: f32 * n}
		}},
		// 1F1B at M = K = 8: device k holds K − k micro-batches in
		// flight; its peak is the first backward's attention scores
		// step of its last layer; the last device holds the logits'
		// gradient and the gradient of its last layer's output then.
		{"llama2-7b 1f1b", closedFormLlama27B, schedule.OneF1B, 8, 8, func(d decoderSizes, dev int, layers int64) deviceMemory {
			const k, batch = 8, 8
			n := d.s
			x := f32 * n * d.h
			inFlight := int64(k - dev)
			stage := layers * d.layerBytes(1)
			var m deviceMemory
			if dev == 0 {
				m.boundary = f32 * batch * d.s // the mini-batch's token ids
			} else {
				stage -= x // the stage's input is a boundary
				m.boundary = inFlight * x
			}
			// At the scores' backward: dprobs, dq, dk, dv and the
			// residual stream's gradient live; the MLP's three tensors,
			// the second norm's input, output and statistics, the
			// context and v freed.
			working := f32*(d.a*d.s*d.s+n*d.h+2*n*d.g*d.headDim+n*d.h) -
				f32*(3*n*d.i+2*n*d.h+d.normStatsRow*n+n*d.h+n*d.g*d.headDim)
			m.activations = inFlight*stage + working
			if dev == k-1 {
				m.activations += f32*n*d.v + x // dlogits, the last layer's dy
			} else {
				m.comm = x // the received output gradient
			}
			return m
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := config.Config{Model: tc.d.model, ModelConfig: models.Config{Seq: int(tc.d.s)}, Batch: tc.batch,
				Schedule: schedule.Options{Devices: tc.k}, Balance: config.BalanceMACs, Threads: 1}
			cfgs, _, err := PlanSpace{Base: base, Micro: []int{tc.batch}, Schedules: []string{tc.schedule}}.Configs()
			if err != nil {
				t.Fatal(err)
			}
			rows, failed, err := Plan(context.Background(), nil, cfgs, 1)
			if err != nil || len(failed) > 0 || len(rows) != 1 {
				t.Fatalf("plan: %d rows, %v, failed %v", len(rows), err, failed)
			}
			r := rows[0]
			for dev, mem := range r.Memory {
				h := r.Holdings[dev]
				var layers int64
				for _, b := range h.Blocks {
					if b >= 1 && int64(b) <= tc.d.layers {
						layers++
					}
				}
				want := tc.want(tc.d, dev, layers)
				got := deviceMemory{activations: mem.PeakBytes[tensor.Activations], boundary: mem.PeakBytes[tensor.Boundary],
					comm: mem.PeakBytes[tensor.Comm]}
				// The replay's order of two ops that start at the same
				// simulated moment is not fixed, so a device's peak may
				// hold one more micro-batch's stage output (a message
				// not yet handed on, 4·s·h bytes at micro-batch 1) than
				// the formula's moment: exact up to that one message.
				msg := 4 * tc.d.s * tc.d.h
				if one := (deviceMemory{activations: want.activations + msg, boundary: want.boundary, comm: want.comm}); got != want && got != one {
					t.Errorf("device %d (%d layers): got %+v, want %+v (or one message of %d bytes more activations)", dev, layers, got, want, msg)
				}
				state := mem.PeakBytes[tensor.Weights] + mem.PeakBytes[tensor.Gradients] + mem.PeakBytes[tensor.Optimizer]
				if state != 16*h.Params {
					t.Errorf("device %d: weights, gradients and AdamW's moments %d bytes, want 16 × %d", dev, state, h.Params)
				}
			}
		})
	}
}
