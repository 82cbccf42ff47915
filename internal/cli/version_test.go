package cli

import (
	"bytes"
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/internal/buildinfo"
	"github.com/pipecast/pipecast/tensor"
)

func TestNewCmdVersionFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    Format
		wantErr bool
	}{
		{name: "default", args: nil, want: FormatText},
		{name: "text", args: []string{"--output", "text"}, want: FormatText},
		{name: "json", args: []string{"--output", "json"}, want: FormatJSON},
		{name: "json with equals", args: []string{"--output=json"}, want: FormatJSON},
		{name: "xml", args: []string{"--output", "xml"}, wantErr: true},
		{name: "argument", args: []string{"extra"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			streams := &IOStreams{Out: &out, ErrOut: &errOut}
			var got *VersionOptions
			cmd := NewCmdVersion(streams, func(o *VersionOptions) error {
				got = o
				return nil
			})
			cmd.SetArgs(tc.args)
			cmd.SetOut(&out)
			cmd.SetErr(&errOut)
			cmd.SilenceUsage = true
			cmd.SilenceErrors = true
			err := cmd.Execute()
			if tc.wantErr {
				if err == nil {
					t.Fatalf("args %q: got no error", tc.args)
				}
				if got != nil {
					t.Errorf("args %q: the run function ran despite the error", tc.args)
				}
				return
			}
			if err != nil {
				t.Fatalf("args %q: %v", tc.args, err)
			}
			if got == nil {
				t.Fatal("the run function did not run")
			}
			if got.Output != tc.want {
				t.Errorf("Output: got %q, want %q", got.Output, tc.want)
			}
			if got.IO != streams || got.LinkedVersion != buildinfo.Linked() || got.ReadBuildInfo == nil || got.Backends == nil {
				t.Errorf("options not filled in: %+v", got)
			}
		})
	}
}

// fakeBuild returns a ReadBuildInfo that reports the given main module
// version and settings; ok false means the binary carries no build
// information at all.
func fakeBuild(ok bool, mainVersion string, settings ...debug.BuildSetting) func() (*debug.BuildInfo, bool) {
	return func() (*debug.BuildInfo, bool) {
		if !ok {
			return nil, false
		}
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/pipecast/pipecast", Version: mainVersion}, Settings: settings}, true
	}
}

var stamped = []debug.BuildSetting{
	{Key: "-compiler", Value: "gc"},
	{Key: "vcs", Value: "git"},
	{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
	{Key: "vcs.time", Value: "2025-03-04T05:06:07Z"},
	{Key: "vcs.modified", Value: "true"},
}

func fakeBackends() []tensor.Backend {
	return []tensor.Backend{
		{Name: "cpu", Description: "pure-Go kernels"},
		{Name: "gpu0", Description: "a fake accelerator"},
	}
}

// squeeze replaces every run of spaces with one, so that tests do not
// depend on the column widths of the text output.
func squeeze(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

func TestVersionRunText(t *testing.T) {
	tests := []struct {
		name    string
		ldflags string
		build   func() (*debug.BuildInfo, bool)
		want    []string // lines or parts of lines, in order, spaces squeezed
		notWant []string
	}{
		{
			name:    "go run build",
			build:   fakeBuild(true, "(devel)", debug.BuildSetting{Key: "-compiler", Value: "gc"}),
			want:    []string{"pipecast version (devel)\n", "revision: unknown (built without VCS information)\n"},
			notWant: []string{"commit time:", "modified:"},
		},
		{
			name:  "no build information",
			build: fakeBuild(false, ""),
			want:  []string{"pipecast version (devel)\n", noVCS},
		},
		{
			name:  "module version and VCS stamps",
			build: fakeBuild(true, "v0.3.0", stamped...),
			want: []string{
				"pipecast version v0.3.0\n",
				"revision: 0123456789abcdef0123456789abcdef01234567\n",
				"commit time: 2025-03-04T05:06:07Z\n",
				"modified: true\n",
			},
			notWant: []string{noVCS},
		},
		{
			name:  "clean tree",
			build: fakeBuild(true, "v0.3.0", debug.BuildSetting{Key: "vcs.revision", Value: "abc"}, debug.BuildSetting{Key: "vcs.modified", Value: "false"}),
			want:  []string{"revision: abc\n", "modified: false\n"},
			// The go command always stamps vcs.time with a revision; if
			// it is missing, say nothing rather than something wrong.
			notWant: []string{"commit time:"},
		},
		{
			name:    "ldflags override the build information",
			ldflags: "v9.9.9",
			build:   fakeBuild(true, "v0.3.0", stamped...),
			want:    []string{"pipecast version v9.9.9\n"},
			notWant: []string{"v0.3.0"},
		},
		{
			name:    "ldflags without build information",
			ldflags: "v9.9.9",
			build:   fakeBuild(false, ""),
			want:    []string{"pipecast version v9.9.9\n", noVCS},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := versionRun(&VersionOptions{
				IO:            &IOStreams{Out: &out, ErrOut: &bytes.Buffer{}},
				Output:        FormatText,
				LinkedVersion: tc.ldflags,
				ReadBuildInfo: tc.build,
				Backends:      fakeBackends,
			})
			if err != nil {
				t.Fatal(err)
			}
			got := squeeze(out.String())
			rest := got
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q (in order):\n%s", w, got)
				}
				rest = rest[i+len(w):]
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("output contains %q:\n%s", w, got)
				}
			}
			for _, w := range []string{
				runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH,
				"backends:", "cpu pure-Go kernels", "gpu0 a fake accelerator",
			} {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
		})
	}
}

