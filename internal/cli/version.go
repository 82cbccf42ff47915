package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/pipecast/pipecast/internal/buildinfo"
	"github.com/pipecast/pipecast/tensor"
	_ "github.com/pipecast/pipecast/tensor/cpu" // registers the "cpu" backend
)

// noVCS is what version prints for a binary built without VCS stamping,
// as `go run` and -buildvcs=false builds are.
const noVCS = "unknown (built without VCS information)"

// VersionOptions is what the version command needs.
type VersionOptions struct {
	IO     *IOStreams
	Output Format

	// LinkedVersion is the version set at link time, or "": what
	// buildinfo.Linked returns. Release builds set it with
	//
	//	go build -ldflags "-X github.com/pipecast/pipecast/internal/buildinfo.version=v1.2.3"
	//
	// and it wins over the build information. Tests replace it.
	LinkedVersion string
	// ReadBuildInfo returns the build information embedded in the binary;
	// tests replace it.
	ReadBuildInfo func() (*debug.BuildInfo, bool)
	// Backends lists the registered backends; tests replace it.
	Backends func() []tensor.Backend
}

// NewCmdVersion returns the version command. runF, when not nil, runs
// instead of the real work, so that tests can check what the flags
// parsed into.
func NewCmdVersion(streams *IOStreams, runF func(*VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{
		IO:            streams,
		LinkedVersion: buildinfo.Linked(),
		ReadBuildInfo: debug.ReadBuildInfo,
		Backends:      tensor.Backends,
	}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, build and available backends",
		Long: `Print pipecast's version, the VCS revision it was built from, the Go
version, the platform and the compute backends and transports compiled in.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return versionRun(opts)
		},
	}
	addOutputFlag(cmd, &opts.Output, FormatText, FormatJSON)
	return cmd
}

// versionInfo is what version prints; its JSON form is the output of
// --output json.
type versionInfo struct {
	Version   string        `json:"version"`
	VCS       *vcsInfo      `json:"vcs"` // null when built without VCS information
	GoVersion string        `json:"go_version"`
	OS        string        `json:"os"`
	Arch      string        `json:"arch"`
	CPUs      int           `json:"cpus"`
	Backends  []backendInfo `json:"backends"`
	// Transports are the ways devices can move data in this build.
	Transports []string `json:"transports"`
}

type vcsInfo struct {
	Revision   string `json:"revision"`
	CommitTime string `json:"commit_time,omitempty"` // RFC 3339, as the go command stamps it
	Modified   bool   `json:"modified"`
}

type backendInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

func versionRun(opts *VersionOptions) error {
	info := collectVersion(opts)
	if opts.Output == FormatJSON {
		return writeJSON(opts.IO.Out, info)
	}
	w := tabwriter.NewWriter(opts.IO.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "pipecast version %s\n", info.Version)
	if info.VCS == nil {
		fmt.Fprintf(w, "revision:\t%s\n", noVCS)
	} else {
		fmt.Fprintf(w, "revision:\t%s\n", info.VCS.Revision)
		if info.VCS.CommitTime != "" {
			fmt.Fprintf(w, "commit time:\t%s\n", info.VCS.CommitTime)
		}
		fmt.Fprintf(w, "modified:\t%t\n", info.VCS.Modified)
	}
	fmt.Fprintf(w, "go:\t%s\n", info.GoVersion)
	fmt.Fprintf(w, "os/arch:\t%s/%s\n", info.OS, info.Arch)
	fmt.Fprintf(w, "cpus:\t%d\n", info.CPUs)
	if len(info.Backends) == 0 {
		fmt.Fprintf(w, "backends:\tnone\n")
	}
	for i, b := range info.Backends {
		label := ""
		if i == 0 {
			label = "backends:"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", label, b.Name, b.Description)
	}
	fmt.Fprintf(w, "transports:\t%s\n", strings.Join(info.Transports, ", "))
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write version: %w", err)
	}
	return nil
}

// collectVersion gathers what version prints. The version and revision
// are buildinfo's, as run records carry them, read from opts' link-time
// value and build information.
func collectVersion(opts *VersionOptions) versionInfo {
	info := versionInfo{
		Version:    buildinfo.VersionFrom(opts.LinkedVersion, opts.ReadBuildInfo),
		GoVersion:  runtime.Version(),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		CPUs:       runtime.NumCPU(),
		Backends:   []backendInfo{},
		Transports: transports(),
	}
	if rev := buildinfo.RevisionFrom(opts.ReadBuildInfo); rev != "" {
		bi, _ := opts.ReadBuildInfo()
		info.VCS = vcsFromSettings(rev, bi.Settings)
	}
	for _, b := range opts.Backends() {
		info.Backends = append(info.Backends, backendInfo{Name: b.Name, Description: b.Description})
	}
	return info
}

// vcsFromSettings completes the VCS information of revision rev from the
// go command's other VCS stamps.
func vcsFromSettings(rev string, settings []debug.BuildSetting) *vcsInfo {
	v := vcsInfo{Revision: rev}
	for _, s := range settings {
		switch s.Key {
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return &v
}
