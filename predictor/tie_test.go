package predictor

import (
	"math"
	"testing"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/schedule"
)

// TestPriceAllReduce checks the price of the all-reduce of a tied
// parameter: one point-to-point transfer of a member's part per other
// member (the two of a pair run at once), nothing on one device.
func TestPriceAllReduce(t *testing.T) {
	p2p := Line{Intercept: 1e4, Slope: 0.5}
	c := &CostModel{transfer: map[string]Line{TransferP2P: p2p}}
	tests := []struct {
		name     string
		o        schedule.Options
		stages   []int
		received int64 // bytes the device received: a part from each other member
		want     float64
	}{
		{"pair", schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 2}, []int{0, 1}, 4000, p2p.At(4000)},
		{"three devices", schedule.Options{Name: schedule.OneF1B, Devices: 3, Micro: 3}, []int{0, 1, 2}, 8000, 2 * p2p.At(4000)},
		{"one device", schedule.Options{Name: schedule.Interleaved, Devices: 1, Micro: 2, Virtual: 2}, []int{0, 1}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := schedule.Build(tt.o.WithDefaults())
			if err != nil {
				t.Fatal(err)
			}
			if err := prog.Tie(tt.stages); err != nil {
				t.Fatal(err)
			}
			s := &simulation{c: c, cfg: config.Config{Batch: 12, Schedule: prog.Options}, prog: prog}
			for d, ops := range prog.Devices {
				for _, o := range ops {
					if o.Kind != schedule.AllReduce {
						continue
					}
					p, err := s.priceOp(o, tt.received)
					if err != nil {
						t.Fatal(err)
					}
					if math.Abs(p.nanos-tt.want) > 1e-9*tt.want || p.bytes != tt.received {
						t.Errorf("device %d: %v priced %v ns moving %d bytes, want %v ns", d, o, p.nanos, p.bytes, tt.want)
					}
				}
			}
		})
	}
}

// TestOpKeysTellAllReducesApart checks that two all-reduces of one device
// that start at the same stage get prices of their own.
func TestOpKeysTellAllReducesApart(t *testing.T) {
	prog, err := schedule.Build(schedule.Options{Name: schedule.GPipe, Devices: 4, Micro: 2}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range [][]int{{0, 3}, {0, 2, 3}} {
		if err := prog.Tie(st); err != nil {
			t.Fatal(err)
		}
	}
	keys := map[opKey]bool{}
	for _, o := range prog.Devices[0] {
		if keys[keyOf(o)] {
			t.Errorf("%v shares its key with an earlier op", o)
		}
		keys[keyOf(o)] = true
	}
}
