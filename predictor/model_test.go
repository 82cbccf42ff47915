package predictor

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
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
		{"adamw", Key{Model: "gpt2", Backend: "cpu", Threads: 1, SizeRecord: models.SizeRecord{Classes: 256, Width: 1, Seq: 64, Vocab: 256, Layers: 2}, Optimizer: "adamw"},
			`{"Model":"gpt2","Image":0,"Classes":256,"Width":1,"Seq":64,"Vocab":256,"Layers":2,"Backend":"cpu","Threads":1,"Optimizer":"adamw"}`},
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

// TestFitKeysByOptimizer checks that records of one workload trained by
// SGD and by AdamW fit apart, each update line its own, and that a
// record naming no optimizer (as every record from before optimizers had
// names) is SGD's: its key is the one an SGD configuration forecasts
// with.
func TestFitKeysByOptimizer(t *testing.T) {
	sgd := synthRecords(testCosts, 1, false, false)
	slow := testCosts
	slow.update = synthLine{3000, 1.5}
	adamw := synthRecords(slow, 1, false, false)
	for i := range adamw {
		adamw[i].Config.OptimizerRecord = config.DefaultHyper().Record("adamw")
	}
	fits, err := Fit(append(sgd, adamw...))
	if err != nil {
		t.Fatal(err)
	}
	if len(fits) != 2 {
		t.Fatalf("%d cost models, want one for each optimizer", len(fits))
	}
	for _, tc := range []struct {
		optimizer string
		recs      []profiler.Record
		update    synthLine
	}{{"sgd", sgd, testCosts.update}, {"adamw", adamw, slow.update}} {
		k := KeyOf(&tc.recs[0])
		if k.OptimizerName() != tc.optimizer || k.Optimizer != KeyOptimizer(tc.optimizer) {
			t.Errorf("%s records: key optimizer %q (%s)", tc.optimizer, k.Optimizer, k.OptimizerName())
		}
		c := fits[k]
		if c == nil {
			t.Fatalf("no cost model for %v", k)
		}
		if got, want := c.Update(5000), tc.update.a+5000*tc.update.b; !closeTo(got, want, recoverTol) {
			t.Errorf("%s: update(5000) %g, want %g", tc.optimizer, got, want)
		}
	}
	if k := KeyOf(&sgd[0]); k.Optimizer != "" || strings.Contains(k.String(), "sgd") {
		t.Errorf("a record naming no optimizer: key %+v, %q; want SGD's, which keys and messages leave out", k, k)
	}
}
