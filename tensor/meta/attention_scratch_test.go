package meta

import (
	"fmt"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// fakeAttentionWorkspace is fakeWorkspace extended with the attention
// kernels' forecast, noting what it is asked.
type fakeAttentionWorkspace struct {
	fakeWorkspace
	elems int
	asked []string
}

func (f *fakeAttentionWorkspace) AttentionWorkspaceElems(p tensor.AttentionParams, batch, threads int) int {
	f.asked = append(f.asked, fmtAsk(p, batch, threads))
	return f.elems
}

func fmtAsk(p tensor.AttentionParams, batch, threads int) string {
	return fmt.Sprintf("batch %d of %+v on %d threads", batch, p, threads)
}

// TestAttentionScratchFollowsModel checks that the attention kernels
// account the scratch a model extended with AttentionWorkspaceElems
// forecasts, asking it with the call's sizes and the device's threads,
// and none under a model without the extension.
func TestAttentionScratchFollowsModel(t *testing.T) {
	p := tensor.AttentionParams{Seq: 5, Heads: 4, KVHeads: 2, HeadDim: 3}
	for _, tc := range []struct {
		name string
		ws   tensor.WorkspaceModel
		want int64
	}{
		{"extended model", &fakeAttentionWorkspace{elems: 9}, 36},
		{"model without attention", &fakeWorkspace{conv: 100, gemm: 7}, 0},
		{"no model", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDevice(0, 3)
			d.ws = tc.ws
			q, kv := d.Alloc(tensor.Activations, 2, 5, 4, 3), d.Alloc(tensor.Activations, 2, 5, 2, 3)
			probs := d.Alloc(tensor.Activations, 2, 4, 5, 5)
			d.ResetPeak()
			d.AttentionScoresBackward(q, kv, probs, probs, q, kv, p)
			if got := d.Memory().PeakBytes[tensor.Workspace]; got != tc.want {
				t.Errorf("workspace peak: got %d bytes, want %d", got, tc.want)
			}
			if f, ok := tc.ws.(*fakeAttentionWorkspace); ok {
				if want := fmtAsk(p, 2, 3); len(f.asked) != 1 || f.asked[0] != want {
					t.Errorf("model asked %v, want [%s]", f.asked, want)
				}
			}
		})
	}
}
