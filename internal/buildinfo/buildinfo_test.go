package buildinfo

import (
	"runtime/debug"
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
		if got := versionFrom(tc.linked, info(tc.bi)); got != tc.want {
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
		if got := revisionFrom(info(tc.bi)); got != tc.want {
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
