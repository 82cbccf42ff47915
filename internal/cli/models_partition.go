package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/reports"
)

// balanceValue is the pflag.Value behind --balance; like --output, a bad
// value is a flag error, so a usage error.
type balanceValue struct{ p *config.Balance }

func (v balanceValue) String() string { return string(*v.p) }

func (v balanceValue) Set(s string) error {
	if b := config.Balance(s); b == config.BalanceParams || b == config.BalanceMACs {
		*v.p = b
		return nil
	}
	return fmt.Errorf("unknown balance %q (want params|macs)", s)
}

func (v balanceValue) Type() string { return "cost" }

// ModelsPartitionOptions is what the models partition command needs.
type ModelsPartitionOptions struct {
	IO      *IOStreams
	Output  Format
	Wide    bool // --wide: every column, however narrow the terminal
	Model   string
	Devices int
	Balance config.Balance
	Size    ModelSize
}

// newCmdModelsPartition returns the models partition command. runF, when
// not nil, runs instead of the real work.
func newCmdModelsPartition(streams *IOStreams, runF func(*ModelsPartitionOptions) error) *cobra.Command {
	opts := &ModelsPartitionOptions{IO: streams, Balance: config.BalanceMACs}
	cmd := &cobra.Command{
		Use:   "partition --model NAME --devices K",
		Short: "Split a model into pipeline stages of balanced cost",
		Long: `Split a model's blocks into K contiguous stages, one per device, so that
the costliest stage is as cheap as possible (an exact linear partition),
and print each stage's blocks, parameters, MACs and activation bytes per
sample. After the table comes the imbalance of each cost: the largest
stage's cost divided by the mean, 1 for a perfect balance.

--balance macs (the default) evens out compute; --balance params evens out
the weights, gradients and optimizer state each device holds. Blocks are
numbered from 1 in model order.`,
		Example: `  pipecast models partition --model resnet50 --devices 4
  pipecast models partition --model vgg16bn --devices 2 --balance params --output json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case opts.Model == "":
				return usageErrorf("required flag --model not set")
			case !cmd.Flags().Changed("devices"):
				return usageErrorf("required flag --devices not set")
			case opts.Devices < 1:
				return usageErrorf("--devices %d: need at least 1", opts.Devices)
			}
			if err := opts.Size.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return modelsPartitionRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Model, "model", "", "model to partition (required; see pipecast models)")
	cmd.Flags().IntVar(&opts.Devices, "devices", 0, "number of devices, one stage each (required)")
	cmd.Flags().Var(balanceValue{&opts.Balance}, "balance", "cost to balance: params|macs")
	opts.Size = defaultModelSize()
	addSizeFlags(cmd.Flags(), &opts.Size)
	addTableFlags(cmd, &opts.Output, &opts.Wide)
	_ = cmd.RegisterFlagCompletionFunc("model", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var names []string
		for _, a := range models.Archs() {
			names = append(names, a.Name)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
	_ = cmd.RegisterFlagCompletionFunc("balance", cobra.FixedCompletions([]string{"params", "macs"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// partitionDoc is the json output of models partition.
type partitionDoc struct {
	Model     string           `json:"model"`
	Input     string           `json:"input"`
	Classes   int              `json:"classes"`
	Width     float64          `json:"width"`
	Devices   int              `json:"devices"`
	Balance   config.Balance   `json:"balance"`
	Stages    []reports.Object `json:"stages"`
	Imbalance imbalance        `json:"imbalance"`
}

// imbalance is each cost's largest stage divided by the mean of the
// stages: 1 when the stages cost the same.
type imbalance struct {
	Params float64 `json:"params"`
	MACs   float64 `json:"macs"`
}

func (imb imbalance) of(b config.Balance) float64 {
	if b == config.BalanceMACs {
		return imb.MACs
	}
	return imb.Params
}

func modelsPartitionRun(opts *ModelsPartitionOptions) error {
	a, err := models.LookupArch(opts.Model)
	if err != nil {
		return &UsageError{Err: fmt.Errorf("--model: %w", err)}
	}
	if err := opts.Size.sizeUsageError(a); err != nil {
		return err
	}
	m, err := opts.Size.describe(a)
	if err != nil {
		return err
	}
	if n := len(m.Blocks); opts.Devices > n {
		return usageErrorf("--devices %d: %s has %d blocks, so at most %d stages", opts.Devices, a.Name, n, n)
	}
	bounds, err := config.Config{Balance: opts.Balance}.Partition(m, opts.Devices, nil)
	if err != nil {
		return fmt.Errorf("partition %s: %w", a.Name, err)
	}
	t, imb := stageTable(m, bounds, opts.Balance)
	input := shapeCell(m.Input)
	if opts.Output == FormatJSON {
		return writeJSON(opts.IO.Out, partitionDoc{
			Model: a.Name, Input: input.Value.(string), Classes: m.Config.Classes, Width: m.Config.Width,
			Devices: opts.Devices, Balance: opts.Balance, Stages: t.Objects(), Imbalance: imb,
		})
	}
	t.Title = fmt.Sprintf("%s (input %s, %d classes, width %s) on %d devices, balanced by %s",
		a.Name, input.Text, m.Config.Classes, strconv.FormatFloat(m.Config.Width, 'g', -1, 64),
		opts.Devices, balanceName(opts.Balance))
	return renderTable(opts.IO.Out, t, opts.Output, opts.Wide)
}

// balanceName is how titles and footnotes name a cost.
func balanceName(b config.Balance) string {
	if b == config.BalanceMACs {
		return "MACs"
	}
	return "params"
}

// stageTable has a row per stage of the partition bounds, and the
// imbalance of each cost as footnotes.
func stageTable(m *models.Model, bounds []int, balance config.Balance) (*reports.Table, imbalance) {
	t := &reports.Table{
		Columns: []reports.Column{
			{Key: "stage", Header: "stage", Align: reports.AlignRight},
			{Key: "range", Header: "block range", Show: reports.People},
			{Key: "first_block", Header: "first block", Show: reports.Machines},
			{Key: "last_block", Header: "last block", Show: reports.Machines},
			{Key: "first_index", Header: "first index", Show: reports.Machines},
			{Key: "last_index", Header: "last index", Show: reports.Machines},
			colBlocks, colParams, colMACs, colActivations,
		},
	}
	k := len(bounds) - 1
	params, macs := make([]float64, k), make([]float64, k)
	for s := range k {
		blocks := m.Blocks[bounds[s]:bounds[s+1]]
		first, last := blocks[0], blocks[len(blocks)-1]
		var p, c, act int64
		for _, b := range blocks {
			p += b.Cost.Params
			c += b.Cost.MACs
			act += b.Cost.SavedBytes
		}
		// The stage keeps its last block's output until the next stage's
		// backward returns its gradient.
		act += last.Cost.OutputBytes
		params[s], macs[s] = float64(p), float64(c)
		lo, hi := bounds[s]+1, bounds[s+1] // numbered from 1
		span := fmt.Sprintf("%s … %s (%d–%d)", first.Name, last.Name, lo, hi)
		if lo == hi {
			span = fmt.Sprintf("%s (%d)", first.Name, lo)
		}
		t.Rows = append(t.Rows, []reports.Cell{
			reports.Int(int64(s + 1)), reports.String(span),
			reports.String(first.Name), reports.String(last.Name), reports.Int(int64(lo)), reports.Int(int64(hi)),
			reports.Int(int64(len(blocks))), reports.Count(p), reports.Count(c), reports.Bytes(act),
		})
	}
	imb := imbalance{Params: maxOverMean(params), MACs: maxOverMean(macs)}
	// The balanced cost first: it is what the partition optimised.
	first, second := config.BalanceMACs, config.BalanceParams
	if balance == config.BalanceParams {
		first, second = second, first
	}
	t.Footnotes = []string{
		fmt.Sprintf("imbalance of %s (the balanced cost), largest stage ÷ mean: %.3f", balanceName(first), imb.of(first)),
		fmt.Sprintf("imbalance of %s (not balanced), largest stage ÷ mean: %.3f", balanceName(second), imb.of(second)),
	}
	t.Footnotes = append(t.Footnotes, costFootnotes...)
	return t, imb
}

// maxOverMean is the largest of xs divided by their mean; 1 when all are
// zero, which is as even as stages get.
func maxOverMean(xs []float64) float64 {
	var sum, top float64
	for _, x := range xs {
		sum += x
		top = max(top, x)
	}
	if sum == 0 {
		return 1
	}
	return top / (sum / float64(len(xs)))
}
