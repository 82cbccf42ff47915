package runner

import (
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
)

func TestBlockTimes(t *testing.T) {
	cfg := config.Config{Model: "mlp", ModelConfig: models.Config{Sizes: []int{64, 512, 16, 4}}, Batch: 8,
		Schedule: schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 2}, Threads: 1, Seed: 1}
	costs, err := BlockTimes(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(costs) != 3 {
		t.Fatalf("got %d block costs, want 3", len(costs))
	}
	for i, c := range costs {
		if !(c > 0) {
			t.Errorf("block %d: cost %v, want > 0", i, c)
		}
	}
	// 64·512 + 512·16 MACs in the first two blocks dwarf the last's 16·4.
	if !(costs[0] > costs[2] && costs[1] > costs[2]) {
		t.Errorf("block costs %v: the small last block should be the cheapest", costs)
	}

	cfg.Balance = "time"
	ctx := watch(t, time.Minute)
	tr, err := NewTrainer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if b := tr.Partition(); len(b) != 3 || b[0] != 0 || b[2] != 3 {
		t.Errorf("partition by time: got %v, want 2 stages over 3 blocks", b)
	}
	if _, err := tr.Step(ctx); err != nil {
		t.Fatal(err)
	}
}
