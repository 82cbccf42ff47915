package models

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pipecast/pipecast/tensor"
)

// The initialisers below follow torch.nn.init (torch/nn/init.py): they
// draw on the host in float64, round to float32 and upload into the
// parameter tensor, so that a model's initial weights depend only on the
// generator's seed, never on the backend. A nil generator leaves the
// tensor as it is: shape-only builds (on a meta device, for cost analysis)
// skip the draws.

// FanMode selects which fan a Kaiming initialiser scales by, as torch's
// mode argument does.
type FanMode int

const (
	// FanIn preserves the variance of activations in the forward pass
	// (torch's mode="fan_in", the default).
	FanIn FanMode = iota
	// FanOut preserves the variance of gradients in the backward pass
	// (torch's mode="fan_out", which torchvision's ResNet and VGG use).
	FanOut
)

// String returns torch's name of the mode.
func (m FanMode) String() string {
	switch m {
	case FanIn:
		return "fan_in"
	case FanOut:
		return "fan_out"
	}
	return fmt.Sprintf("FanMode(%d)", int(m))
}

// Fans returns a weight's fan_in and fan_out as torch's
// _calculate_fan_in_and_fan_out does: for a shape [O, C, k...] the
// receptive field is the product of the k's, fan_in = C·receptive and
// fan_out = O·receptive. It panics for fewer than two dimensions, as
// torch raises.
func Fans(s tensor.Shape) (fanIn, fanOut int) {
	if len(s) < 2 {
		panic(fmt.Sprintf("models: fan in and fan out of a tensor with fewer than 2 dimensions (%v)", s))
	}
	receptive := tensor.Shape(s[2:]).Numel()
	return s[1] * receptive, s[0] * receptive
}

// Fan returns the fan that mode selects for shape s.
func Fan(s tensor.Shape, mode FanMode) int {
	in, out := Fans(s)
	if mode == FanOut {
		return out
	}
	return in
}

// LeakyReLUGain returns torch's calculate_gain("leaky_relu", a),
// √(2/(1+a²)); a = 0 gives ReLU's gain √2.
func LeakyReLUGain(a float64) float64 { return math.Sqrt(2 / (1 + a*a)) }

// Uniform fills t with values drawn from U(lo, hi), as torch.nn.init.uniform_.
func Uniform(dev tensor.Device, t *tensor.Tensor, lo, hi float64, rng *rand.Rand) {
	if rng == nil {
		return
	}
	v := make([]float32, t.Len())
	for i := range v {
		v[i] = float32(lo + (hi-lo)*rng.Float64())
	}
	dev.Upload(t, v)
}

// Normal fills t with values drawn from N(mean, std²), as
// torch.nn.init.normal_.
func Normal(dev tensor.Device, t *tensor.Tensor, mean, std float64, rng *rand.Rand) {
	if rng == nil {
		return
	}
	v := make([]float32, t.Len())
	for i := range v {
		v[i] = float32(mean + std*rng.NormFloat64())
	}
	dev.Upload(t, v)
}

// TruncatedNormal fills t with values drawn from N(mean, std²)
// conditioned on [a, b], as torch.nn.init.trunc_normal_: a and b are
// absolute bounds, not multiples of std (torchvision's Inception-v3 calls
// it with std 0.1, a = −2, b = 2). Like torch it inverts the normal CDF
// on a uniform draw between the CDF's values at the bounds, so narrow
// bounds cost no rejections, and clamps to [a, b] against round-off.
func TruncatedNormal(dev tensor.Device, t *tensor.Tensor, mean, std, a, b float64, rng *rand.Rand) {
	if !(std > 0) || !(a < b) {
		panic(fmt.Sprintf("models: truncated normal with std %v on [%v, %v]", std, a, b))
	}
	// With u uniform on [2Φ(α)−1, 2Φ(β)−1], √2·erfinv(u) is a standard
	// normal conditioned on [α, β]: 2Φ(z)−1 = erf(z/√2).
	if rng == nil {
		return
	}
	lo := math.Erf((a - mean) / std / math.Sqrt2)
	hi := math.Erf((b - mean) / std / math.Sqrt2)
	v := make([]float32, t.Len())
	for i := range v {
		z := math.Sqrt2 * math.Erfinv(lo+(hi-lo)*rng.Float64())
		v[i] = float32(min(max(mean+std*z, a), b))
	}
	dev.Upload(t, v)
}

// Constant fills t with v, as torch.nn.init.constant_.
func Constant(dev tensor.Device, t *tensor.Tensor, v float32) {
	dev.Fill(t, v)
}

// KaimingUniform fills t from U(−bound, bound) with bound =
// gain·√(3/fan) and gain = √(2/(1+a²)), as torch.nn.init.kaiming_uniform_
// with nonlinearity "leaky_relu" (He et al., "Delving Deep into
// Rectifiers", ICCV 2015). torch's layers initialise their weights with
// a = √5, which makes the bound 1/√fan_in.
func KaimingUniform(dev tensor.Device, t *tensor.Tensor, a float64, mode FanMode, rng *rand.Rand) {
	bound := LeakyReLUGain(a) * math.Sqrt(3/float64(Fan(t.Shape(), mode)))
	Uniform(dev, t, -bound, bound, rng)
}

// KaimingNormal fills t from N(0, std²) with std = gain/√fan and gain =
// √(2/(1+a²)), as torch.nn.init.kaiming_normal_ with nonlinearity
// "leaky_relu"; a = 0 is nonlinearity "relu", std = √2/√fan, which
// torchvision's ResNet and VGG use with FanOut.
func KaimingNormal(dev tensor.Device, t *tensor.Tensor, a float64, mode FanMode, rng *rand.Rand) {
	std := LeakyReLUGain(a) / math.Sqrt(float64(Fan(t.Shape(), mode)))
	Normal(dev, t, 0, std, rng)
}

// torchDefaultInit initialises a weight and an optional bias as torch's
// nn.Conv2d and nn.Linear do in reset_parameters: kaiming_uniform_ with
// a = √5 for the weight, and U(±1/√fan_in) for the bias.
func torchDefaultInit(dev tensor.Device, weight, bias *tensor.Tensor, rng *rand.Rand) {
	KaimingUniform(dev, weight, math.Sqrt(5), FanIn, rng)
	if bias != nil {
		bound := 1 / math.Sqrt(float64(Fan(weight.Shape(), FanIn)))
		Uniform(dev, bias, -bound, bound, rng)
	}
}
