package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// leaf is a layer that holds parameters and computes nothing: enough for
// models.Model.Ties, which reads the blocks' parameters alone.
type leaf struct{ params []*models.Param }

func (l *leaf) Forward(*models.Pass, *tensor.Tensor) (*tensor.Tensor, models.Context) {
	panic("leaf: no forward")
}
func (l *leaf) Backward(*models.Pass, models.Context, *tensor.Tensor) *tensor.Tensor {
	panic("leaf: no backward")
}
func (l *leaf) OutShape(in tensor.Shape) (tensor.Shape, error) { return in, nil }
func (l *leaf) Params() []*models.Param                        { return l.params }
func (l *leaf) Buffers() []*models.Buffer                      { return nil }
func (l *leaf) Children() []models.Child                       { return nil }

// tiedModel returns a model of four blocks whose first and last hold one
// *Param under the names GPT-2 gives its embedding and its LM head.
func tiedModel() *models.Model {
	shared := &models.Param{Name: "weight"}
	block := func(name string, params ...*models.Param) *models.Block {
		return &models.Block{Name: name, Layer: models.NewSequential(models.Child{Name: name, Layer: &leaf{params: params}})}
	}
	return &models.Model{Blocks: []*models.Block{
		block("transformer.wte", shared),
		block("transformer.h.0", &models.Param{Name: "weight"}),
		block("transformer.h.1", &models.Param{Name: "weight"}),
		block("lm_head", shared),
	}}
}

func TestModelTies(t *testing.T) {
	m := tiedModel()
	want := []models.Tie{{Blocks: []int{0, 3}, Names: []string{"transformer.wte.weight", "lm_head.weight"}}}
	ties := m.Ties()
	if !reflect.DeepEqual(ties, want) {
		t.Fatalf("Ties() = %+v, want %+v", ties, want)
	}
	for _, tt := range []struct {
		bounds []int
		want   []int
	}{
		{[]int{0, 4}, []int{0}},
		{[]int{0, 1, 4}, []int{0, 1}},
		{[]int{0, 1, 2, 3, 4}, []int{0, 3}},
	} {
		got, err := ties[0].Stages(tt.bounds)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Stages(%v) = %v, %v; want %v", tt.bounds, got, err, tt.want)
		}
	}
	if _, err := ties[0].Stages([]int{0, 2}); err == nil {
		t.Error("Stages of bounds that miss block 3: no error")
	}
	if got := (&models.Model{Blocks: m.Blocks[1:3]}).Ties(); got != nil {
		t.Errorf("Ties() of untied blocks = %+v, want none", got)
	}
}

// TestProgramTies checks that Program adds the tied stages' all-reduce
// where the uses fall on different stages, and nothing where one stage
// holds them.
func TestProgramTies(t *testing.T) {
	m := tiedModel()
	tests := []struct {
		name   string
		o      schedule.Options
		bounds []int
		group  []int // nil: no all-reduce
	}{
		{"single", schedule.Options{Name: schedule.Single, Devices: 1, Micro: 2}, []int{0, 4}, nil},
		{"gpipe K=2", schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 2}, []int{0, 2, 4}, []int{0, 1}},
		{"1f1b K=4", schedule.Options{Name: schedule.OneF1B, Devices: 4, Micro: 4}, []int{0, 1, 2, 3, 4}, []int{0, 3}},
		{"interleaved K=1", schedule.Options{Name: schedule.Interleaved, Devices: 1, Micro: 2, Virtual: 2}, []int{0, 2, 4}, []int{0}},
		{"interleaved K=2", schedule.Options{Name: schedule.Interleaved, Devices: 2, Micro: 2, Virtual: 2}, []int{0, 1, 2, 3, 4}, []int{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{Model: "toy", Schedule: tt.o.WithDefaults()}
			p, err := c.Program(m, tt.bounds)
			if err != nil {
				t.Fatal(err)
			}
			var groups [][]int
			for k, ops := range p.Devices {
				for _, o := range ops {
					if o.Kind == schedule.AllReduce {
						groups = append(groups, p.GroupOf(o))
						if !slices.Contains(p.GroupOf(o), k) {
							t.Errorf("device %d runs %v outside its group %v", k, o, p.GroupOf(o))
						}
					}
				}
			}
			if tt.group == nil && groups != nil {
				t.Errorf("all-reduces over %v, want none", groups)
			}
			if tt.group != nil && (len(groups) != len(tt.group) || !slices.Equal(groups[0], tt.group)) {
				t.Errorf("all-reduces over %v, want one on each of %v", groups, tt.group)
			}
		})
	}
	c := Config{Model: "toy", Schedule: schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 2}.WithDefaults()}
	if _, err := c.Program(m, nil); err == nil || !strings.Contains(err.Error(), "tied parameters") {
		t.Errorf("Program without bounds of a tied model: error %v, want one about the tie", err)
	}
	untied := &models.Model{Blocks: m.Blocks[1:3]}
	if _, err := c.Program(untied, nil); err != nil {
		t.Errorf("Program without bounds of an untied model: %v", err)
	}
}
