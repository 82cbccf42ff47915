package tensortest

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

func testMaxPool2D(t *testing.T, dev tensor.Device) { t.Skip("not written yet") }

func testAvgPool2D(t *testing.T, dev tensor.Device) { t.Skip("not written yet") }

func testAdaptiveAvgPool2D(t *testing.T, dev tensor.Device) { t.Skip("not written yet") }