func TestVersionRunRealBackends(t *testing.T) {
	var out bytes.Buffer
	opts := &VersionOptions{IO: &IOStreams{Out: &out, ErrOut: &bytes.Buffer{}}, Output: FormatText,
		ReadBuildInfo: debug.ReadBuildInfo, Backends: tensor.Backends}
	if err := versionRun(opts); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"pipecast version ", "cpu", "pure-Go kernels", runtime.Version()} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
}

func TestVersionRunJSON(t *testing.T) {
	tests := []struct {
		name    string
		build   func() (*debug.BuildInfo, bool)
		wantVer string
		wantVCS *vcsInfo
	}{
		{name: "without VCS", build: fakeBuild(true, "(devel)"), wantVer: "(devel)"},
		{name: "with VCS", build: fakeBuild(true, "v0.3.0", stamped...), wantVer: "v0.3.0", wantVCS: &vcsInfo{
			Revision: "0123456789abcdef0123456789abcdef01234567", CommitTime: "2025-03-04T05:06:07Z", Modified: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := versionRun(&VersionOptions{
				IO:            &IOStreams{Out: &out, ErrOut: &bytes.Buffer{}},
				Output:        FormatJSON,
				ReadBuildInfo: tc.build,
				Backends:      tensor.Backends,
			})
			if err != nil {
				t.Fatal(err)
			}
			var got versionInfo
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("output does not parse: %v\n%s", err, out.String())
			}
			if got.Version != tc.wantVer {
				t.Errorf("version: got %q, want %q", got.Version, tc.wantVer)
			}
			switch {
			case tc.wantVCS == nil && got.VCS != nil:
				t.Errorf("vcs: got %+v, want null", *got.VCS)
			case tc.wantVCS != nil && (got.VCS == nil || *got.VCS != *tc.wantVCS):
				t.Errorf("vcs: got %+v, want %+v", got.VCS, *tc.wantVCS)
			}
			if got.GoVersion != runtime.Version() || got.OS != runtime.GOOS || got.Arch != runtime.GOARCH || got.CPUs != runtime.NumCPU() {
				t.Errorf("platform: got %s %s/%s %d cpus, want %s %s/%s %d",
					got.GoVersion, got.OS, got.Arch, got.CPUs, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
			}
			found := false
			for _, b := range got.Backends {
				found = found || (b.Name == "cpu" && b.Description != "")
			}
			if !found {
				t.Errorf("backends: got %+v, want cpu with a description", got.Backends)
			}
		})
	}
}

func TestVersionRunJSONWithoutBackends(t *testing.T) {
	// A build without backends must still print a list, not null, so
	// that programs can iterate over it.
	var out bytes.Buffer
	err := versionRun(&VersionOptions{IO: &IOStreams{Out: &out, ErrOut: &bytes.Buffer{}}, Output: FormatJSON,
		ReadBuildInfo: fakeBuild(false, ""), Backends: func() []tensor.Backend { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"backends": []`) {
		t.Errorf("got %s, want an empty backends list", out.String())
	}
}
