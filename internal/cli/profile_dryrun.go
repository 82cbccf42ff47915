package cli

import (
	"fmt"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/reports"
)

// profileDryRun prints what profile --dry-run found the sweep would run:
// cfgs, configuration i from round first[i] to opts.Rounds, after every
// check profileRun makes before its first run. It runs nothing and
// writes no file; the skipped combinations' notes go to standard error
// as the sweep's would.
func profileDryRun(opts *ProfileOptions, cfgs []config.Config, first []int, notes []string) error {
	if opts.Transport == profiler.TransportMPI && !mpiBuilt {
		// The sweep opens the MPI job next, which a build without the
		// mpi tag refuses at once, opening nothing. With the tag the dry
		// run leaves the job unopened, so the number of processes is not
		// checked against K.
		_, err := newSweepRunner(opts.Transport, cfgs)
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(opts.IO.ErrOut, "pipecast: "+n)
	}
	runs := len(planRounds(cfgs, first, opts.Rounds, opts.Seed))
	t := &reports.Table{
		Title: fmt.Sprintf("pipecast profile --dry-run: %d runs", runs),
		Columns: []reports.Column{
			{Key: "model", Header: "model"},
			{Key: "schedule", Header: "schedule"},
			{Key: "devices", Header: "K", Align: reports.AlignRight},
			{Key: "microbatches", Header: "M", Align: reports.AlignRight},
			{Key: "batch", Header: "batch", Align: reports.AlignRight},
			{Key: "rounds", Header: "rounds", Align: reports.AlignRight},
		},
		Footnotes: []string{"nothing ran and no file was written; without --dry-run each configuration runs once a round"},
	}
	for i, c := range cfgs {
		t.Rows = append(t.Rows, []reports.Cell{
			reports.String(c.ModelConfig.Record().Label(c.Model)),
			reports.String(c.Schedule.Label()),
			reports.Int(int64(c.Schedule.Devices)),
			reports.Int(int64(c.Schedule.Micro)),
			reports.Int(int64(c.Batch)),
			reports.Int(int64(opts.Rounds - first[i] + 1)),
		})
	}
	return renderTable(opts.IO.Out, t, opts.Output, opts.Wide)
}
