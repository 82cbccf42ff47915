package buildinfo

import (
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionFrom(t *testing.T) {
	info := func(bi *debug.BuildInfo) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) { return bi, bi != nil }
	}
	for _, tc := range []struct {
		name   string
		linked string
		bi     *debug.BuildInfo
		want   string
	}{
		{name: "linked wins", linked: "v1.2.3", bi: &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}}, want: "v1.2.3"},
		{name: "module version", bi: &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}}, want: "v0.9.0"},
		{name: "empty module version", bi: &debug.BuildInfo{}, want: "(devel)"},
		{name: "no build info", want: "(devel)"},
	} {
		if got := VersionFrom(tc.linked, info(tc.bi)); got != tc.want {
			t.Errorf("%s: version %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestRevisionFrom(t *testing.T) {
	info := func(bi *debug.BuildInfo) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) { return bi, bi != nil }
	}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{name: "stamped", bi: &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "abc123"}}}, want: "abc123"},
		{name: "unstamped", bi: &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "GOOS", Value: "linux"}}}, want: ""},
		{name: "no build info", want: ""},
	} {
		if got := RevisionFrom(info(tc.bi)); got != tc.want {
			t.Errorf("%s: revision %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestVersionNotEmpty checks the real build information path: a test
// binary has no link-time version, so it falls back to the module's.
func TestVersionNotEmpty(t *testing.T) {
	if Version() == "" {
		t.Error("Version() is empty")
	}
}

// TestLinkTimeVersion builds a program with the -X flag that release
// builds (and the docs) use, and checks that it reaches Version; without
// it, and without VCS stamps, the version is "(devel)".
func TestLinkTimeVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	for _, tc := range []struct {
		name    string
		ldflags string
		want    string
	}{
		{name: "linked", ldflags: "-X github.com/pipecast/pipecast/internal/buildinfo.version=v9.8.7", want: "v9.8.7"},
		{name: "not linked", want: "(devel)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "printversion")
			build := exec.Command(gobin, "build", "-buildvcs=false", "-ldflags", tc.ldflags, "-o", bin, "./testdata/printversion")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			out, err := exec.Command(bin).Output()
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(out)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
