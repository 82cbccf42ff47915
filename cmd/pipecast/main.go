// Command pipecast runs real pipeline-parallel training, profiles it and
// predicts its runtime and memory. See internal/cli for the commands.
package main

import (
	"os"

	"github.com/pipecast/pipecast/internal/cli"
)

func main() {
	os.Exit(int(cli.Main()))
}
