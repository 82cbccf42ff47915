package models

import "testing"

// TestVGG16WithoutBatchNorm checks torchvision's vgg16 (no batch norm):
// 138,357,544 parameters at 1000 classes, 32 state_dict entries, and
// module indices conv, relu (features.0, features.1), pool at features.4.
func TestVGG16WithoutBatchNorm(t *testing.T) {
	m, err := Describe("vgg16", Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Params(), int64(138357544); got != want {
		t.Errorf("params: got %d, want %d", got, want)
	}
	sd := StateDict(m.Net)
	if len(sd) != 32 {
		t.Errorf("state_dict entries: got %d, want 32", len(sd))
	}
	want := []string{"features.0.weight", "features.0.bias", "features.2.weight", "features.2.bias", "features.5.weight"}
	for i, n := range want {
		if sd[i].Name != n {
			t.Errorf("entry %d: got %s, want %s", i, sd[i].Name, n)
		}
	}
	if got := sd[len(sd)-1].Name; got != "classifier.6.bias" {
		t.Errorf("last entry: got %s, want classifier.6.bias", got)
	}
	if got := m.Blocks[2].Name; got != "features.4" {
		t.Errorf("first pool block: got %s, want features.4", got)
	}
	if bn, err := Describe("vgg16bn", Config{}); err != nil || bn.MACs() != m.MACs() {
		t.Errorf("vgg16 and vgg16bn MACs differ: %d and %v (%v)", m.MACs(), bn, err)
	}
}
