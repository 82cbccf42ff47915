package profiler

import "testing"

func TestParseCPUModel(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{name: "x86", in: "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\nmodel name\t: other\n", want: "Intel(R) Xeon(R) CPU @ 2.20GHz"},
		{name: "no model", in: "processor\t: 0\nBogoMIPS\t: 50.00\n", want: ""},
		{name: "empty", in: "", want: ""},
	} {
		if got := parseCPUModel([]byte(tc.in)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
