package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pipecast/pipecast/config"
)

// partitionUsage is --partition's help: the split it gives.
const partitionUsage = "split the model as given instead of balancing: the `BLOCKS` of each stage, in stage order (3,4,4,3 for 14 blocks on 4 stages; " +
	"pipecast models partition numbers the blocks), as many stages as K (K·v for interleaved)"

// addPartitionFlag adds --partition, which may be repeated, each value a
// split of its own, kept as given in *values.
func addPartitionFlag(f *pflag.FlagSet, values *[]string) {
	f.StringArrayVar(values, "partition", nil, partitionUsage+"; repeat it for other stage counts or splits, "+
		"each configuration running with every one of its stage count")
}

// addBalanceFlag adds --balance with the balances' names for its help
// and completion: the help lists them after usage.
func addBalanceFlag(cmd *cobra.Command, b *config.Balance, def config.Balance, usage string) {
	cmd.Flags().StringVar((*string)(b), "balance", string(def), "how the partition splits the model: "+
		strings.Join(config.BalanceNames(), "|")+usage)
	_ = cmd.RegisterFlagCompletionFunc("balance", cobra.FixedCompletions(config.BalanceNames(), cobra.ShellCompDirectiveNoFileComp))
}

// parsePartitions parses the --partition values, and sets the balance
// they imply: BalanceGiven, which --balance must not contradict
// (balanceSet: --balance was given). No values leave b alone.
func parsePartitions(values []string, b *config.Balance, balanceSet bool) ([][]int, error) {
	if len(values) == 0 {
		return nil, nil
	}
	var out [][]int
	for _, v := range values {
		p, err := config.ParsePartition(v)
		if err != nil {
			return nil, usageErrorf("--partition %q: %v", v, err)
		}
		out = append(out, p)
	}
	if balanceSet && *b != config.BalanceGiven {
		return nil, usageErrorf("--balance %s: --partition %s gives the split, so nothing is balanced; give one of the two", *b, values[0])
	}
	*b = config.BalanceGiven
	return out, nil
}
