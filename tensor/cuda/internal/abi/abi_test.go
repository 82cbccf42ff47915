package abi

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	ks, err := Parse([]byte(`// a comment with __global__ void pc_no(int x);
__global__ void pc_relu_fwd(const float* x, float *y,
    long long n); // trailing
__global__ void pc_k(unsigned long long s, const int* l, double* d, int i, float f, double th);`))
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 2 || ks[0].Name != "pc_relu_fwd" || ks[0].GoName() != "ReluFwd" || len(ks[0].Params) != 3 {
		t.Fatalf("parsed %+v", ks)
	}
	if p := ks[0].Params[1]; p != (Param{"y", FloatPtr}) {
		t.Errorf("second parameter %+v, want y float*", p)
	}
	if p := ks[1].Params; p[0].Type != ULongLong || p[1].Type != ConstIntPtr || p[2].Type != DoublePtr || p[5] != (Param{"th", Double}) {
		t.Errorf("types %+v", p)
	}
	for _, bad := range []string{
		"__global__ void pc_a(size_t n);",
		"__global__ void other(int n);",
		"__global__ void pc_a(int n);\n__global__ void pc_a(int n);",
		"no kernels",
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	c := string(CSource(ks))
	if !strings.Contains(c, "pc_relu_fwd(*(const float**)args[0], *(float**)args[1], *(long long*)args[2]);") ||
		!strings.Contains(c, "*(float*)args[4], *(double*)args[5]);") {
		t.Errorf("dispatch:\n%s", c)
	}
}
