package predictor

import (
	"encoding/json"
	"testing"

	"github.com/pipecast/pipecast/models"
)

// TestKeyJSON checks a key's flat JSON: the size's fields in its place, a
// language model's fields only where the size has them, as records omit
// them.
func TestKeyJSON(t *testing.T) {
	tests := []struct {
		name string
		key  Key
		want string
	}{
		{"cnn", Key{Model: "resnet50", Backend: "cpu", Threads: 2, SizeRecord: models.SizeRecord{Image: 32, Classes: 10, Width: 0.25}},
			`{"Model":"resnet50","Image":32,"Classes":10,"Width":0.25,"Backend":"cpu","Threads":2}`},
		{"language model", Key{Model: "gpt2", Backend: "cpu", Threads: 1, SizeRecord: models.SizeRecord{Classes: 256, Width: 1, Seq: 64, Vocab: 256, Layers: 2}},
			`{"Model":"gpt2","Image":0,"Classes":256,"Width":1,"Seq":64,"Vocab":256,"Layers":2,"Backend":"cpu","Threads":1}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.key)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("got %s, want %s", b, tc.want)
			}
		})
	}
}
