package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	// The models, profile and predict commands describe models
	// (models.Describe), which opens the meta backend by name.
	_ "github.com/pipecast/pipecast/tensor/meta" // registers the "meta" backend
)

// IOStreams are the streams a command reads and writes: data to Out,
// diagnostics to ErrOut.
type IOStreams struct {
	Out    io.Writer
	ErrOut io.Writer
}

// NewCmdRoot returns the pipecast command with every subcommand attached.
func NewCmdRoot(streams *IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pipecast",
		Short: "Train, profile and predict pipeline-parallel deep learning",
		Long: `pipecast runs real pipeline-parallel training of deep networks (VGG16-BN,
ResNet-50, Inception-v3 and an MLP) on several devices under the GPipe,
cooperative, 1F1B and single-device schedules, records the time and memory
of every device, and predicts the runtime and memory of configurations that
were never run.`,
		// Errors are printed once, by Execute, in pipecast's own format.
		SilenceErrors: true,
		SilenceUsage:  true,
		// The root command is runnable only so that cobra validates its
		// arguments with rootArgs: otherwise an unknown command is a plain
		// error that cannot be told apart from a failure.
		Args: rootArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	// A runnable root would list "pipecast [flags]" as a usage line; it
	// only ever prints help, so show the command form alone.
	cmd.SetUsageTemplate(strings.Replace(cmd.UsageTemplate(),
		"{{if .Runnable}}", "{{if and .Runnable (not .HasAvailableSubCommands)}}", 1))
	cmd.SuggestionsMinimumDistance = 2
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &UsageError{Err: err}
	})
	cmd.AddCommand(NewCmdVersion(streams, nil))
	cmd.AddCommand(NewCmdModels(streams, nil))
	cmd.AddCommand(NewCmdProfile(streams, nil))
	cmd.AddCommand(NewCmdReport(streams, nil))
	cmd.AddCommand(NewCmdPredict(streams, nil))
	cmd.AddCommand(NewCmdPlan(streams, nil))
	return cmd
}

// rootArgs rejects an argument that names no command, suggesting the
// closest ones.
func rootArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		quoted := make([]string, len(s))
		for i, name := range s {
			quoted[i] = strconv.Quote(name)
		}
		msg += "; did you mean " + strings.Join(quoted, " or ") + "?"
	}
	return &UsageError{Err: errors.New(msg)}
}

// noArgs is cobra.NoArgs with its error made a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%q accepts no arguments, got %q", cmd.CommandPath(), args[0])
	}
	return nil
}

// Execute runs the command line args (without the program name) and
// returns the exit code. An error is printed to streams.ErrOut as
// "pipecast: <message>", with a pointer to the help for usage errors.
func Execute(ctx context.Context, args []string, streams *IOStreams) ExitCode {
	root := NewCmdRoot(streams)
	if args == nil {
		args = []string{} // cobra reads os.Args for nil; the caller means none
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	code := exitCodeFor(err)
	if err != nil {
		fmt.Fprintf(streams.ErrOut, "pipecast: %v\n", err)
	}
	var usage *UsageError
	if errors.As(err, &usage) && cmd != nil {
		fmt.Fprintf(streams.ErrOut, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

// Main runs pipecast with the process's arguments and standard streams.
// An interrupt (SIGINT) or SIGTERM cancels the context the commands run
// under, so that long work stops cleanly: a sweep finishes the run under
// way, keeps its record and stops. A second signal exits at once (status
// 130); every record already written stays whole, since each is one
// line appended with one write.
func Main() ExitCode {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "pipecast: %v: finishing the run under way (again to stop at once)\n", s)
		cancel()
		s = <-sigs
		fmt.Fprintf(os.Stderr, "pipecast: %v: stopping now\n", s)
		os.Exit(130)
	}()
	return Execute(ctx, os.Args[1:], &IOStreams{Out: os.Stdout, ErrOut: os.Stderr})
}
