package main

import (
	"fmt"
	"testing"

	"github.com/pipecast/pipecast/models"
)

// TestStepProductsCoverTheStep checks the products listed for a training
// step against the model's own count of multiply-accumulates: the
// forward, the backward data and the backward filter (or weight) of each
// convolution and linear layer each do as many as the forward, so the
// products must add up to three forwards, whatever grouping of samples
// the convolutions' policy picks for the thread count.
func TestStepProductsCoverTheStep(t *testing.T) {
	for _, c := range []struct {
		model        string
		image, batch int
	}{{"resnet50", 64, 5}, {"vgg16bn", 32, 3}, {"inceptionv3", 96, 2}} {
		desc, err := models.Describe(c.model, models.Config{Image: c.image, Classes: 10, Width: 1})
		if err != nil {
			t.Fatal(err)
		}
		want := 3 * int64(c.batch) * desc.MACs()
		for _, threads := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("%s/%dpx/b%d/threads=%d", c.model, c.image, c.batch, threads), func(t *testing.T) {
				w, err := stepProducts(c.model, c.image, c.batch, threads)
				if err != nil {
					t.Fatal(err)
				}
				var got int64
				seen := map[product]bool{}
				for _, u := range w.uses {
					if seen[u.product] {
						t.Errorf("%v listed twice", u.product)
					}
					seen[u.product] = true
					if u.count < 1 || len(u.what) == 0 {
						t.Errorf("%v: count %d, passes %q", u.product, u.count, u.what)
					}
					got += int64(u.count) * int64(u.m) * int64(u.n) * int64(u.k)
				}
				if got != want {
					t.Errorf("products add up to %d MACs, want 3 forwards of %d samples: %d", got, c.batch, want)
				}
			})
		}
	}
}

func TestStepProductsUnknownModel(t *testing.T) {
	if _, err := stepProducts("nosuch", 64, 2, 1); err == nil {
		t.Error("got no error")
	}
}

func TestWorkloadsFor(t *testing.T) {
	if got := workloadsFor("inceptionv3", options{}); fmt.Sprint(got) != "[[96 32] [299 8]]" {
		t.Errorf("inceptionv3 defaults: %v", got)
	}
	if got := workloadsFor("resnet50", options{quick: true}); fmt.Sprint(got) != "[[64 32]]" {
		t.Errorf("resnet50 quick: %v", got)
	}
	if got := workloadsFor("vgg16bn", options{images: []int{32, 64}, batches: []int{8}}); fmt.Sprint(got) != "[[32 8] [64 8]]" {
		t.Errorf("vgg16bn with --image 32,64 --batch 8: %v", got)
	}
}
