// Package buildinfo identifies the pipecast build: its version and the
// VCS revision it was built from, for run records and the version command.
package buildinfo

import "runtime/debug"

// version is pipecast's version as release builds set it at link time:
//
//	go build -ldflags "-X github.com/pipecast/pipecast/internal/buildinfo.version=v1.2.3"
//
// It is pipecast's only link-time variable. Read it through Version, which
// falls back to the build information when it is empty.
var version string

// Version returns the build's version: the one set at link time, else the
// main module's version that the go command embeds, else "(devel)".
func Version() string {
	return VersionFrom(version, debug.ReadBuildInfo)
}

// Linked returns the version set at link time, or "" when none was.
func Linked() string { return version }

// Revision returns the VCS revision the go command stamped into the
// binary, or "" for a build without VCS information (go run, go test,
// -buildvcs=false).
func Revision() string {
	return RevisionFrom(debug.ReadBuildInfo)
}

// VersionFrom is Version with the link-time value and the build
// information passed in: the version command passes the reader it was
// given, and tests vary both.
func VersionFrom(linked string, read func() (*debug.BuildInfo, bool)) string {
	if linked != "" {
		return linked
	}
	if bi, ok := read(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// RevisionFrom is Revision with the build information read by read.
func RevisionFrom(read func() (*debug.BuildInfo, bool)) string {
	bi, ok := read()
	if !ok {
		return ""
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return ""
}
