package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pipecast/pipecast/schedule"
)

// planDeviceRow is a row of plan --by-device --output json.
type planDeviceRow struct {
	Schedule      string `json:"schedule"`
	Options       string `json:"options"`
	Micro         int    `json:"microbatches"`
	Device        int    `json:"device"`
	Blocks        string `json:"blocks"`
	Params        int64  `json:"params"`
	ReplicaParams int64  `json:"replica_params"`
	Weights       int64  `json:"peak_weights_bytes"`
	Gradients     int64  `json:"peak_gradients_bytes"`
	Optimizer     int64  `json:"peak_optimizer_bytes"`
	Activations   int64  `json:"peak_activations_bytes"`
	Peak          int64  `json:"peak_bytes"`
}

// planDevices runs plan --by-device --output json with args and returns
// its rows.
func planDevices(t *testing.T, args ...string) []planDeviceRow {
	t.Helper()
	code, out, errOut := run(t, append(append([]string{"plan"}, args...), "--by-device", "--output", "json")...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rows []planDeviceRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	return rows
}

// TestPlanLanguageModelMemory checks what plan says of decoder
// transformers: planned by name, at full size, every device's weight,
// gradient and optimizer bytes are 4 bytes times its parameters times 1,
// 1 and the optimizer's slots (AdamW's two moments by default, SGD's
// momentum with --optimizer sgd); the first device holds the embedding,
// the last the LM head, GPT-2's tied to the embedding and so held twice.
// It times the command once and reports it; a limit far above
// the few seconds it takes only catches a replay that allocates.
func TestPlanLanguageModelMemory(t *testing.T) {
	args := []string{"plan", "--model", "llama2-7b", "--seq", "4096", "--batch", "8", "--devices", "8"}
	start := time.Now()
	code, out, errOut := run(t, args...)
	elapsed := time.Since(start)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	t.Logf("pipecast %s: %v", strings.Join(args, " "), elapsed.Round(time.Millisecond))
	if elapsed > time.Minute {
		t.Errorf("the plan took %v; a meta replay allocates nothing and takes seconds", elapsed)
	}
	for _, want := range []string{"pipecast plan: llama2-7b, batch 8", "Devices of gpipe (except-last) with M=8, the lightest",
		"model.embed_tokens … model.layers.3 (1–5)", "model.layers.28 … lm_head (30–34)", "optimizer", "activations"} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan lacks %q:\n%s", want, out)
		}
	}

	const llamaLayer, llamaEmbedding = 202383360, 32000 * 4096 // each of 32 decoder layers; [V, D]
	tests := []struct {
		name  string
		args  []string
		slots int64
		// embedding is the [V, D] matrix's parameters, which the
		// lightest configuration's first and last devices hold; first
		// and last, when not 0, are all of theirs.
		embedding, first, last int64
	}{
		{name: "llama2-7b K=8", args: args[1:], slots: 2, embedding: llamaEmbedding,
			first: llamaEmbedding + 4*llamaLayer, last: 4*llamaLayer + 4096 + llamaEmbedding},
		{name: "gpt2-xl K=4", args: []string{"--model", "gpt2-xl", "--batch", "4", "--devices", "4", "--microbatches", "4"},
			slots: 2, embedding: 50257 * 1600},
		{name: "gpt2 small sgd", args: []string{"--model", "gpt2", "--seq", "128", "--layers", "4", "--width", "0.25", "--devices", "2",
			"--optimizer", "sgd"}, slots: 1, embedding: 50257 * 192},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rows := planDevices(t, tc.args...)
			if len(rows) == 0 {
				t.Fatal("no rows")
			}
			for _, r := range rows {
				what := fmt.Sprintf("%s %s M=%d device %d (%s)", r.Schedule, r.Options, r.Micro, r.Device, r.Blocks)
				if r.Weights != 4*(r.Params+r.ReplicaParams) || r.Gradients != 4*r.Params || r.Optimizer != 4*tc.slots*r.Params {
					t.Errorf("%s: weights %d, gradients %d, optimizer %d bytes; want 4 × (1, 1, %d) × %d params (weights with %d in replicas)",
						what, r.Weights, r.Gradients, r.Optimizer, tc.slots, r.Params, r.ReplicaParams)
				}
				if r.Activations == 0 || r.Peak < r.Weights+r.Gradients {
					t.Errorf("%s: activations %d, peak %d bytes", what, r.Activations, r.Peak)
				}
			}
			best := rows[0].Schedule + rows[0].Options
			var devs []planDeviceRow
			for _, r := range rows {
				if r.Schedule+r.Options == best && r.Micro == rows[0].Micro {
					devs = append(devs, r)
				}
			}
			first, last := devs[0], devs[len(devs)-1]
			if tc.first != 0 && (first.Params != tc.first || last.Params != tc.last) {
				t.Errorf("%s M=%d: first device %d params (%s), last %d (%s); want %d and %d",
					best, rows[0].Micro, first.Params, first.Blocks, last.Params, last.Blocks, tc.first, tc.last)
			}
			// The embedding on the first device, the LM head (GPT-2's
			// the embedding's tied matrix) on the last; in a V both on
			// the first, which holds a matrix they tie once.
			headOn := last
			if schedule.VShaped(rows[0].Schedule) {
				headOn = first
			}
			if !strings.Contains(first.Blocks, "(1") || !strings.Contains(headOn.Blocks, "lm_head") ||
				first.Params < tc.embedding || headOn.Params < tc.embedding {
				t.Errorf("%s M=%d: first device %d params (%s), last %d (%s); want the embedding and the LM head, %d params each",
					best, rows[0].Micro, first.Params, first.Blocks, last.Params, last.Blocks, tc.embedding)
			}
		})
	}
}
